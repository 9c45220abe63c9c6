"""Show graders the mark scheme of every written answer, in formgrader, next to the answer.

A manually graded answer cell of a source notebook holds the model answer and
its "**Mark scheme**" inside its ``### BEGIN SOLUTION`` region; nbgrader
replaces that region in the release, so graders would otherwise have to open
``source/`` beside formgrader.
:class:`~attncourse.preprocessors.insertmarkscheme.InsertMarkScheme` (autograde stage)
puts a read-only markdown cell "Mark scheme (graders only)" with that region
right after each such answer in the autograded notebook, which is what
formgrader displays. The feedback never contains it (see
``attncourse.preprocessors.hidehiddentests``): the model answers stay with the instructors, so the
assignment can be reused next term.
"""

from nbformat.v4 import new_markdown_cell

from attncourse.cells import grade_id
from attncourse.constants import METADATA_KEY

TITLE = "Mark scheme (graders only)"
MARK_SCHEME = "**Mark scheme**"  # where a model answer's mark scheme starts, in its cell


def solution_region(source, begin="BEGIN SOLUTION", end="END SOLUTION"):
    """The text between the solution delimiters of a cell (nbgrader's marker rule), stripped."""
    lines, inside = [], False
    for line in source.splitlines():
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside:
            lines.append(line)
    return "\n".join(lines).strip()


def is_manually_graded_answer(cell):
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("solution") and meta.get("grade"))


def mark_schemes(source_nb):
    """grade_id -> (points, mark scheme text) of every manually graded answer of a source notebook."""
    out = {}
    for cell in source_nb.cells:
        if is_manually_graded_answer(cell):
            text = solution_region(cell.source)
            if text:
                out[grade_id(cell)] = (cell.metadata["nbgrader"].get("points", 0), text)
    return out


def mark_scheme_cell(gid, points, text):
    """The read-only markdown cell shown to graders under answer ``gid``."""
    quoted = "\n".join(f"> {line}" if line else ">" for line in text.splitlines())
    cell = new_markdown_cell(f"**{TITLE}** — `{gid}`, {points:g} points\n\n{quoted}")
    cell.metadata = {
        "editable": False,
        "deletable": False,
        METADATA_KEY: {"mark_scheme": gid},
    }
    return cell


def is_mark_scheme_cell(cell):
    return "mark_scheme" in cell.get("metadata", {}).get(METADATA_KEY, {})


def with_mark_schemes(cells, schemes):
    """``cells`` with a mark-scheme cell after each written answer that has a scheme.

    Mark-scheme cells already there (or forged in a submission) are dropped first.
    """
    out = []
    for cell in cells:
        if is_mark_scheme_cell(cell):
            continue
        out.append(cell)
        gid = grade_id(cell)
        if is_manually_graded_answer(cell) and gid in schemes:
            out.append(mark_scheme_cell(gid, *schemes[gid]))
    return out
