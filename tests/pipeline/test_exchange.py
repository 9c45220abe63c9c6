"""The exchange round trip on one machine: release, fetch, edit, submit, collect, grade, feedback.

The instructor works in a scratch copy of the course (its exchange is the
config's default, ``<course>/exchange``); the student works in a home
directory of their own with their own ``nbgrader_config.py`` and Jupyter
folders, and runs the stock student commands exactly as on a hub.

On a hub students write their inbound folder themselves: collecting copies its
regular files and folders only, refusing (and never following) symlinks and FIFOs.
"""

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from attncourse import exchange
from attncourse.cells import grade_id, is_answer
from attncourse.course import ROOT, nbgrader, notebook_path, scratch_course, venv_path
from attncourse.gradebook import cell_scores
from devtools.generated import generate
from devtools.submissions import fill, solution_answers

ASSIGNMENT = "attention_variants"
STUDENT = "alice"

pytestmark = [pytest.mark.xdist_group("exchange")]


def student_nbgrader(home, *args):
    """Run nbgrader as the student: in their home, with their config and Jupyter folders only."""
    env = {
        "PATH": venv_path(),
        "HOME": str(home),
        "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
        "JUPYTER_DATA_DIR": str(home / ".local" / "share" / "jupyter"),
        "JUPYTERHUB_USER": STUDENT,
        "PYTHONWARNINGS": "ignore",
    }
    cmd = [str(Path(sys.executable).with_name("nbgrader")), *args, f"--student={STUDENT}"]
    if args[0] == "fetch_assignment":
        cmd.pop()  # fetching needs no student id
    result = subprocess.run(cmd, cwd=home, env=env, capture_output=True, text=True)
    assert result.returncode == 0, f"student's `nbgrader {args[0]}` failed:\n{result.stderr}"
    return result


def first_written_answer(source_nb):
    """grade_id of the first answer graded by hand (a markdown answer cell with points)."""
    for cell in source_nb.cells:
        if is_answer(cell) and cell.cell_type == "markdown" and cell.metadata.nbgrader.get("grade"):
            return grade_id(cell)
    raise AssertionError(f"source/{ASSIGNMENT} has no written answer graded by hand")


def first_autograded_part(source_nb):
    """(answer grade_id, test grade_id, points) of the first code answer followed by its test."""
    cells = source_nb.cells
    for index, cell in enumerate(cells):
        if is_answer(cell) and cell.cell_type == "code":
            test = cells[index + 1]
            meta = test.metadata.get("nbgrader", {})
            if meta.get("grade") and not meta.get("solution"):
                return grade_id(cell), grade_id(test), meta["points"]
    raise AssertionError(f"source/{ASSIGNMENT} has no code answer followed by its test cell")


