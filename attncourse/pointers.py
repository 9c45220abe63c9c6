"""Pointers into a notebook that people can follow: the part, the answer's function or class,
and the line inside the cell as the student sees it.

Messages never count cells ("cell 44" matches neither the student's ``In [n]`` nor
formgrader's): they name the part (:mod:`attncourse.parts`), the ``def`` or ``class`` that
encloses the place ("`MyMHA.forward`") and the line in the cell's own source (1-based). A
cell the student added has no part: it is named by what it is and where it sits ("a cell
you added after Part 5"). The judge's findings, the integrity scan, the repairs of grade
cells and the faults of a run all use these words.
"""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass

from nbformat.notebooknode import NotebookNode

from attncourse.cells import CodeCell, code_cells, grade_id, is_answer
from attncourse.parts import cell_parts

_ROLE = {"answer": "the answer cell", "test": "the test cell", "written": "the written answer"}
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Place:
    """Where a cell sits: its part ("" for a cell the student added) and what it is."""

    part: str  # "Part 5", "Q3(b)"; "" for a cell of no part
    cell: str  # "the answer cell", "the test cell", "a cell you added after Part 5"

    @property
    def name(self) -> str:
        """The cell on its own: "the answer cell of Part 5", "a cell you added after Part 5"."""
        return f"{self.cell} of {self.part}" if self.part else self.cell


def cell_places(nb: NotebookNode) -> dict[int, Place]:
    """Every cell of ``nb`` (by index) and its :class:`Place`."""
    parts = cell_parts(nb)
    first = next((p.part or p.grade_id for p in parts.values()), None)
    out = {}
    last = None
    for index, cell in enumerate(nb.cells):
        part = parts.get(grade_id(cell))
        if part is not None:
            label = part.part or part.grade_id  # a notebook whose text names no part
            out[index] = Place(label, _ROLE[part.kind])
            last = label
            continue
        added = is_answer(cell) or not cell.get("metadata", {}).get("nbgrader", {}).get("locked")
        whose = "a cell you added" if added else "the course's cell"
        if last:
            out[index] = Place("", f"{whose} after {last}")
        elif first:
            out[index] = Place("", f"{whose} before {first}")
        else:
            out[index] = Place("", whose)
    return out


def located_cells(nb: NotebookNode) -> list[CodeCell]:
    """:func:`attncourse.cells.code_cells` of ``nb``, each with its part and place."""
    places = cell_places(nb)
    return [
        dataclasses.replace(c, part=places[c.index].part, place=places[c.index].cell)
        for c in code_cells(nb)
    ]


def place_of(cell: CodeCell) -> Place:
    """A code cell's :class:`Place` (a cell given as bare source: "a cell you added")."""
    return Place(cell.part, cell.place or "a cell you added")


def leading_blank_lines(text: str) -> int:
    """The blank lines IPython drops from the top of a cell before it parses it (add them back
    to its line numbers to get the lines the student sees)."""
    return text[: len(text) - len(text.lstrip())].count("\n")


def enclosing_names(tree: ast.AST) -> dict[ast.AST, str]:
    """Every node of ``tree`` inside a ``def`` or ``class`` -> its qualified name
    ("MyMHA.forward"); a definition maps to its own name."""
    out = {}
    todo = [(tree, "")]
    while todo:
        node, owner = todo.pop()
        if isinstance(node, _DEFINITIONS):
            owner = f"{owner}.{node.name}" if owner else node.name
        if owner:
            out[node] = owner
        todo.extend((child, owner) for child in ast.iter_child_nodes(node))
    return out


def enclosing_name(tree: ast.AST | None, line: int | None) -> str:
    """The qualified name of the innermost ``def``/``class`` of ``tree`` spanning ``line``."""
    if tree is None or not line:
        return ""
    best, name = None, ""
    for node, owner in enclosing_names(tree).items():
        if isinstance(node, _DEFINITIONS) and node.lineno <= line <= (node.end_lineno or 0):
            if best is None or node.lineno >= best.lineno:
                best, name = node, owner
    return name


def pointer(place: Place, function: str = "", line: int | list[int] | None = None) -> str:
    """ "`MyMHA.forward`, line 12 of the answer cell", "`f`, lines 3 and 5 of the answer cell",
    "line 3 of a cell you added after Part 5", "`f` in the answer cell"."""
    if not line:
        return f"`{function}` in {place.cell}" if function else place.cell
    numbers = [str(n) for n in line] if isinstance(line, list) else [str(line)]
    lines = (
        f"lines {', '.join(numbers[:-1])} and {numbers[-1]}"
        if numbers[1:]
        else f"line {numbers[0]}"
    )
    return f"`{function}`, {lines} of {place.cell}" if function else f"{lines} of {place.cell}"


def located(what: str, place: Place, function: str = "", line: int | None = None) -> str:
    """ "Part 5: a list comprehension in `MyMHA.forward`, line 12 of the answer cell"."""
    prefix = f"{place.part}: " if place.part else ""
    preposition = "in" if function or not line else "on"
    return f"{prefix}{what} {preposition} {pointer(place, function, line)}"
