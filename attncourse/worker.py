"""What a grading worker does for one student: autograde them in a scratch course of its own.

``attncourse grade`` (:mod:`attncourse.pipeline`, the client) sends each Dask task the run's
course bundle (the course's config and modules, ``source/`` and ``release/`` of the
assignment, and a SQLite gradebook holding only the assignment's definition) and one
student's submitted files. The task, :func:`grade_on_worker`, hands them to a *grading
process* of this worker: a Python process of its own that writes them into its scratch
course, runs nbgrader's ``AutogradeApp`` for that student (every preprocessor, the sandbox
and the judge, as plain ``nbgrader autograde`` does) into a fresh copy of that gradebook,
and reads back what autograde wrote there. The task returns the scores and comments, the
autograded folder's files, the log, the notebook's record and the timings; only the
client writes the course's gradebook and ``autograded/``, so nothing is locked across
machines and a worker that dies mid-student leaves nothing behind.

A grading process serves one run of one worker, one student at a time, for as long as the
run goes on: its fork server imports torch once, and it may start the next student's
kernel while this one runs (``ResilientExecute.prewarm``). It exits when the client ends
the run (:func:`stop_grading`), when its worker dies, or after ten idle minutes.
"""

import contextlib
import gc
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path, PurePosixPath

from attncourse.constants import (
    AUTOGRADED,
    GRADEBOOK,
    METADATA_KEY,
    SUBMITTED,
    threads_per_kernel,
)
from attncourse.course import notebook_path, venv_path

IDLE_S = 600  # a grading process no run has used for this long exits
LOG_BYTES = 1_000_000  # the end of a student's log that travels back to the client


def read_tree(folder):
    """``{relative path: (bytes, mode)}`` of the regular files under ``folder``, no link followed."""
    files = {}
    folder = Path(folder)
    for parent, dirnames, filenames in os.walk(folder):
        for name in [*filenames, *dirnames]:
            path = Path(parent) / name
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                rel = path.relative_to(folder).as_posix()
                files[rel] = (path.read_bytes(), stat.S_IMODE(info.st_mode))
    return files


def write_tree(folder, files):
    """Replace ``folder`` with ``files`` (as :func:`read_tree` gives them)."""
    folder = Path(folder)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for rel, (data, mode) in files.items():
        parts = PurePosixPath(rel).parts
        if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
            raise ValueError(f"refusing to write {rel!r} outside {folder}")
        path = folder.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.chmod(path, mode)  # as nbgrader left it (autograded files are read-only)


# ------------------------------------------------------------------ in the grading process

_graded = 0  # students this grading process has graded


