"""The cells of a submitted notebook that cannot be read, repaired one by one while reading it.

nbformat gives up on a whole file for one cell of the wrong shape: its reader (before any
validation) walks every cell's ``metadata``, ``source`` and ``attachments`` and raises on a
list where it expects an object, and its validator raises on a ``cell_type`` that is not a
string. :func:`mend_cells` repairs the parsed JSON before nbformat reads it: a cell it cannot
read is replaced by a note saying why, and attachments of the wrong shape (or on a code
cell, where the format has none) are dropped, the cell kept. :func:`unreadable_cells` then
replaces each cell that nbformat reads but its schema refuses. A notebook of nbformat 3 is
upgraded to 4 by :func:`upgrade_v3` first, cell by cell as nbformat's own upgrade does, so that
a cell it cannot upgrade costs that cell alone there too. :func:`named_repairs` words
each repair with the cell's place ("the answer cell of Part 4"); the course's own cells among
those replaced are put back from the release (RepairGradeCells), an answer cell's answer is lost.
"""

import json
from collections import Counter
from dataclasses import dataclass, field

import nbformat
from nbformat.v4.convert import upgrade_cell
from nbformat.validator import iter_validate

from attncourse.cells import grade_id
from attncourse.pointers import cell_places
from attncourse.preprocessors.repairgradecells import drop_malformed_metadata

CELL_TYPES = ("code", "markdown", "raw")
V3_CELL_TYPES = (*CELL_TYPES, "heading", "html")  # nbformat 3's, upgraded to markdown


@dataclass(frozen=True)
class Damage:
    """One cell's repair: its index, what was wrong, whether the cell was replaced (else only
    its attachments were dropped), and the cell's kind and nbgrader metadata where they could
    be read (to name it)."""

    index: int
    why: str
    replaced: bool
    stand_in: dict = field(default_factory=dict, compare=False)


def _kind(value: object) -> str:
    """A JSON value's kind in the format's words: "a list", "a string", "null"."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    names |= {int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _text(source: object) -> str | None:
    """A cell's source as text (a string, or a list of strings), else None."""
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    return None


def _stand_in(cell: object) -> dict:
    """What can be read of ``cell`` to name it: its kind, source and nbgrader metadata."""
    cell = cell if isinstance(cell, dict) else {}
    kind = cell.get("cell_type")
    meta = cell.get("metadata")
    nbgrader = meta.get("nbgrader") if isinstance(meta, dict) else None
    return {  # a graded cell of no readable kind is named as code (as almost all of them are)
        "cell_type": kind if kind in CELL_TYPES else "code" if nbgrader else "raw",
        "source": _text(cell.get("source")) or "",
        "metadata": {"nbgrader": nbgrader} if isinstance(nbgrader, dict) else {},
    }


def _not_a_cell_of(cell: object, types: tuple[str, ...]) -> str | None:
    """Why ``cell`` is no JSON object with a ``cell_type`` among ``types``, or None."""
    if not isinstance(cell, dict):
        return f"it is {_kind(cell)}, not a cell (a JSON object)"
    kind = cell.get("cell_type")
    if kind not in types:
        got = "missing" if kind is None else f"{_kind(kind)} ({str(kind)[:40]!r})"
        return f"its cell_type is {got}, not one of {', '.join(types)}"
    return None


