"""What crosses each boundary of one submission's route through ``attncourse grade``.

One frozen dataclass per hand-off, built in one place and read through its fields:

* the client (:mod:`attncourse.pipeline`) sends each Dask task the run's :class:`CourseBundle`
  (once per worker) and one student's :class:`GradingJob`;
* the Dask task (:mod:`attncourse.worker.task`) asks its grading process for one student with
  a :class:`GradingRequest` and gets back an :class:`AutogradeResult`;
* the task returns a :class:`TaskResult` to the client, which builds the student's
  :class:`StudentResult` (its row of the summary) once, at the end of the run.

The notebook's :class:`~attncourse.runrecord.RunRecord` rides along: the client starts it
(what it refused of the folder: the sanitize stage's first facts), autograde's preprocessors
complete it and store it in the notebook, the grading process reads it back. Refused files
travel in it only. Every value here is plain data (pickled by Dask and by the pipe to the
grading process), so nothing here imports more than the record.
"""

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from attncourse.runrecord import RunRecord

# A folder as data: relative path -> (bytes, mode), as attncourse.worker.files reads it.
FileTree = Mapping[str, tuple[bytes, int]]


@dataclass(frozen=True)
class CourseBundle:
    """What every worker needs of the course for one run (client -> each Dask worker, once)."""

    run: str  # the run's key: tasks, grading processes and scratch courses are per run
    files: FileTree  # the config and its modules, source/<a>/ and release/<a>/
    gradebook: bytes  # a SQLite gradebook holding only the assignment's definition


@dataclass(frozen=True)
class GradingJob:
    """One student to grade (client -> a Dask task)."""

    assignment: str
    student: str
    files: FileTree  # the submitted folder, its links and special files already refused
    record: RunRecord  # the run record so far: what the client refused of the folder
    nbgrader_args: tuple[str, ...]  # arguments to nbgrader's AutogradeApp
    threads: int | None  # torch threads per kernel; None: the host's cores over its slots
    slots: Mapping[str, int]  # host -> grading slots of the cluster (for that default)


@dataclass(frozen=True)
class GradingRequest:
    """One student for a grading process (the Dask task -> its grading process, on a pipe)."""

    course: str  # the grading process's scratch course, with the student's folder written
    assignment: str
    student: str
    nbgrader_args: tuple[str, ...]  # the job's, with the scratch course's root and gradebook
    log_dir: str
    record: RunRecord  # the job's record, for the notebook's record (refused files)


@dataclass(frozen=True)
class AutogradeResult:
    """What autograde did for one student (a grading process -> its Dask task)."""

    error: str | None  # grading itself failed (not the student's code)
    seconds: float  # AutogradeApp's run for this student
    record: RunRecord  # the autograded notebook's, else the request's
    gradebook: dict | None  # what autograde wrote (gradebook.autograde_results); None: nothing
    read_gradebook_s: float | None


@dataclass(frozen=True)
class TaskResult:
    """One student's graded task (a Dask task -> the client)."""

    autograde: AutogradeResult
    files: FileTree  # the autograded folder
    log: str  # the end of the student's log
    worker: str
    worker_address: str
    gpu: str | None  # CUDA_VISIBLE_DEVICES on a GPU grader
    threads_per_kernel: int
    task_s: float


@dataclass(frozen=True)
class StudentResult:
    """A student's row of the run, built once by the client; ``None`` where a stage did not happen."""

    student: str
    missing: str | None = None  # why there is nothing to grade (client)
    error: str | None = None  # grading itself failed
    seconds: float | None = None
    record: RunRecord = field(default_factory=RunRecord)  # the notebook's (refused files too)
    read_gradebook_s: float | None = None
    worker: str | None = None
    worker_address: str | None = None
    gpu: str | None = None
    threads_per_kernel: int | None = None
    task_s: float | None = None
    save_s: float | None = None
    score: float = 0.0
    max_score: float = 0.0
    needs_manual: int = 0
    status: str = ""
    details: str = ""
    # what became of the submission (attncourse.status.Status; "" when grading failed)
    outcome: str = ""
    reason: str = ""
    next_step: str = ""

    def summary(self) -> dict:
        """The student's row of ``summary.json``: every field that was filled in."""
        return {key: value for key, value in asdict(self).items() if value is not None}
