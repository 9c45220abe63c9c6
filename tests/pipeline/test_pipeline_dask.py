"""``attncourse grade --scheduler`` on a real Dask cluster on this machine (a scheduler and two
workers, started as processes): both workers grade, the scores are plain nbgrader's, and a
worker killed mid-student leaves every student graded exactly once."""

import json
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest
from toy_course import (
    ASSIGNMENT,
    SCALE_SOLUTION,
    class_submissions,
    graded_course,
    make_course,
    submission,
    submit,
)

from attncourse.gradebook import cell_scores
from attncourse.pipeline import grade
from devtools.submissions import strip_markers

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dask")]

ATTNCOURSE = str(Path(sys.executable).with_name("attncourse"))
SLEEP_S = 10


def _class(path):
    course = make_course(path)
    students = class_submissions(course)
    for student, nb in students.items():
        submit(course, student, nb)
    return course, students


def test_grading_on_a_running_cluster_uses_both_workers_and_matches_plain_nbgrader(
    tmp_path, tmp_path_factory, dask_cluster
):
    course, students = _class(tmp_path / "course")

    # The course is where you stand: no --course, the command runs in it.
    done = subprocess.run(
        [ATTNCOURSE, "grade", ASSIGNMENT, "--scheduler", dask_cluster.address],
        cwd=course,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert f"grading on Dask scheduler {dask_cluster.address}, 2 workers" in done.stdout
    plain = graded_course(tmp_path_factory.getbasetemp())
    assert cell_scores(course, ASSIGNMENT) == cell_scores(plain, ASSIGNMENT)
    summary = json.loads(
        (course / "autograded" / ".attncourse" / ASSIGNMENT / "summary.json").read_text()
    )
    assert summary["scheduler"] == dask_cluster.address
    workers = {r["student"]: r["worker"] for r in summary["students"]}
    assert set(workers) == set(students)
    assert set(workers.values()) == {"w1", "w2"}, workers


def _kill_when_running(cluster, prefix, killed):
    """Kill the worker that runs the task whose key starts with ``prefix``, a few seconds in."""
    from distributed import Client

    with Client(cluster.address, timeout=60) as client:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not killed:
            # A lambda travels by value: the workers cannot import this test module.
            running = client.run(
                lambda dask_worker: [str(t.key) for t in dask_worker.state.executing],
                on_error="ignore",
            )
            for address, keys in running.items():
                if any(key.startswith(prefix) for key in keys):
                    name = client.scheduler_info()["workers"][address]["name"]
                    time.sleep(3)  # well into that student's grading
                    cluster.kill(name)
                    killed.append(name)
                    return
            time.sleep(0.5)


def test_a_worker_killed_mid_student_has_every_student_graded_exactly_once(
    tmp_path, tmp_path_factory, dask_cluster
):
    course, students = _class(tmp_path / "course")
    slow = submission(course, scale_answer=strip_markers(SCALE_SOLUTION) + "\n" + "#" * 4000)
    # A cell of the student's own sleeps (its import is not in an answer: no part loses by it).
    slow.cells.insert(1, nbformat.v4.new_code_cell(f"import time\n\ntime.sleep({SLEEP_S})\n"))
    submit(course, "slow", slow)  # the largest: sent first
    killed = []
    killer = threading.Thread(target=_kill_when_running, args=(dask_cluster, "grade-slow-", killed))
    killer.start()

    status, results = grade(ASSIGNMENT, course=course, scheduler=dask_cluster.address)

    killer.join(timeout=60)
    assert killed, "the slow student never ran"
    assert status == 0
    assert set(results) == {*students, "slow"}
    (survivor,) = {"w1", "w2"} - set(killed)
    assert results["slow"].worker == survivor
    assert all(r.status in ("ok", "repaired") for r in results.values()), results
    plain = cell_scores(graded_course(tmp_path_factory.getbasetemp()), ASSIGNMENT)
    scores = cell_scores(course, ASSIGNMENT)
    assert {s: scores[s] for s in students} == plain
    # The same answers as perfect, graded once.
    assert {g: v[:2] for g, v in scores["slow"].items()} == {
        g: v[:2] for g, v in plain["perfect"].items()
    }
    db = sqlite3.connect(course / "gradebook.db")
    assert db.execute(
        "SELECT COUNT(*), COUNT(DISTINCT student_id) FROM submitted_assignment"
    ).fetchone() == (len(students) + 1, len(students) + 1)
    duplicates = db.execute(
        "SELECT notebook_id, cell_id FROM grade GROUP BY notebook_id, cell_id HAVING COUNT(*) > 1"
    ).fetchall()
    assert duplicates == []


def test_on_a_gpu_grader_each_local_worker_is_pinned_to_its_gpu(tmp_path, monkeypatch):
    """The local cluster of a GPU grader (one visible device, here named only: the kernels
    compute on the CPU): one worker pinned to it, advertising GPU=1, and tasks ask for it."""
    course, _ = _class(tmp_path / "course")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")

    status, results = grade(ASSIGNMENT, course=course, students=["perfect", "wrong"])

    assert status == 0
    assert {(r.worker, r.gpu) for r in results.values()} == {("gpu0-0", "0")}
    assert results["perfect"].score == 3.0 and results["wrong"].score == 1.0