def _unreadable(cell: object) -> str | None:
    """Why nbformat's reader cannot read ``cell`` (a parsed cell), or None."""
    why = _not_a_cell_of(cell, CELL_TYPES)
    if why is not None or not isinstance(cell, dict):  # (the second, for the type checker)
        return why
    if not isinstance(cell.get("metadata"), dict):
        got = "missing" if "metadata" not in cell else _kind(cell["metadata"])
        return f"its metadata is {got}, not an object"
    if _text(cell.get("source")) is None:
        got = "missing" if "source" not in cell else _kind(cell["source"])
        return f"its source is {got}, not text (a string or a list of strings)"
    try:  # nbgrader's checksums and the graded file are UTF-8
        json.dumps(cell, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as e:
        return f"it holds {e.object[e.start : e.end]!r}, half of a character, which is no text"
    return None


def _bad_attachments(cell: dict) -> str | None:
    """What is wrong with the attachments of ``cell`` (a readable parsed cell), or None."""
    attachments = cell["attachments"]
    if cell["cell_type"] == "code":
        return "a code cell has no attachments in the notebook format"
    if not isinstance(attachments, dict):
        return f"they are {_kind(attachments)}, not an object {{name: {{mime type: data}}}}"
    for name, bundle in attachments.items():
        if not isinstance(bundle, dict):
            return f"{str(name)[:40]!r} is {_kind(bundle)}, not an object {{mime type: data}}"
        for mime, data in bundle.items():
            if _text(data) is None:
                return (
                    f"the {str(mime)[:40]!r} data of {str(name)[:40]!r} is {_kind(data)}, not text"
                )
    return None


def mend_cells(nb: object) -> list[Damage]:
    """Repair the cells of ``nb`` (a parsed notebook file, in place) that nbformat's reader
    cannot read: each such cell replaced by a note, attachments of the wrong shape dropped."""
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        return []  # not a notebook of cells (or of nbformat 3's worksheets): read as it is
    damage = []
    for index, cell in enumerate(cells):
        why = _unreadable(cell)
        if why is not None:
            damage.append(Damage(index, why, True, _stand_in(cell)))
            cells[index] = _note(why)
        elif "attachments" in cell:
            why = _bad_attachments(cell)
            if why is not None:
                del cell["attachments"]
                damage.append(Damage(index, why, False))
    return damage


def upgrade_v3(nb: object) -> list[Damage]:
    """Upgrade ``nb`` (a parsed nbformat 3 notebook, in place) to nbformat 4 cell by cell, as
    nbformat's own upgrade does, but a cell it cannot upgrade is replaced by a note (nbformat
    gives up on the whole file for it). A code cell's outputs are left behind (grading clears
    them). Anything else (nbformat 4, worksheets that are not lists of cells) is left as it is,
    for nbformat to read or to refuse whole."""
    if not isinstance(nb, dict) or nb.get("nbformat") != 3:
        return []
    sheets = nb.get("worksheets")
    if not isinstance(sheets, list) or not all(
        isinstance(w, dict) and isinstance(w.get("cells"), list) for w in sheets
    ):
        return []
    metadata = nb.get("metadata")
    if not isinstance(metadata, dict):
        return []
    damage, cells = [], []
    for cell in (c for w in sheets for c in w["cells"]):
        why = _not_v3(cell)
        if why is None:
            v3 = dict(cell, outputs=[]) if cell["cell_type"] == "code" else dict(cell)
            key = "input" if cell["cell_type"] == "code" else "source"  # as nbformat 3 reads
            if isinstance(v3.get(key), list):
                v3[key] = _v3_lines(v3[key])
            try:
                upgraded = upgrade_cell(nbformat.from_dict(v3))
            except Exception as e:  # a heading's level that is not a number, ...
                why = f"it could not be upgraded from nbformat 3 ({type(e).__name__}: {e})"[:200]
            else:
                cells.append(upgraded)
                continue
        shown = (
            dict(cell, source=cell.get("input", cell.get("source")))
            if isinstance(cell, dict)
            else cell
        )
        damage.append(Damage(len(cells), why, True, _stand_in(shown)))
        cells.append(_note(why))
    metadata.pop("name", None)
    metadata.pop("signature", None)
    minor = nb.get("nbformat_minor")
    metadata.update(orig_nbformat=3, orig_nbformat_minor=minor if type(minor) is int else 0)
    nb.clear()
    nb.update(cells=cells, metadata=metadata, nbformat=4, nbformat_minor=5)
    return damage


def _v3_lines(lines: list[str]) -> str:
    """Lines of an nbformat 3 file joined as its reader joins them: as they are when the first
    ends a line (written by ``splitlines(True)``), else with newlines between them."""
    return "".join(lines) if lines and lines[0].endswith(("\n", "\r")) else "\n".join(lines)


def _not_v3(cell: object) -> str | None:
    """Why nbformat's upgrade cannot upgrade ``cell`` (a parsed nbformat 3 cell), or None."""
    why = _not_a_cell_of(cell, V3_CELL_TYPES)
    if why is not None or not isinstance(cell, dict):  # (the second, for the type checker)
        return why
    kind = cell["cell_type"]
    if not isinstance(cell.get("metadata", {}), dict):
        return f"its metadata is {_kind(cell['metadata'])}, not an object"
    key = "input" if kind == "code" else "source"
    if key in cell and _text(cell[key]) is None:
        name = "input (nbformat 3's source)" if key == "input" else key
        return f"its {name} is {_kind(cell[key])}, not text (a string or a list of strings)"
    if kind == "heading" and type(cell.get("level", 1)) is not int:
        return f"its heading level is {_kind(cell['level'])}, not a number"
    return None


def _note(why: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(f"**This cell could not be read:** {why}.")


def unreadable_cells(nb: nbformat.NotebookNode) -> list[Damage]:
    """Replace each cell of ``nb`` that breaks nbformat's schema (which nbconvert would refuse
    the whole notebook for) by a note saying why."""
    bad: dict[int, str] = {}
    for error in iter_validate(nb):
        # From the notebook's root: nbformat's error wraps jsonschema's, whose own path may be
        # relative to a oneOf branch (empty for a cell with a key the format has not).
        path = list(getattr(error, "absolute_path", error.path))
        if len(path) >= 2 and path[0] == "cells" and isinstance(path[1], int):
            where = "/".join(map(str, path[2:])) or "the cell itself"
            bad.setdefault(
                path[1], f"it did not follow the notebook format ({error.validator} at {where})"
            )
    damage = [Damage(index, why, True, _stand_in(nb.cells[index])) for index, why in bad.items()]
    for index, why in bad.items():
        nb.cells[index] = _note(why)
    return damage


def named_repairs(nb: nbformat.NotebookNode, damage: list[Damage]) -> list[str]:
    """The repairs of ``damage`` in words, each cell named by its place in ``nb`` (a replaced
    cell by what could be read of it); cells repaired alike are said once, with their count."""
    if not damage:
        return []
    shadow = nbformat.from_dict({"cells": list(nb.cells), "metadata": {}})
    for d in damage:
        if d.replaced:
            shadow.cells[d.index] = nbformat.from_dict(d.stand_in)
    drop_malformed_metadata(shadow)  # only to name the cells: nb itself is left as it is
    places = cell_places(shadow)
    said: Counter[str] = Counter()
    for d in sorted(damage, key=lambda d: d.index):
        gid = grade_id(shadow.cells[d.index])
        name = places[d.index].name + (f" (`{gid}`)" if gid else "")
        if d.replaced:
            said[f"{name} could not be read: {d.why}; it was replaced by a note"] += 1
        else:
            said[f"the attachments of {name} were dropped unread: {d.why}"] += 1
    return [f"{text} ({n} cells)" if n > 1 else text for text, n in said.items()]
