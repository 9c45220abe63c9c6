"""``attncourse report``: ``reports/index.html``, the class at a glance, then each assignment.

The page opens with the course in one table (assignments in course order: graded, counted
apart, mean, written answers waiting, flagged), each student's trend across the assignments
and the integrity findings per assignment; then a section per assignment
(:mod:`attncourse.report.assignment`). It carries no script and loads nothing from
elsewhere (``markup.POLICY``); every name and message in it is escaped.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from attncourse.constants import REPORTS
from attncourse.report import figures
from attncourse.report.assignment import assignment_section
from attncourse.report.collect import ClassReport, collect
from attncourse.report.markup import POLICY, STYLE, Cell, esc, figure, table
from attncourse.report.matrix import share, total
from attncourse.status import Status

TITLE = "Attention course: grading report"


def _count(subs, names) -> Cell:
    if not subs:
        return Cell("0", "num")
    who = ", ".join(names.get(s.student, s.student) for s in subs)
    return Cell(f"{len(subs)} ({who})")


def overview(course: ClassReport) -> list[str]:
    names = course.names
    rows = []
    for report in course.assignments:
        graded = report.graded()
        apart = report.apart()
        shares = [v for s in graded if (v := share(s)) is not None]
        mean = f"{100 * sum(shares) / len(shares):.0f}%" if shares else "–"
        waiting = sum(len(report.waiting(p)) for p in report.written_parts())
        rows.append(
            [
                Cell(f'<a href="#{esc(report.name)}">{esc(report.name)}</a>', markup=True),
                Cell(len(graded), "num"),
                *(_count(apart.get(status, []), names) for status in list(Status)[1:]),
                Cell(mean, "num"),
                Cell(waiting, "num"),
                Cell(len(report.flagged), "num"),
            ]
        )
    header = ["assignment", "graded", *(s.value for s in list(Status)[1:])]
    header += ["mean share of graded points", "written answers waiting", "flagged"]
    out = ['<section id="overview">', "<h2>The class at a glance</h2>", table(header, rows)]
    out += trend(course)
    out += integrity_overview(course)
    out.append("</section>")
    return out


def trend(course: ClassReport) -> list[str]:
    """Each student's share of the graded points per assignment (a status word when not)."""
    order = [r.name for r in course.assignments]
    students = sorted(
        {s for r in course.assignments for s in r.submissions}, key=lambda s: course.name(s)
    )
    lines, rows = {}, []
    for student in students:
        values, row = [], [course.name(student)]
        for report in course.assignments:
            sub = report.submissions.get(student)
            value = share(sub) if sub is not None and sub.graded else None
            values.append(value)
            if sub is None:
                row.append(Cell("–", "none"))
            elif not sub.graded:
                row.append(Cell(sub.status.status.value, "none"))
            else:
                score, graded = total(sub)
                row.append(
                    Cell(f"{100 * value:.0f}% ({score:g}/{graded:g})" if graded else "–", "num")
                )
        lines[course.name(student)] = values
        rows.append(row)
    return [
        "<h3>Each student across the assignments</h3>",
        figure(figures.trend_figure(lines, order), "each student's trend across the assignments"),
        '<p class="note">Share of the points graded so far (written answers awaiting a grader '
        "are left out of both sides); a submission not graded shows its status.</p>",
        table(["student", *order], rows),
    ]


def integrity_overview(course: ClassReport) -> list[str]:
    counts = {r.name: sum(r.integrity_by_part().values(), Counter()) for r in course.assignments}
    if not any(counts.values()):
        return ["<h3>Integrity findings</h3>", "<p>No integrity findings in any assignment.</p>"]
    order = [r.name for r in course.assignments]
    return [
        "<h3>Integrity findings</h3>",
        figure(
            figures.integrity_overview_figure(counts, order), "integrity findings per assignment"
        ),
    ]


def render(course: ClassReport, title: str = TITLE, similarity: tuple[str, ...] = ()) -> str:
    """The report page's HTML; ``similarity``: assignments with a similarity page beside it."""
    body = [f"<h1>{esc(title)}</h1>"]
    if not course.assignments:
        body.append("<p>No graded submissions in the gradebook yet.</p>")
    else:
        links = ", ".join(f'<a href="#{esc(r.name)}">{esc(r.name)}</a>' for r in course.assignments)
        body.append(f'<p class="assignments">Assignments, in course order: {links}</p>')
        if similarity:
            pages = ", ".join(
                f'<a href="similarity_{esc(name)}.html">{esc(name)}</a>' for name in similarity
            )
            body.append(f"<p>Similarity across the class: {pages}</p>")
        body += overview(course)
        body += [assignment_section(r, course.names) for r in course.assignments]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def build_report(course_dir: str | os.PathLike, out: str | os.PathLike | None = None) -> Path:
    """Write the report of ``course_dir`` to ``out`` (default ``reports/index.html``); return it."""
    out = Path(out) if out else Path(course_dir) / REPORTS / "index.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    course = collect(course_dir)
    similarity = tuple(
        r.name for r in course.assignments if (out.parent / f"similarity_{r.name}.html").exists()
    )
    out.write_text(render(course, similarity=similarity), encoding="utf-8")
    return out
