# Generated from the course's judge by the release build: do not edit.
"""The words of a pointer into a notebook: the part, the function or class, the line.

Pure functions of a cell's part and place and of the code's syntax tree (no notebook, no
nbgrader), so that the prover shipped to students words its pointers as the judge's
findings and the integrity scan do; the notebook-side half (each cell's place) is
``pointers`` beside this module.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

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


def place_of(cell) -> Place:
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
