"""The pipeline's gradebook lock: concurrent writers lose and duplicate nothing.

nbgrader's gradebook opens a database connection for each short burst of
reads and writes; the pipeline's workers hold one exclusive file lock while a
connection is checked out, so their bursts never overlap.
"""

import multiprocessing
import os
import sqlite3
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor

import pytest
from nbgrader.api import Gradebook

from attncourse.pipeline import GradebookLock, lock_path, protections_of, status_of

WRITERS = 4
STUDENTS_EACH = 10


def _write_students(url, lock, prefix):
    """Add students one session at a time, as nbgrader does per submission."""
    GradebookLock(lock).install()
    for i in range(STUDENTS_EACH):
        with Gradebook(url) as gb:
            gb.update_or_create_student(f"{prefix}-{i}", first_name=prefix)
    return prefix


@pytest.mark.slow
def test_parallel_writers_lose_and_duplicate_nothing(tmp_path):
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as gb:
        gb.add_assignment("a1")
    lock = str(lock_path(url))
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(WRITERS, mp_context=context) as pool:
        done = list(pool.map(_write_students, [url] * WRITERS, [lock] * WRITERS, "abcd"))
    assert sorted(done) == list("abcd")
    db = sqlite3.connect(tmp_path / "gradebook.db")
    assert db.execute("SELECT COUNT(*), COUNT(DISTINCT id) FROM student").fetchone() == (
        WRITERS * STUDENTS_EACH,
        WRITERS * STUDENTS_EACH,
    )


def _try_lock(path):
    """Exit status 0 when another process could take the lock right now, 1 otherwise."""
    code = (
        "import fcntl, os, sys\n"
        f"fd = os.open({str(path)!r}, os.O_RDWR)\n"
        "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "except BlockingIOError:\n    sys.exit(1)\n"
    )
    return subprocess.run([sys.executable, "-c", code]).returncode


def test_lock_is_held_exactly_while_a_session_is_open(tmp_path):
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    path = tmp_path / "gradebook.lock"
    lock = GradebookLock(str(path))
    lock.install()
    try:
        with Gradebook(url) as gb:
            gb.add_assignment("a1")
            assert lock.depth == 0 and _try_lock(path) == 0  # committed: connection returned
            gb.find_assignment("a1")  # a read opens a transaction: the connection stays out
            with Gradebook(url) as inner:  # nested sessions: counted, not re-locked
                inner.find_assignment("a1")
                assert lock.depth == 2
            assert lock.depth == 1 and _try_lock(path) == 1
        assert lock.depth == 0 and _try_lock(path) == 0
    finally:
        from sqlalchemy import event
        from sqlalchemy.pool import Pool

        event.remove(Pool, "checkout", lock.acquire)
        event.remove(Pool, "checkin", lock.release)
        os.close(lock.fd)


def test_status_names_the_worst_thing_that_happened():
    assert status_of({"missing": "no a.ipynb submitted"}) == ("missing", "no a.ipynb submitted")
    assert status_of({"error": "boom", "record": {}})[0] == "error"
    assert status_of({"record": {"unreadable": "NotJSONError"}})[0] == "unreadable"
    faults = {"faults": [{"cell": "p4", "fault": "kernel died"}], "repairs": ["x"]}
    assert status_of({"record": faults}) == ("faults", "kernel died in p4")
    assert status_of({"record": {"repairs": ["restored deleted cell t"]}})[0] == "repaired"
    assert status_of({"record": {"faults": []}}) == ("ok", "")


def test_protections_are_listed_by_short_name():
    record = {
        "protections": {
            "mount_namespace": True,
            "network_namespace": True,
            "pid_namespace": False,
            "uid": 200123,
            "rlimits": {"as": 1, "cpu": 2},
        }
    }
    assert protections_of(record) == "fs,net,uid,as,cpu"
    assert protections_of({}) == "none"
