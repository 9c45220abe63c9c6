"""A notebook's run record: what grading it recorded in the notebook (``metadata.attncourse``).

Autograde's preprocessors build it (the sanitize stage: repairs, refused files, an unreadable
file; the run: faults, timings, the kernel's protections) and store it in the notebook; the
grading process, ``attncourse grade``, ``make bench`` and the report read it back, all
through :class:`RunRecord`. The integrity scan's findings travel in it untouched
(:mod:`attncourse.integrity` reads and writes them itself).
"""

import copy
from dataclasses import asdict, dataclass, field, fields

from nbformat.notebooknode import NotebookNode

from attncourse.constants import METADATA_KEY

# The resources key of the repairs the exporter made while reading the file (cells outside the
# notebook format replaced by a note): they reach the record past its reset on entry
# (RefuseSpecialFiles), which drops whatever the submitted file carried under METADATA_KEY.
READING_REPAIRS = "attncourse_reading_repairs"


@dataclass
class RunRecord:
    """The record of grading one notebook; a field never filled in is empty (or None)."""

    repairs: list[str] = field(default_factory=list)  # grade cells put back, and how
    refused_files: list[str] = field(default_factory=list)  # links and special files removed
    unreadable: str | None = None  # why the submitted file could not be read as a notebook
    refused: str | None = None  # why the whole file was refused unread (a limit it passed)
    # {"cell": grade_id ("" for a cell the student added), "where": the cell in words, "fault"}
    faults: list[dict] = field(default_factory=list)
    timing: dict[str, float] = field(
        default_factory=dict
    )  # kernel_ready_s, execute_s, judge_s, requests
    protections: dict | None = None  # the kernel's sandbox, as the launcher recorded it
    integrity: list[dict] = field(default_factory=list)  # attncourse.integrity's findings
    # {"part", "student"}: answers that match a classmate's own numbers (the report lists them)
    instance_matches: list[dict] = field(default_factory=list)

    @classmethod
    def of(cls, nb: NotebookNode | dict) -> "RunRecord":
        """The record stored in ``nb`` (a notebook, or a notebook's JSON), as a fresh copy."""
        stored = (nb.get("metadata") or {}).get(METADATA_KEY) or {}
        known = {f.name for f in fields(cls)}
        return cls(**{k: copy.deepcopy(v) for k, v in stored.items() if k in known})

    def store(self, nb: NotebookNode) -> None:
        """Write the record into ``nb``'s metadata (what was never filled in is left out)."""
        nb.metadata[METADATA_KEY] = {
            key: value for key, value in asdict(self).items() if value not in (None, [], {})
        }
