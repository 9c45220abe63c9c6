"""What became of one student's submission: graded, or why not.

One vocabulary for every place an instructor looks (the grading summary, formgrader, the
feedback and the report): only a ``GRADED`` notebook counts in a failure rate; the others
are counted apart, each with its reason and what the student can do.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from nbformat.notebooknode import NotebookNode

from attncourse.cells import grade_id, is_answer
from attncourse.integrity.coursenotebook import normalize
from attncourse.runrecord import RunRecord


class Status(enum.StrEnum):
    GRADED = "graded"  # read, run and judged: its scores mean what they say
    UNTOUCHED = "untouched"  # every answer cell is the release's stub: nothing was attempted
    UNREADABLE = "unreadable"  # the file is not a notebook (not JSON, not UTF-8, ...)
    MISSING = "missing"  # nothing handed in (on the roster, no submission)
    REFUSED = "refused"  # the grader refused what was handed in (links, special files, limits)


NEXT_STEP = {
    Status.UNTOUCHED: "no answer was changed from the release: check that the right file was "
    "handed in",
    Status.UNREADABLE: "re-upload a notebook saved from Jupyter (File > Save Notebook, then "
    "hand in the .ipynb file itself)",
    Status.MISSING: "nothing was handed in",
    Status.REFUSED: "hand in the notebook as a plain file (not a link or a special file) within "
    "the course's limits (the reason names the one it passed)",
}


@dataclass(frozen=True)
class SubmissionStatus:
    """A submission's status, the reason behind it and the student's next step."""

    status: Status
    reason: str = ""

    @property
    def graded(self) -> bool:
        return self.status is Status.GRADED

    @property
    def next_step(self) -> str:
        return NEXT_STEP.get(self.status, "")


def attempted(nb: NotebookNode, release: NotebookNode) -> set[str]:
    """grade_ids of the answer cells of ``nb`` that differ from the release's stub."""
    stubs = {grade_id(c): normalize(c.source) for c in release.cells if is_answer(c)}
    return {
        gid
        for c in nb.cells
        if is_answer(c) and (gid := grade_id(c)) in stubs and normalize(c.source) != stubs[gid]
    }


def status_of(nb: NotebookNode, release: NotebookNode | None = None) -> SubmissionStatus:
    """The status of a graded (autograded) notebook, from its run record and the release."""
    record = RunRecord.of(nb)
    if record.unreadable:
        return SubmissionStatus(Status.UNREADABLE, record.unreadable)
    if record.refused:
        return SubmissionStatus(Status.REFUSED, record.refused)
    if release is not None and not attempted(nb, release):
        return SubmissionStatus(Status.UNTOUCHED, "every answer cell is as released")
    return SubmissionStatus(Status.GRADED)