def grade_student(course, assignment, student, nbgrader_args, log_dir, refused=()):
    """Autograde one student with nbgrader's AutogradeApp in this process; return a result dict.

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
    result = {"student": student, "error": None}
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
            result["error"] = f"{type(e).__name__}: {e}".strip() + f" (see {student}.log)"
    result["seconds"] = round(time.monotonic() - started, 2)
    result["record"] = _read_record(notebook_path(course, AUTOGRADED, assignment, student))
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
        return json.loads(Path(path).read_text()).get("metadata", {}).get(METADATA_KEY, {})
    except (OSError, ValueError):
        return {}


def _grade_request(course, assignment, student, nbgrader_args, log_dir, refused):
    """One student: autograde, then what autograde wrote into the scratch gradebook."""
    from nbgrader.api import MissingEntry

    from attncourse.gradebook import autograde_results

    os.chdir(course)
    result = grade_student(course, assignment, student, nbgrader_args, log_dir, refused)
    started = time.monotonic()
    try:
        url = f"sqlite:///{Path(course) / 'gradebook.db'}"
        result["gradebook"] = autograde_results(url, assignment, student)
    except MissingEntry:
        result["gradebook"] = None  # autograde failed before it recorded the submission
    result["read_gradebook_s"] = round(time.monotonic() - started, 3)
    return result


def _exit_with(parent):
    """Exit as soon as ``parent`` (the worker) is gone; the kernels die with this process."""
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(1)


def serve(read_fd, write_fd, parent):
    """The grading process: grade each request from the worker, until it goes or falls idle."""
    threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()
    requests = Connection(read_fd, writable=False)
    replies = Connection(write_fd, readable=False)
    while requests.poll(IDLE_S):
        try:
            request = requests.recv()
        except EOFError:
            break
        replies.send(_grade_request(*request))


# ------------------------------------------------------------------ in the Dask worker


class GradingProcess:
    """A grading process of this worker for one run, with its scratch course at ``course``."""

    def __init__(self, bundle, threads, course):
        self.threads = threads
        self.course = Path(course)
        shutil.rmtree(self.course, ignore_errors=True)
        write_tree(self.course, bundle["files"])
        self.gradebook = bundle["gradebook"]
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        env = {**os.environ, "PATH": venv_path()}
        # Kernels inherit this: parallel kernels share the cores instead of oversubscribing them.
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env[name] = str(threads)
        code = (
            f"from attncourse.worker import serve; serve({to_child}, {from_child}, {os.getpid()})"
        )
        self.process = subprocess.Popen(
            [sys.executable, "-c", code],
            pass_fds=(to_child, from_child),
            env=env,
            cwd=self.course,
            stdin=subprocess.DEVNULL,
        )
        os.close(to_child)
        os.close(from_child)
        self.requests = Connection(from_parent, readable=False)
        self.replies = Connection(to_parent, writable=False)

    def grade(self, job):
        """Autograde ``job``'s student in the scratch course; return the result dict."""
        student, assignment = job["student"], job["assignment"]
        for folder in (SUBMITTED, AUTOGRADED, "logs"):
            shutil.rmtree(self.course / folder, ignore_errors=True)
        write_tree(self.course / SUBMITTED / student / assignment, job["files"])
        (self.course / "logs").mkdir()
        (self.course / GRADEBOOK).write_bytes(self.gradebook)  # nothing of the last one
        args = [
            f"--CourseDirectory.root={self.course}",
            f"--CourseDirectory.db_url=sqlite:///{self.course / GRADEBOOK}",
            *job["args"],
        ]
        request = (str(self.course), assignment, student, args, str(self.course / "logs"))
        try:
            self.requests.send((*request, job["refused"]))
            result = self.replies.recv()
        except (EOFError, OSError) as e:
            code = self.process.wait()
            raise RuntimeError(f"the grading process exited ({code}) grading {student}") from e
        result["files"] = read_tree(self.course / AUTOGRADED / student / assignment)
        log = self.course / "logs" / f"{student}.log"
        result["log"] = (
            log.read_bytes()[-LOG_BYTES:].decode(errors="replace") if log.exists() else ""
        )
        return result

    def close(self):
        """End the grading process (its kernels and fork server with it) and its scratch course."""
        self.requests.close()
        self.replies.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.course, ignore_errors=True)


_idle = {}  # run -> grading processes of this worker waiting for a student of that run
_idle_lock = threading.Lock()
_stopped = set()  # runs the client has ended
_started = 0


def grade_on_worker(bundle, job):
    """The Dask task: autograde one student (``job``) of the run ``bundle`` belongs to.

    ``job``: ``assignment``, ``student``, ``files`` (the submitted folder, as
    :func:`read_tree` gives it), ``refused``, ``args`` (nbgrader arguments), ``threads``
    (torch threads per kernel, or None: this host's cores over its grading slots) and
    ``slots`` (host -> grading slots, for that default).
    """
    from distributed import get_worker
    from distributed.comm import get_address_host

    global _started
    started = time.monotonic()
    worker = get_worker()
    host = get_address_host(worker.address)
    threads = job["threads"] or threads_per_kernel(job["slots"].get(host, 1))
    run = bundle["run"]
    with _idle_lock:
        waiting = _idle.setdefault(run, [])
        grader = next((g for g in waiting if g.threads == threads), None)
        if grader is not None:
            waiting.remove(grader)
        else:
            _started += 1
            course = Path(worker.local_directory) / f"attncourse-{run}-{_started}"
    if grader is None:
        grader = GradingProcess(bundle, threads, course)
    try:
        result = grader.grade(job)
    except BaseException:
        grader.close()
        raise
    with _idle_lock:
        done = run in _stopped
        if not done:
            _idle.setdefault(run, []).append(grader)
    if done:
        grader.close()
    result["worker"] = str(worker.name)
    result["worker_address"] = worker.address
    result["gpu"] = os.environ.get("CUDA_VISIBLE_DEVICES")  # pinned on a GPU grader
    result["threads_per_kernel"] = threads
    result["task_s"] = round(time.monotonic() - started, 2)
    return result


def stop_grading(run):
    """End this worker's grading processes of ``run`` (the client calls it on every worker)."""
    with _idle_lock:
        _stopped.add(run)
        graders = _idle.pop(run, [])
    for grader in graders:
        grader.close()
    return len(graders)
