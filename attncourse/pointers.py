"""Pointers into a notebook that people can follow: the part, the answer's function or class,
and the line inside the cell as the student sees it.

Messages never count cells ("cell 44" matches neither the student's ``In [n]`` nor
formgrader's): they name the part (:mod:`attncourse.parts`), the ``def`` or ``class`` that
encloses the place ("`MyMHA.forward`") and the line in the cell's own source (1-based). A
cell the student added has no part: it is named by what it is and where it sits ("a cell
you added after Part 5"). The judge's findings, the integrity scan, the repairs of grade
cells and the faults of a run all use these words (:mod:`attncourse.pointing`).
"""

from __future__ import annotations

import dataclasses

from nbformat.notebooknode import NotebookNode

from attncourse.cells import CodeCell, code_cells, grade_id, is_answer
from attncourse.parts import cell_parts
from attncourse.pointing import Place

_ROLE = {"answer": "the answer cell", "test": "the test cell", "written": "the written answer"}


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
