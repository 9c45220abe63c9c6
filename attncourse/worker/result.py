"""One student's grading result, the one shape every process of a run builds and reads.

The grading process fills in what autograde did, the Dask worker where it ran and what it
left, the client what it wrote and the verdict; the run's ``summary.json`` holds one
:meth:`StudentResult.summary` per student.
"""

from dataclasses import asdict, dataclass, field

from attncourse.runrecord import RunRecord

# What the client writes elsewhere (autograded/, the log, the gradebook), not into the summary.
DELIVERED = ("files", "log", "gradebook")


@dataclass
class StudentResult:
    """A student's result: ``None`` where the step that fills a field did not happen."""

    student: str
    # the client, when there is nothing to grade: why, and what was refused of the folder
    missing: str | None = None
    refused: list[str] = field(default_factory=list)
    # the grading process
    error: str | None = None  # grading itself failed (not the student's code)
    seconds: float | None = None  # AutogradeApp's run for this student
    record: RunRecord = field(default_factory=RunRecord)  # the autograded notebook's
    gradebook: dict | None = None  # what autograde wrote (gradebook.autograde_results)
    read_gradebook_s: float | None = None
    # the Dask worker
    files: dict | None = None  # the autograded folder (worker.files.read_tree)
    log: str = ""  # the end of the student's log
    worker: str | None = None
    worker_address: str | None = None
    gpu: str | None = None  # CUDA_VISIBLE_DEVICES on a GPU grader
    threads_per_kernel: int | None = None
    task_s: float | None = None
    # the client
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
        """The student's row of ``summary.json``: every field that was filled in, but what the
        client delivered elsewhere."""
        return {
            key: value
            for key, value in asdict(self).items()
            if value is not None and key not in DELIVERED
        }
