"""In the Dask worker: the task that grades one student, and the grading processes it keeps
(one per run and thread count, each serving one student at a time) until the client ends the run."""

import errno
import os
import shutil
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

from attncourse.constants import AUTOGRADED, GRADEBOOK, SUBMITTED, threads_per_kernel
from attncourse.course import venv_path
from attncourse.sandbox.tempdirs import remove_stale
from attncourse.worker.files import read_tree, write_tree

LOG_BYTES = 1_000_000  # the end of a student's log that travels back to the client
# The worker's own reasons for failing to grade anyone: its disk, its files, its memory.
WORKER_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EMFILE, errno.ENFILE}


class WorkerFault(Exception):
    """This worker cannot grade (no disk, ...): the client sends the student to another one."""

    def __init__(self, address: str, reason: str):
        super().__init__(address, reason)
        self.address, self.reason = address, reason

    def __str__(self):
        return f"worker {self.address} cannot grade: {self.reason}"


class GradingProcess:
    """A grading process of this worker for one run, with its scratch course at ``course``."""

    def __init__(self, bundle, threads, course):
        self.threads = threads
        self.course = Path(course)
        shutil.rmtree(self.course, ignore_errors=True)
        try:
            write_tree(self.course, bundle["files"])
        except OSError:
            shutil.rmtree(self.course, ignore_errors=True)  # a full disk: nothing half-written
            raise
        self.gradebook = bundle["gradebook"]
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        env = {**os.environ, "PATH": venv_path()}
        # Kernels inherit this: parallel kernels share the cores instead of oversubscribing them.
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env[name] = str(threads)
        code = f"from attncourse.worker.grading import serve; serve({to_child}, {from_child}, {os.getpid()})"
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
        """Autograde ``job``'s student in the scratch course; return the result."""
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
        result.files = read_tree(self.course / AUTOGRADED / student / assignment)
        log = self.course / "logs" / f"{student}.log"
        result.log = log.read_bytes()[-LOG_BYTES:].decode(errors="replace") if log.exists() else ""
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
_swept = False  # this worker's first task removed what killed graders left in its TMPDIR


def grade_on_worker(bundle, job):
    """The Dask task: autograde one student (``job``) of the run ``bundle`` belongs to.

    ``job``: ``assignment``, ``student``, ``files`` (the submitted folder, as
    :func:`read_tree` gives it), ``refused``, ``args`` (nbgrader arguments), ``threads``
    (torch threads per kernel, or None: this host's cores over its grading slots) and
    ``slots`` (host -> grading slots, for that default).
    """
    from distributed import get_worker
    from distributed.comm import get_address_host

    global _started, _swept
    started = time.monotonic()
    worker = get_worker()
    if not _swept:
        _swept = True
        remove_stale()  # a killed worker's fork-server and kernel folders; never a live one's
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
    try:
        if grader is None:
            grader = GradingProcess(bundle, threads, course)
        try:
            result = grader.grade(job)
        except BaseException:
            grader.close()
            raise
    except OSError as e:
        if e.errno not in WORKER_ERRNOS:
            raise
        raise WorkerFault(worker.address, f"{type(e).__name__}: {e}") from e
    with _idle_lock:
        done = run in _stopped
        if not done:
            _idle.setdefault(run, []).append(grader)
    if done:
        grader.close()
    result.worker = str(worker.name)
    result.worker_address = worker.address
    result.gpu = os.environ.get("CUDA_VISIBLE_DEVICES")  # pinned on a GPU grader
    result.threads_per_kernel = threads
    result.task_s = round(time.monotonic() - started, 2)
    return result


def stop_grading(run):
    """End this worker's grading processes of ``run`` (the client calls it on every worker)."""
    with _idle_lock:
        _stopped.add(run)
        graders = _idle.pop(run, [])
    for grader in graders:
        grader.close()
    return len(graders)
