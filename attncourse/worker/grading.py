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
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path

from traitlets.config import Config

from attncourse.constants import AUTOGRADED, GRADEBOOK, GRADER_DATA_MB, SUBMITTED
from attncourse.course import notebook_path
from attncourse.handoffs import AutogradeResult, GradingRequest
from attncourse.plainfiles import WHY, Refusals
from attncourse.runrecord import RunRecord
from attncourse.sandbox.forkstart import ForkServers
from attncourse.sandbox.sparekernel import SpareKernel

IDLE_S = 600  # a grading process no run has used for this long exits


class Grader:
    """What lives as long as a grading process: its fork servers and spare kernel (given to
    every student's autograde) and the count of students it graded."""

    def __init__(self) -> None:
        self.fork_servers = ForkServers.inherited()
        self.spare = SpareKernel()
        self.graded = 0

    def grade(self, request: GradingRequest) -> AutogradeResult:
        """One student: autograde, then what autograde wrote into the scratch gradebook."""
        from nbgrader.api import MissingEntry

        from attncourse.gradebook import autograde_results

        os.chdir(request.course)
        if self.graded == 0:
            self._start_fork_server(request.course)
        error, seconds, record = self.autograde(request)
        started = time.monotonic()
        try:
            url = f"sqlite:///{Path(request.course) / GRADEBOOK}"
            gradebook = autograde_results(url, request.assignment, request.student)
        except MissingEntry:
            gradebook = None  # autograde failed before it recorded the submission
        return AutogradeResult(
            error=error,
            seconds=seconds,
            record=record,
            gradebook=gradebook,
            read_gradebook_s=round(time.monotonic() - started, 3),
        )

    def _start_fork_server(self, course: str) -> None:
        """Launch the course's fork server before nbgrader is imported and set up: the
        server's imports (torch: about 1.8 s) then run beside nbgrader's (about 1 s), not after
        them, once per grading process."""
        from attncourse.course import course_config
        from attncourse.sandbox.kernelmanager import SandboxKernelManager

        try:
            manager = SandboxKernelManager(config=course_config(course))
        except Exception:  # noqa: BLE001 - a config that cannot be read fails in autograde, per student
            return
        if manager.fork_server:
            self.fork_servers.start(manager.preload)

    def autograde(self, request: GradingRequest) -> tuple[str | None, float, RunRecord]:
        """Autograde one student with nbgrader's AutogradeApp in this process: (the error if
        grading itself failed, seconds, the notebook's run record)."""
        from nbgrader.apps import AutogradeApp

        if self.graded == 1:
            # After the first student the modules and caches grading needs are loaded: collect
            # what that student left, then freeze the survivors, so that the collections during
            # the next students scan only their own objects (they took a fifth to a third of a
            # worker's CPU before). Once only: what is frozen is never freed.
            gc.collect()
            gc.freeze()
        self.graded += 1
        started = time.monotonic()
        error = None
        course, assignment, student = request.course, request.assignment, request.student
        folder = notebook_path(course, SUBMITTED, assignment, student).parent
        refused = request.record.refused_files
        refusals = Refusals({str(folder): refused})  # the client's, for the notebook's record
        log = Path(request.log_dir) / f"{student}.log"
        with _output_to(log):
            for entry in refused:
                print(f"Refused {folder}/{entry}: {WHY}; removed, never followed", file=sys.stderr)
            try:
                app = AutogradeApp()
                app.initialize(
                    [assignment, "--student", student, "--force", *request.nbgrader_args]
                )
                app.update_config(self._config(refusals))
                app.start()
            except BaseException as e:  # noqa: BLE001 - reported per student; the class goes on
                error = f"{type(e).__name__}: {e}".strip() + f" (see {student}.log)"
        seconds = round(time.monotonic() - started, 2)
        graded = notebook_path(course, AUTOGRADED, assignment, student)
        return error, seconds, _read_record(graded) or request.record

    def _config(self, refusals: Refusals) -> Config:
        """What this process passes into autograde: its kernels' servers and spare, and the
        student's refusals (for the pre-convert hook and RefuseSpecialFiles alike)."""
        return Config(
            {
                "ResilientExecute": {"fork_servers": self.fork_servers, "spare": self.spare},
                "Autograde": {"pre_convert_hook": refusals},
                "RefuseSpecialFiles": {"refusals": refusals},
            }
        )


@contextlib.contextmanager
def _output_to(path: Path) -> Iterator[None]:
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


def _read_record(path: Path) -> RunRecord | None:
    """The run record of the autograded notebook at ``path``; None if it was not written."""
    try:
        return RunRecord.of(json.loads(Path(path).read_text()))
    except (OSError, ValueError):
        return None


def _exit_with(parent: int) -> None:
    """Exit as soon as ``parent`` (the worker) is gone; the kernels die with this process."""
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(1)


def limit_memory(mb: int = GRADER_DATA_MB) -> None:
    """Cap this process's data (its heap and private mappings; the kernels set their own,
    lower limits): an allocation past it raises MemoryError in the check that asked."""
    limit = mb * 2**20
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(
        resource.RLIMIT_DATA, (limit, limit if hard == resource.RLIM_INFINITY else hard)
    )


def serve(read_fd: int, write_fd: int, parent: int) -> None:
    """The grading process: grade each request from the worker, until it goes or falls idle."""
    limit_memory()
    grader = Grader()
    threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()
    requests = Connection(read_fd, writable=False)
    replies = Connection(write_fd, readable=False)
    while requests.poll(IDLE_S):
        try:
            request = requests.recv()
        except EOFError:
            break
        replies.send(grader.grade(request))
