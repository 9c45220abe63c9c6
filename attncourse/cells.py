"""What a notebook's cells are to nbgrader and to this course."""

from dataclasses import dataclass

from nbformat.notebooknode import NotebookNode
from nbgrader import utils


def grade_id(cell: NotebookNode) -> str | None:
    """nbgrader's grade_id of a cell, or None for a plain cell."""
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def is_answer(cell: NotebookNode) -> bool:
    """True for the cells a student writes in (nbgrader solution cells)."""
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution"))


def is_test_cell(cell: NotebookNode) -> bool:
    """An autograder test cell: graded code the student cannot change (never run in the kernel)."""
    return cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)


def student_sources(nb: NotebookNode) -> list[str]:
    """The text of every code cell the student wrote: answer cells and cells they added."""
    return [
        cell.source
        for cell in nb.cells
        if cell.cell_type == "code"
        and (utils.is_solution(cell) or not cell.metadata.get("nbgrader", {}).get("locked"))
        and not is_test_cell(cell)
    ]


@dataclass(frozen=True)
class CodeCell:
    """A code cell as the judge's source rules read it: its place, text and role."""

    index: int  # position in the notebook
    source: str
    grade_id: str | None = None
    student: bool = True  # written by the student: an answer cell or a cell they added
    answer: bool = False  # an nbgrader solution cell
    test: bool = False  # an autograder test cell (never part of the student's code)
    part: str = ""  # its part ("Part 5"); "" for a cell of no part (a cell the student added)
    place: str = ""  # what it is: "the answer cell", "a cell you added after Part 5"


def code_cells(nb: NotebookNode) -> list[CodeCell]:
    """Every code cell of ``nb`` with its role (the course's own locked cells included:
    nbgrader restores their source before grading, so what they import is the course's)."""
    out = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        test = is_test_cell(cell)
        answer = bool(utils.is_solution(cell))
        student = not test and (answer or not cell.metadata.get("nbgrader", {}).get("locked"))
        out.append(CodeCell(index, cell.source, grade_id(cell), student, answer, test))
    return out