@pytest.mark.slow
def test_release_fetch_submit_collect_grade_and_return_feedback(tmp_path):
    if not notebook_path(ROOT, "source", ASSIGNMENT).exists():
        pytest.fail(f"source/{ASSIGNMENT} is missing")
    course = scratch_course(tmp_path / "course")
    outbox = course / "exchange" / "attention"
    home = tmp_path / "home" / STUDENT
    home.mkdir(parents=True)
    (home / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa: F821\n"
        'c.CourseDirectory.course_id = "attention"\n'
        f"c.Exchange.root = {str(course / 'exchange')!r}\n"
    )

    # Instructor: build the release and publish it.
    generate(course, [ASSIGNMENT])
    exchange.publish(ASSIGNMENT, course)
    release = notebook_path(course, "release", ASSIGNMENT)
    published = outbox / "outbound" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert published.read_bytes() == release.read_bytes()
    assert (course / "exchange").stat().st_mode & 0o777 == 0o777, "students could not submit"

    # Student: fetch, answer one part with the instructor's answer, submit.
    student_nbgrader(home, "fetch_assignment", ASSIGNMENT)
    fetched = home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert fetched.read_bytes() == release.read_bytes()
    source = nbformat.read(notebook_path(course, "source", ASSIGNMENT), as_version=4)
    answer_id, test_id, points = first_autograded_part(source)
    written_id = first_written_answer(source)
    answers = {answer_id: solution_answers(source)[answer_id], written_id: "My written answer."}
    edited = fill(nbformat.read(fetched, as_version=4), answers)
    nbformat.write(edited, fetched)
    student_nbgrader(home, "submit", ASSIGNMENT)
    inbound = list((outbox / "inbound").glob(f"{STUDENT}+{ASSIGNMENT}+*"))
    assert len(inbound) == 1
    assert (inbound[0] / f"{ASSIGNMENT}.ipynb").read_bytes() == fetched.read_bytes()

    # Instructor: collect, autograde, generate and return feedback.
    exchange.collect(ASSIGNMENT, course)
    submitted = notebook_path(course, "submitted", ASSIGNMENT, STUDENT)
    assert submitted.read_bytes() == fetched.read_bytes()
    assert (submitted.parent / "timestamp.txt").read_text() == inbound[0].name.split("+")[2]
    nbgrader("autograde", ASSIGNMENT, "--force", cwd=course, quiet=True)
    grades = cell_scores(course, ASSIGNMENT)[STUDENT]
    assert grades[test_id][:2] == (points, points), f"{test_id}: {grades[test_id]}"
    autograded = [g for g in grades.values() if not g[2]]
    assert sum(g[0] for g in autograded) < sum(g[1] for g in autograded), "one part answered"
    assert grades[written_id][2], f"{written_id}: the written answer should await manual grading"

    nbgrader("generate_feedback", ASSIGNMENT, "--force", cwd=course, quiet=True)
    feedback = course / "feedback" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.html"
    html = feedback.read_text()
    assert f"(Score: {float(points)} / " in html, "the feedback should show the total score"
    assert f"Score: {float(points)} / {float(points)}" in html, f"{test_id}'s score is missing"
    assert "BEGIN HIDDEN TESTS" not in html
    exchange.return_feedback(ASSIGNMENT, course)
    assert len(list((outbox / "feedback").glob("*.html"))) == 1

    # Student: fetch the feedback of that very submission.
    student_nbgrader(home, "fetch_feedback", ASSIGNMENT)
    fetched_feedback = list((home / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
    assert len(fetched_feedback) == 1
    assert fetched_feedback[0].parent.name == inbound[0].name.split("+")[2]
    assert fetched_feedback[0].read_bytes() == feedback.read_bytes()


def collect_as_instructor(course, *args):
    """``nbgrader collect`` in ``course`` with its config; the completed process (output kept)."""
    cmd = [str(Path(sys.executable).with_name("nbgrader")), "collect", *args]
    env = {"PATH": venv_path(), "PYTHONWARNINGS": "ignore"}
    return subprocess.run(cmd, cwd=course, env=env, capture_output=True, text=True)


def inbound_with_links(course, secret):
    """Two submissions in the exchange: alice's holds links, a FIFO and two plain files; bob's
    folder is itself a link to the instructor's source folder."""
    source = course / "source" / "toy"
    source.mkdir(parents=True)
    (source / "answers.txt").write_text(secret)
    inbound = course / "exchange" / "attention" / "inbound"
    alice = inbound / "alice+toy+2026-11-20 12:00:00.000000 UTC"
    alice.mkdir(parents=True)
    (alice / "toy.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    (alice / "data.txt").write_text("my data")
    (alice / "notes.txt").symlink_to(source / "answers.txt")
    (alice / "course").symlink_to(course / "source")
    os.mkfifo(alice / "pipe")
    (inbound / "bob+toy+2026-11-20 12:00:00.000000 UTC").symlink_to(source)
    evil = inbound / "<img src=x onerror=alert(1)>+toy+2026-11-20 12:00:00.000000 UTC"
    evil.mkdir()
    (evil / "toy.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    return alice


def test_collect_refuses_links_and_fifos_and_keeps_plain_files(tmp_path):
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text((ROOT / "nbgrader_config.py").read_text())
    secret = "the instructor's answers"
    inbound_with_links(course, secret)

    result = collect_as_instructor(course, "toy")
    assert result.returncode == 0, result.stderr
    alice = course / "submitted" / "alice" / "toy"
    assert sorted(p.name for p in alice.iterdir()) == ["data.txt", "toy.ipynb"]
    assert (alice / "data.txt").read_text() == "my data"  # control: plain files are collected
    assert sorted(p.name for p in (course / "submitted").iterdir()) == ["alice", "bob"]
    assert not (course / "submitted" / "bob" / "toy").exists()
    collected = [p.read_bytes() for p in (course / "submitted").rglob("*") if p.is_file()]
    assert not any(secret.encode() in data for data in collected)
    log = result.stderr
    assert "notes.txt: symlink to" in log and "course: symlink to" in log and "pipe: FIFO" in log
    assert "may hold only regular files and folders" in log
    assert "Refused the whole submission" in log and "bob+toy" in log
    assert "student id '<img src=x onerror=alert(1)>' is not a plain id" in log


def test_control_stock_collect_copies_what_a_link_points_to(tmp_path):
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text((ROOT / "nbgrader_config.py").read_text())
    secret = "the instructor's answers"
    alice = inbound_with_links(course, secret)
    (alice / "pipe").unlink()  # stock copytree stops at a FIFO
    stock = "--ExchangeFactory.collect=nbgrader.exchange.default.ExchangeCollect"
    assert collect_as_instructor(course, "toy", stock).returncode == 0
    leaked = (course / "submitted" / "alice" / "toy" / "notes.txt").read_text()
    assert leaked == secret and (course / "submitted" / "bob" / "toy" / "answers.txt").exists()
