"""The parts of an assignment: one vocabulary for students, instructors and the judge.

Every graded cell belongs to one *part*, named as the notebook's own text names it: a test
cell by the first words of its docstring ("Part 5", "Part 1(a)", "Q3(b)", "Lab 3, (b)"; a
bare "(c)" under "Question 1(c)" reads "Q1(c)"), an answer cell by the first test below it,
a written answer by its question's heading ("Part 6", "Q1(a)") and, where the heading asks
several questions, the letter its grade id or its question's text gives ("Part 6(b)").
Messages, the feedback's contents, the report and formgrader all use these labels.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from nbformat.notebooknode import NotebookNode

from attncourse.cells import grade_id, is_answer, is_test_cell

_HEADING = re.compile(r"^#{1,3}\s+(?!BEGIN |END )(.+?)\s*$", re.M)
_SUB_QUESTION = re.compile(r"\*\*\(([a-z])\)\*\*")


@dataclass(frozen=True)
class CellPart:
    """Where one graded or answer cell belongs."""

    grade_id: str
    part: str  # "Part 5", "Q3(b)", "Lab 1", "Part 6(b)"
    kind: str  # "answer" (code the student writes), "test" (autograded), "written" (by hand)
    section: str  # the heading the cell sits under, as the student reads it


def short_heading(heading: str) -> str:
    """ "Part 6 (5 points) — the rank" -> "Part 6"; "Question 1(a) — …" -> "Q1(a)"."""
    title = re.split(r"\s+[—–-]\s+|\s+\(", heading, maxsplit=1)[0].strip()
    match = re.fullmatch(r"Question\s+(\d+)\s*(\([a-z]\))?", title)
    if match:
        return f"Q{match.group(1)}{match.group(2) or ''}"
    return title


def docstring_label(source: str) -> str | None:
    """The part a test cell names before the colon of its docstring, or None."""
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError):
        return None
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        text = str(body[0].value.value).strip()
        if ":" in text:
            return text.split(":", 1)[0].strip()
    return None


def _with_question(label: str, section: str) -> str:
    """A bare "(c)" or "Lab 3, (c)" stays; "(c)" under "Q1(c)" reads "Q1(c)"."""
    if re.fullmatch(r"\([a-z]\)", label):
        number = re.match(r"Q(\d+)", section)
        if number:
            return f"Q{number.group(1)}{label}"
    return label


def cell_parts(nb: NotebookNode) -> dict[str, CellPart]:
    """Every answer and graded cell of ``nb`` (by grade id, in notebook order) and its part."""
    section = ""
    heading = ""
    sub = ""  # the last "**(x)**" question since the heading
    pending: list[tuple[str, str]] = []  # answer cells waiting for their first test
    out: dict[str, CellPart] = {}
    for cell in nb.cells:
        gid = grade_id(cell)
        if cell.cell_type == "markdown" and not is_answer(cell):
            found = _HEADING.findall(cell.source)
            if found:
                for answer, where in pending:  # an answer no test reads (a plot): its section
                    out[answer] = CellPart(answer, section or answer, "answer", where)
                pending = []
                heading, section, sub = found[-1], short_heading(found[-1]), ""
            letters = _SUB_QUESTION.findall(cell.source)
            if letters:
                sub = letters[-1]  # a written answer follows the last question asked above it
            continue
        if gid is None:
            continue
        if is_test_cell(cell):
            label = docstring_label(cell.source) or section
            label = _with_question(label, section)
            for answer, where in pending:
                out[answer] = CellPart(answer, label, "answer", where)
            pending = []
            out[gid] = CellPart(gid, label, "test", heading)
        elif cell.cell_type == "code" and is_answer(cell):
            pending.append((gid, heading))
        elif cell.cell_type == "markdown" and is_answer(cell):
            letter = re.match(r"q\d+([a-z])_", gid)
            if letter and not section.endswith(")"):
                label = f"{section}({letter.group(1)})"
            elif sub and not section.endswith(")"):
                label = f"{section}({sub})"
            else:
                label = section
            out[gid] = CellPart(gid, label, "written", heading)
    for answer, where in pending:
        out[answer] = CellPart(answer, section or answer, "answer", where)
    return {gid: out[gid] for gid in (grade_id(c) for c in nb.cells) if gid in out}


def part_order(nb: NotebookNode) -> list[str]:
    """The distinct part labels of ``nb`` in notebook order."""
    seen: dict[str, None] = {}
    for part in cell_parts(nb).values():
        seen.setdefault(part.part, None)
    return list(seen)
