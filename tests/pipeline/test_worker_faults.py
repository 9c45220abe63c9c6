"""A worker's own faults lose no student: one that cannot grade (its disk full) has its students
graded by the other workers, and a killed grader's temporary folders are removed by the next
worker to start, never a live process's (in process: a Dask cluster of threads, no kernels)."""

import errno
import os
import subprocess
import sys

from attncourse import pipeline
from attncourse.handoffs import AutogradeResult, CourseBundle, TaskResult
from attncourse.runrecord import RunRecord
from attncourse.sandbox.tempdirs import FORKSERVER, KERNEL, owned_tempdir, remove_stale
from attncourse.worker.task import WORKER_ERRNOS, WorkerFault

STUDENTS = [f"s{k}" for k in range(8)]


def _graded_with(
    monkeypatch, tmp_path, fault: OSError, students=STUDENTS, seconds: float = 0.0, faulty=(0,)
) -> tuple[dict, list]:
    """Every student through ``pipeline._graded`` on two workers, where worker 0 meets
    ``fault`` as the real task does (a WorkerFault for the worker's own errors) and worker 1
    takes ``seconds`` a student; student -> result, and the students worker 0 was sent."""
    import time

    from distributed import Client, LocalCluster, get_worker

    sent_to_0 = tmp_path / "sent_to_0"  # a file: the task is a pickled copy of this function
    sent_to_0.touch()

    def grade_on_worker(bundle, job):
        worker = get_worker()
        if worker.name in faulty:
            with open(sent_to_0, "a") as f:
                f.write(job.student + "\n")
            if fault.errno in WORKER_ERRNOS:
                raise WorkerFault(worker.address, str(fault)) from fault
            raise fault
        time.sleep(seconds)
        graded = AutogradeResult(None, 0.0, RunRecord(), None, None)
        return TaskResult(graded, {}, "", str(worker.name), worker.address, None, 1, 0.0)

    monkeypatch.setattr(pipeline, "grade_on_worker", grade_on_worker)
    monkeypatch.setattr(pipeline, "read_tree", lambda folder: {})
    run = pipeline._Run(
        course=tmp_path,
        assignment="a",
        refused=dict.fromkeys(students, []),
        nbgrader_args=(),
        threads=1,
        retries=0,  # each failure comes back: the move is the client's
        where="here",
    )
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        bundle = CourseBundle(run="r1", files={}, gradebook=b"")
        graded = pipeline._graded(client, bundle, list(students), run, (), {}, None)
        return dict(graded), sent_to_0.read_text().split()


def test_a_worker_out_of_disk_has_its_students_graded_by_the_other(monkeypatch, tmp_path):
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    results, sent_to_0 = _graded_with(monkeypatch, tmp_path, full)
    assert sent_to_0, "worker 0 was sent no student"
    assert sorted(results) == STUDENTS
    assert all(isinstance(r, TaskResult) for r in results.values()), results
    assert {r.worker for r in results.values()} == {"1"}


def test_a_faulty_worker_left_idle_takes_students_often_and_loses_none(monkeypatch, tmp_path):
    # The healthy worker is slow, so the faulty one is idle and Dask's work stealing hands it
    # the students queued on the busy one. A student it refused once is held to the fit workers
    # from then on: it never meets the faulty worker twice (CI's soak lost a student refused
    # four times by one full disk, stop 37).
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    students = [f"s{k:02d}" for k in range(10)]
    results, sent_to_0 = _graded_with(monkeypatch, tmp_path, full, students, seconds=1.0)
    assert sorted(results) == students
    errors = {s: r for s, r in results.items() if isinstance(r, str)}
    assert not errors, errors
    assert len(sent_to_0) == len(set(sent_to_0)), sorted(sent_to_0)
    assert {r.worker for r in results.values()} == {"1"}


def test_when_every_worker_refuses_each_student_ends_with_the_reason_not_a_hang(
    monkeypatch, tmp_path
):
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    results, _ = _graded_with(monkeypatch, tmp_path, full, faulty=(0, 1))
    assert sorted(results) == STUDENTS
    assert all(isinstance(r, str) and "no other is fit" in r for r in results.values()), results


def test_a_failure_not_of_the_worker_is_still_that_students_error(monkeypatch, tmp_path):
    denied = OSError(errno.EACCES, os.strerror(errno.EACCES))
    results, sent_to_0 = _graded_with(monkeypatch, tmp_path, denied)
    assert sorted(results) == STUDENTS
    errors = {student: r for student, r in results.items() if isinstance(r, str)}
    assert sorted(errors) == sorted(set(sent_to_0))
    assert all("Permission denied" in r for r in errors.values())
    assert {r.worker for s, r in results.items() if s not in errors} == {"1"}


def test_a_killed_graders_folders_are_removed_and_a_live_ones_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    code = (
        "from attncourse.sandbox.tempdirs import *; "
        "print(owned_tempdir(KERNEL)); print(owned_tempdir(FORKSERVER))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    dead = out.stdout.split()  # their process has exited
    live = [owned_tempdir(KERNEL), owned_tempdir(FORKSERVER)]  # this process's
    other = tmp_path / "attncourse-kernel-norecord"  # no owner recorded: left alone
    other.mkdir()
    assert sorted(map(str, remove_stale())) == sorted(dead)
    assert all(p.is_dir() for p in [*live, other])
    assert not any(os.path.exists(p) for p in dead)


def test_the_fork_server_is_launched_ahead_only_from_a_config_that_reads(tmp_path, monkeypatch):
    """A grading process launches its course's fork server before autograde starts
    (``Grader._start_fork_server``). A course config that cannot be read launches nothing and
    raises nothing there (autograde then reports it as that student's error); the control,
    the course's own config, launches one server for its preloaded modules. (A grading process
    given no server by the process that started it: the test suite hands its own down.)"""
    from attncourse.course import ROOT, course_config
    from attncourse.sandbox.forkclient import FORK_SERVER_ENV

    monkeypatch.delenv(FORK_SERVER_ENV, raising=False)
    from attncourse.sandbox.forkstart import _stop
    from attncourse.sandbox.kernelmanager import SandboxKernelManager
    from attncourse.worker.grading import Grader

    broken, good = tmp_path / "broken", tmp_path / "good"
    broken.mkdir()
    good.mkdir()
    (broken / "nbgrader_config.py").write_text("c = get_config()\nthis is not python\n")
    (good / "nbgrader_config.py").write_text((ROOT / "nbgrader_config.py").read_text())
    grader = Grader()
    grader._start_fork_server(str(broken))
    assert not grader.fork_servers._starting
    grader._start_fork_server(str(good))
    preload = tuple(SandboxKernelManager(config=course_config(good)).preload)
    assert list(grader.fork_servers._starting) == [preload]
    for proc, path in grader.fork_servers._starting.values():
        _stop(proc, os.path.dirname(path))
