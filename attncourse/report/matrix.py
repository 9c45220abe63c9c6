"""The student × part matrix: a heat map and the table below it, sortable without a script.

The page allows no script (``markup.POLICY``), so the table is written once per order (by
student, by total, by each part) and each column heading links to its order; CSS shows the
order the address names (``:target``), the default one (lowest total first, the heat map's
rows) when it names none.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from attncourse.report.figures import heatmap
from attncourse.report.markup import Cell, esc, figure
from attncourse.report.model import AssignmentReport, PartResult, Submission

NOT_ATTEMPTED = "–"
AWAITING = "awaiting"
REVIEW = "under review"


def total(sub: Submission) -> tuple[float, float]:
    """(points given, points graded so far) over every part of ``sub``."""
    parts = sub.parts.values()
    return sum(p.score for p in parts), sum(p.graded_points for p in parts)


def share(sub: Submission) -> float | None:
    score, graded = total(sub)
    return score / graded if graded > 0 else None


def _key(value: float | None, name: str) -> tuple:
    return (value is None, value if value is not None else 0.0, name)


def orders(report: AssignmentReport, names: dict[str, str]) -> dict[str, Callable]:
    """Sort name -> key over graded submissions: total (the default), student, each part."""

    def name(sub: Submission) -> str:
        return names.get(sub.student, sub.student).lower()

    def part_key(part: str) -> Callable:
        def key(sub: Submission) -> tuple:
            result = sub.parts.get(part)
            value = result.fraction if result is not None and result.attempted else None
            return _key(value, name(sub))

        return key

    keys = {"total": lambda s: _key(share(s), name(s)), "student": lambda s: (name(s),)}
    keys.update({part: part_key(part) for part in report.parts})
    return keys


def _slug(assignment: str, order: str) -> str:
    return f"{assignment}-by-" + re.sub(r"[^a-z0-9]+", "-", order.lower()).strip("-")


def _grade(fraction: float | None) -> str:
    if fraction is None:
        return "none"
    return "lo" if fraction < 0.5 else "mid" if fraction < 1 else "hi"


def part_cell(result: PartResult | None) -> Cell:
    if result is None or not result.attempted:
        return Cell(NOT_ATTEMPTED, "none")
    if result.fraction is None:
        return Cell(AWAITING, "none")
    text = f"{result.score:g}/{result.graded_points:g}"
    if result.waiting:
        text += f" + {result.waiting_points:g} {AWAITING}"
    if result.review:
        text += f" ({REVIEW})"
    return Cell(text, f"num {_grade(result.fraction)}")


def _table(report, rows, names, current) -> str:
    heads = ["student", "total", *report.parts]
    links = [
        esc(h) if h == current else f'<a href="#{_slug(report.name, h)}">{esc(h)}</a>'
        for h in heads
    ]
    out = ["<table>", "<tr>" + "".join(f"<th>{link}</th>" for link in links) + "</tr>"]
    for sub in rows:
        score, graded = total(sub)
        cells = [
            Cell(names.get(sub.student, sub.student)),
            Cell(f"{score:g}/{graded:g}", f"num {_grade(share(sub))}"),
            *(part_cell(sub.parts.get(p)) for p in report.parts),
        ]
        out.append("<tr>" + "".join(c.html() for c in cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def matrix_section(report: AssignmentReport, names: dict[str, str]) -> str:
    """The heat map (rows lowest total first) and the table in every order."""
    keys = orders(report, names)
    default = sorted(report.graded(), key=keys["total"])
    rows_named = ", ".join(names.get(s.student, s.student) for s in default)
    alt = (
        f"{report.name}: student × part heat map; rows: {rows_named}; "
        f"columns: {', '.join(report.parts)}"
    )
    out = [figure(heatmap(report, default, names), alt)]
    out.append(
        '<p class="note">Each cell: points given / points graded so far in the part; '
        f"{NOT_ATTEMPTED} not attempted (left as released); “{AWAITING}”: a written answer "
        f"not yet graded; “{REVIEW}”: autograded tests flagged for a grader's review. Rows: lowest total first; a column heading sorts by that column "
        "(a part: lowest first).</p>"
    )
    out.append('<div class="sorts">')
    for order, key in keys.items():
        rows = default if order == "total" else sorted(report.graded(), key=key)
        css = "sorted default" if order == "total" else "sorted"
        out.append(
            f'<div class="{css}" id="{_slug(report.name, order)}" data-order="{esc(order)}">'
        )
        out.append(_table(report, rows, names, order))
        out.append("</div>")
    out.append("</div>")
    return "\n".join(out)
