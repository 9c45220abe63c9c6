"""``attncourse workload``: minutes of grading by hand per student, from the mark schemes.

It counts what a grader does per student from the source notebooks (the written answers,
their points, mark-scheme criteria and model-answer length), so the README's estimate
follows the assignments as they change.
"""

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode

from attncourse.constants import SOURCE
from attncourse.course import ROOT, assignments, notebook_path
from attncourse.markscheme import MARK_SCHEME, solution_region

# Reading speed for a written answer full of formulas, words per minute.
READ_WPM = 120
# Minutes to decide one mark-scheme criterion and, where points are lost, say why in a comment.
MINUTES_PER_CRITERION = 0.5
# Minutes to open a cell in formgrader and type its score.
MINUTES_PER_CELL = 0.5
# Minutes to open a submission in formgrader, glance at its autograded cells and move on.
MINUTES_PER_SUBMISSION = 1.0

_CRITERION = re.compile(r"^\s*[-*]\s+\S", re.MULTILINE)


@dataclass
class ManualCell:
    """One answer graded by hand: its points, mark-scheme criteria and model-answer length."""

    grade_id: str
    points: float
    criteria: int
    answer_words: int

    @property
    def minutes(self):
        reading = self.answer_words / READ_WPM
        return reading + self.criteria * MINUTES_PER_CRITERION + MINUTES_PER_CELL


def manual_cells(nb: NotebookNode) -> list[ManualCell]:
    """The cells of a source notebook that a person grades, with what their mark scheme asks."""
    out = []
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not meta.get("grade") or not (meta.get("solution") or meta.get("task")):
            continue
        answer, _, scheme = solution_region(cell.source).partition(MARK_SCHEME)
        out.append(
            ManualCell(
                grade_id=meta["grade_id"],
                points=float(meta.get("points", 0)),
                criteria=max(1, len(_CRITERION.findall(scheme))),
                answer_words=len(answer.split()),
            )
        )
    return out


def workload(root: Path = ROOT) -> dict[str, list[ManualCell]]:
    """assignment -> list of :class:`ManualCell` for every assignment in ``root/source``."""
    return {
        a: manual_cells(nbformat.read(notebook_path(root, SOURCE, a), as_version=4))
        for a in assignments(root)
    }


def workload_table(root: Path = ROOT) -> str:
    """The README's table of manual grading per student, one row per assignment."""
    rows = [
        "| assignment | cells graded by hand | points | mark-scheme criteria | minutes per student |",
        "| --- | --- | --- | --- | --- |",
    ]
    for assignment, cells in workload(root).items():
        points = sum(c.points for c in cells)
        criteria = sum(c.criteria for c in cells)
        minutes = MINUTES_PER_SUBMISSION + sum(c.minutes for c in cells)
        rows.append(
            f"| `{assignment}` | {len(cells)} | {points:g} | {criteria} | {round(minutes)} |"
        )
    return "\n".join(rows)
