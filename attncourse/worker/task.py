"""In the Dask worker: the task that grades one student, and the grading processes it keeps
(one per run and thread count, each serving one student at a time, in the run's
:class:`GradingPool`) until the client ends the run."""

import errno
import os
import shutil
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, cast

from distributed import WorkerPlugin

from attncourse.constants import AUTOGRADED, GRADEBOOK, SUBMITTED, threads_per_kernel
from attncourse.course import venv_path
from attncourse.handoffs import (
    AutogradeResult,
    CourseBundle,
    FileTree,
    GradingJob,
    GradingRequest,
    TaskResult,
)
from attncourse.sandbox.tempdirs import remove_stale
from attncourse.worker.files import read_tree, write_tree

LOG_BYTES = 1_000_000  # the end of a student's log that travels back to the client
# The worker's own reasons for failing to grade anyone: its disk, its files, its memory.
WORKER_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EMFILE, errno.ENFILE}


class WorkerFault(Exception):
    """This worker cannot grade (no disk, ...): the client sends the student to another one."""

    def __init__(self, address: str, reason: str) -> None:
        super().__init__(address, reason)
        self.address, self.reason = address, reason

    def __str__(self) -> str:
        return f"worker {self.address} cannot grade: {self.reason}"


class GradingProcess:
    """A grading process of this worker for one run, with its scratch course at ``course``."""

    def __init__(self, bundle: CourseBundle, threads: int, course: Path) -> None:
        self.threads = threads
        self.course = Path(course)
        shutil.rmtree(self.course, ignore_errors=True)
        try:
            write_tree(self.course, bundle.files)
        except OSError:
            shutil.rmtree(self.course, ignore_errors=True)  # a full disk: nothing half-written
            raise
        self.gradebook = bundle.gradebook
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

    def grade(self, job: GradingJob) -> tuple[AutogradeResult, FileTree, str]:
        """Autograde ``job``'s student in the scratch course: (what autograde did, the
        autograded folder, the end of the student's log)."""
        student, assignment = job.student, job.assignment
        for folder in (SUBMITTED, AUTOGRADED, "logs"):
            shutil.rmtree(self.course / folder, ignore_errors=True)
        write_tree(self.course / SUBMITTED / student / assignment, job.files)
        (self.course / "logs").mkdir()
        (self.course / GRADEBOOK).write_bytes(self.gradebook)  # nothing of the last one
        request = GradingRequest(
            course=str(self.course),
            assignment=assignment,
            student=student,
            nbgrader_args=(
                f"--CourseDirectory.root={self.course}",
                f"--CourseDirectory.db_url=sqlite:///{self.course / GRADEBOOK}",
                *job.nbgrader_args,
            ),
            log_dir=str(self.course / "logs"),
            record=job.record,
        )
        try:
            self.requests.send(request)
            result = self.replies.recv()
        except (EOFError, OSError) as e:
            code = self.process.wait()
            raise RuntimeError(f"the grading process exited ({code}) grading {student}") from e
        files = read_tree(self.course / AUTOGRADED / student / assignment)
        log = self.course / "logs" / f"{student}.log"
        tail = log.read_bytes()[-LOG_BYTES:].decode(errors="replace") if log.exists() else ""
        return result, files, tail

    def close(self) -> None:
        """End the grading process (its kernels and fork server with it) and its scratch course."""
        self.requests.close()
        self.replies.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.course, ignore_errors=True)


class GradingPool(WorkerPlugin):
    """A run's grading processes on one Dask worker, waiting for that run's next student.

    The client registers one per run on every worker (:func:`pool_name`) and unregisters it
    when the run ends, which closes them; a task finds its worker's through ``worker.plugins``.
    """

    def __init__(self, run: str) -> None:
        self.run = run

    def setup(self, worker: Any) -> None:
        self.idle: list[GradingProcess] = []
        self.lock = threading.Lock()
        self.stopped = False
        self.started = 0
        self.folder = Path(worker.local_directory)
        remove_stale()  # a killed worker's fork-server and kernel folders; never a live one's

    def take(self, bundle: CourseBundle, threads: int) -> GradingProcess:
        """An idle grading process of ``threads`` threads per kernel, else a new one."""
        with self.lock:
            grader = next((g for g in self.idle if g.threads == threads), None)
            if grader is not None:
                self.idle.remove(grader)
                return grader
            self.started += 1
            course = self.folder / f"attncourse-{self.run}-{self.started}"
        return GradingProcess(bundle, threads, course)

    def give_back(self, grader: GradingProcess) -> None:
        """Keep ``grader`` for the run's next student (closed if the run has ended)."""
        with self.lock:
            if not self.stopped:
                self.idle.append(grader)
                return
        grader.close()

    def teardown(self, worker: Any) -> None:
        with self.lock:
            self.stopped = True
            graders, self.idle = self.idle, []
        for grader in graders:
            grader.close()


def pool_name(run: str) -> str:
    """The name of ``run``'s :class:`GradingPool` on every worker."""
    return f"attncourse-grading-{run}"


def grade_on_worker(bundle: CourseBundle, job: GradingJob) -> TaskResult:
    """The Dask task: autograde one student (``job``) of the run ``bundle`` belongs to, in a
    grading process of this worker's :class:`GradingPool` for the run."""
    from distributed import get_worker
    from distributed.comm import get_address_host

    started = time.monotonic()
    worker = get_worker()
    host = get_address_host(worker.address)
    threads = job.threads or threads_per_kernel(job.slots.get(host, 1))
    pool = cast(GradingPool, worker.plugins[pool_name(bundle.run)])
    try:
        grader = pool.take(bundle, threads)
        try:
            autograde, files, log = grader.grade(job)
        except BaseException:
            grader.close()
            raise
    except OSError as e:
        if e.errno not in WORKER_ERRNOS:
            raise
        raise WorkerFault(worker.address, f"{type(e).__name__}: {e}") from e
    pool.give_back(grader)
    return TaskResult(
        autograde=autograde,
        files=files,
        log=log,
        worker=str(worker.name),
        worker_address=worker.address,
        gpu=os.environ.get("CUDA_VISIBLE_DEVICES"),  # pinned on a GPU grader
        threads_per_kernel=threads,
        task_s=round(time.monotonic() - started, 2),
    )
