"""Integrity findings: a notebook's, against the course's cells; kept in its metadata.

Scanned in the sanitize stage, stored in the notebook (:func:`store`), read after the
autograder has saved its scores (:func:`findings_of`) by the plugin that flags parts, the
feedback and the report.
"""

from dataclasses import asdict, dataclass

from nbformat.notebooknode import NotebookNode

from attncourse.cells import grade_id
from attncourse.constants import METADATA_KEY
from attncourse.integrity.coursenotebook import CourseNotebook, normalize
from attncourse.integrity.scanner import scan_source

COMMENT_HEADER = "Integrity check:"


@dataclass(frozen=True)
class Finding:
    """One integrity finding: where it is, which part it costs, what it is."""

    cell: int
    grade_id: str | None
    part: str | None
    kind: str
    line: int | None
    detail: str

    def describe(self) -> str:
        where = f"cell {self.cell + 1}" + (f" ({self.grade_id})" if self.grade_id else "")
        line = f", line {self.line}" if self.line else ""
        return f"{self.kind}: {self.detail} [{where}{line}]"


def scan_notebook(nb: NotebookNode, course: CourseNotebook) -> list[Finding]:
    """Every :class:`Finding` in submitted notebook ``nb`` against the trusted ``course`` cells."""
    findings = []
    part = course.first_part
    for index, cell in enumerate(nb.cells):
        gid = grade_id(cell)
        ref = course.cells.get(gid)
        if ref is not None:
            part = course.part_of[gid]
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        text = normalize(source)
        hits = []
        if ref is not None and ref.locked:
            if text not in ref.sources:
                hits = [("locked cell edited", None, "the source differs from the course's")]
        elif cell.cell_type == "code" and text not in course.trusted:
            hits = scan_source(source, course.protected, course.allowed_imports)
        findings += [Finding(index, gid, part, *hit) for hit in hits]
    return findings


def store(nb: NotebookNode, findings: list[Finding]) -> None:
    """Keep ``findings`` in the notebook's metadata (the sanitize stage's scan)."""
    nb.metadata.setdefault(METADATA_KEY, {})["integrity"] = [asdict(f) for f in findings]


def findings_of(nb: NotebookNode) -> list[Finding]:
    """The findings :func:`store` kept in a (sanitized or autograded) notebook."""
    stored = nb.metadata.get(METADATA_KEY, {}).get("integrity", [])
    return [Finding(**f) for f in stored]


def flagged_comment(findings: list[Finding], flagged: list[str]) -> str:
    """The gradebook comment of a part with findings (shown in formgrader and the feedback)."""
    text = "\n".join([COMMENT_HEADER, ""] + [f"- {f.describe()}" for f in findings])
    if flagged:
        text += f"\n\nFlagged for review: {', '.join(flagged)}."
        text += "\nThe tests' score stands unless a grader enters a manual score."
    return text
