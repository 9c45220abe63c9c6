"""What a notebook's cells are to nbgrader and to this course."""

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
