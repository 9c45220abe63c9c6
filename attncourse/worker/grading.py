"""In a grading process: autograde one student with nbgrader's AutogradeApp, and serve the
worker's requests, one student at a time, until the worker goes or the process falls idle."""

import contextlib
import gc
import json
import os
import resource
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

from attncourse.constants import AUTOGRADED, GRADER_DATA_MB, SUBMITTED
from attncourse.course import notebook_path
from attncourse.runrecord import RunRecord
from attncourse.worker.result import StudentResult

IDLE_S = 600  # a grading process no run has used for this long exits

_graded = 0  # students this grading process has graded


def grade_student(course, assignment, student, nbgrader_args, log_dir, refused=()):
    """Autograde one student with nbgrader's AutogradeApp in this process; return the result.

    ``refused``: what the client removed from the student's folder, for the notebook's record.
    """
    from nbgrader.apps import AutogradeApp

    from attncourse.plainfiles import WHY, remember

    global _graded
    if _graded == 1:
        # After the first student the modules and caches grading needs are loaded: collect
        # what that student left, then freeze the survivors, so that the collections during
        # the next students scan only their own objects (they took a fifth to a third of a
        # worker's CPU before). Once only: what is frozen is never freed.
        gc.collect()
        gc.freeze()
    _graded += 1
    started = time.monotonic()
    result = StudentResult(student)
    folder = notebook_path(course, SUBMITTED, assignment, student).parent
    remember(folder, refused)
    log = Path(log_dir) / f"{student}.log"
    with _output_to(log):
        for entry in refused:
            print(f"Refused {folder}/{entry}: {WHY}; removed, never followed", file=sys.stderr)
        try:
            app = AutogradeApp()
            app.initialize([assignment, "--student", student, "--force", *nbgrader_args])
            app.start()
        except BaseException as e:  # noqa: BLE001 - reported per student; the class goes on
            result.error = f"{type(e).__name__}: {e}".strip() + f" (see {student}.log)"
    result.seconds = round(time.monotonic() - started, 2)
    result.record = _read_record(notebook_path(course, AUTOGRADED, assignment, student))
    return result


@contextlib.contextmanager
def _output_to(path):
    """Send this process's stdout and stderr (nbgrader's log included) to ``path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, log):
            os.close(fd)


def _read_record(path):
    try:
        return RunRecord.of(json.loads(Path(path).read_text()))
    except (OSError, ValueError):
        return RunRecord()


def _grade_request(course, assignment, student, nbgrader_args, log_dir, refused):
    """One student: autograde, then what autograde wrote into the scratch gradebook."""
    from nbgrader.api import MissingEntry

    from attncourse.gradebook import autograde_results

    os.chdir(course)
    result = grade_student(course, assignment, student, nbgrader_args, log_dir, refused)
    started = time.monotonic()
    try:
        url = f"sqlite:///{Path(course) / 'gradebook.db'}"
        result.gradebook = autograde_results(url, assignment, student)
    except MissingEntry:
        result.gradebook = None  # autograde failed before it recorded the submission
    result.read_gradebook_s = round(time.monotonic() - started, 3)
    return result


def _exit_with(parent):
    """Exit as soon as ``parent`` (the worker) is gone; the kernels die with this process."""
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(1)


def limit_memory(mb=GRADER_DATA_MB):
    """Cap this process's data (its heap and private mappings; the kernels set their own,
    lower limits): an allocation past it raises MemoryError in the check that asked."""
    limit = mb * 2**20
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(
        resource.RLIMIT_DATA, (limit, limit if hard == resource.RLIM_INFINITY else hard)
    )


def serve(read_fd, write_fd, parent):
    """The grading process: grade each request from the worker, until it goes or falls idle."""
    limit_memory()
    threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()
    requests = Connection(read_fd, writable=False)
    replies = Connection(write_fd, readable=False)
    while requests.poll(IDLE_S):
        try:
            request = requests.recv()
        except EOFError:
            break
        replies.send(_grade_request(*request))
