"""Build submissions from the release: the instructor's solution, or a release with cells replaced.

Used by the demo, the mutation tables in ``tests/`` and the fault corpus. A
submission starts from what a student receives (the release notebook) and
fills answer cells by ``grade_id``, exactly what a student's edits amount to.
"""

import copy
import re
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from attncourse.cells import grade_id, is_answer
from attncourse.constants import RELEASE, SOURCE, SUBMITTED
from attncourse.course import notebook_path

_MARKERS = re.compile(r"^\s*(###|#)?\s*(BEGIN|END) SOLUTION\s*$")


def strip_markers(text: str) -> str:
    """The solution region of an instructor cell as a student would have typed it."""
    return "\n".join(line for line in text.split("\n") if not _MARKERS.match(line))


def solution_answers(source_nb: NotebookNode) -> dict[str, str]:
    """grade_id -> the instructor's answer for every answer cell of a source notebook."""
    return {grade_id(c): strip_markers(c.source) for c in source_nb.cells if is_answer(c)}


def fill(release_nb: NotebookNode, answers: dict[str, str]) -> NotebookNode:
    """A copy of the release notebook with the answer cells named in ``answers`` replaced."""
    nb = copy.deepcopy(release_nb)
    unknown = set(answers) - {grade_id(c) for c in nb.cells if is_answer(c)}
    if unknown:
        raise KeyError(f"no answer cell with grade_id {sorted(unknown)}")
    for cell in nb.cells:
        if is_answer(cell) and grade_id(cell) in answers:
            cell.source = answers[grade_id(cell)]
    return nb


def solution_submission(
    root: Path, assignment: str, overrides: dict[str, str] | None = None
) -> NotebookNode:
    """The release filled with the instructor's answers, then with ``overrides`` on top."""
    source = nbformat.read(notebook_path(root, SOURCE, assignment), as_version=4)
    release = nbformat.read(notebook_path(root, RELEASE, assignment), as_version=4)
    answers = solution_answers(source)
    answers.update(overrides or {})
    return fill(release, answers)


def write_submission(
    course: Path,
    student: str,
    assignment: str,
    nb: NotebookNode | str | bytes,
    timestamp: str = "2026-11-20 12:00:00 UTC",
) -> Path:
    """Write ``nb`` as ``student``'s submission of ``assignment`` in course directory ``course``."""
    path = notebook_path(course, SUBMITTED, assignment, student)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(nb, (str, bytes)):
        Path(path).write_text(nb if isinstance(nb, str) else nb.decode())
    else:
        nbformat.write(nb, path)
    (path.parent / "timestamp.txt").write_text(timestamp)
    return path
