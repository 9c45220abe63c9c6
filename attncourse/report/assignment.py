"""One assignment's section of the report, in the order a course team reads it."""

from __future__ import annotations

import statistics

from attncourse.report import figures
from attncourse.report.markup import Cell, esc, figure, table
from attncourse.report.matrix import matrix_section
from attncourse.report.model import AssignmentReport
from attncourse.status import NEXT_STEP


def _who(students, names) -> str:
    return ", ".join(names.get(s, s) for s in students)


def summary(report: AssignmentReport, names: dict[str, str]) -> list[str]:
    scores = [s.score for s in report.graded()]
    out = []
    if scores:
        row = [
            len(scores),
            f"{statistics.mean(scores):.1f}",
            f"{statistics.median(scores):.1f}",
            f"{min(scores):g}",
            f"{max(scores):g}",
            f"{report.max_score:g}",
        ]
        header = ["graded", "mean", "median", "min", "max", "of"]
        out += [table(header, [row], range(6)), figure(figures.score_figure(report), "scores")]
    apart = report.apart()
    if apart:
        out.append("<h3>Not graded: counted apart</h3>")
        out.append(
            '<p class="note">Left out of every failure rate, distribution and matrix below.</p>'
        )
        rows = [
            (
                status.value,
                len(subs),
                _who((s.student for s in subs), names),
                "; ".join(sorted({s.status.reason for s in subs if s.status.reason})),
                NEXT_STEP.get(status, ""),
            )
            for status, subs in apart.items()
        ]
        out.append(table(["status", "students", "who", "why", "next step"], rows, (1,)))
    return out


def failures(report: AssignmentReport, names: dict[str, str]) -> list[str]:
    parts = report.tested_parts()
    if not parts or not report.graded():
        return []
    out = ["<h3>Failure rate per part</h3>"]
    out.append(
        '<p class="note">Over the graded submissions that attempted the part (changed one of '
        "its answer cells): the share that failed at least one of its tests.</p>"
    )
    out.append(figure(figures.failure_figure(report), "failure rate per part"))
    rows = []
    for part in parts:
        failed, tried = report.failure_rate(part)
        rate = f"{100 * len(failed) / len(tried):.0f}%" if tried else "–"
        rows.append(
            (
                part,
                len(failed),
                len(tried),
                rate,
                _who(failed, names),
                _who(report.not_attempted(part), names),
            )
        )
    header = ["part", "failed", "attempted", "rate", "who failed", "not attempted"]
    out.append(table(header, rows, (1, 2, 3)))
    return out


def matrix(report: AssignmentReport, names: dict[str, str]) -> list[str]:
    if not report.graded() or not report.parts:
        return []
    return [
        "<h3>Student × part</h3>",
        matrix_section(report, names),
        "<h3>Score per part</h3>",
        figure(figures.part_scores_figure(report), "score per part"),
    ]


def mistakes(report: AssignmentReport, names: dict[str, str]) -> list[str]:
    groups = report.mistake_groups()
    if not groups:
        return []
    out = ["<h3>Mistakes, by cause</h3>"]
    out.append(figure(figures.mistakes_figure(report, groups), "mistakes by cause"))
    named = [g for g in groups if g.cause.named]
    raw = [g for g in groups if not g.cause.named]
    if named:
        out.append("<h4>Causes the grader named</h4>")
        rows = [
            (g.cause.text, len(g.students), ", ".join(g.parts), _who(sorted(g.students), names))
            for g in named
        ]
        out.append(table(["likely cause", "students", "parts", "who"], rows, (1,)))
    if raw:
        out.append("<h4>Errors with no named cause</h4>")
        rows = [
            (
                g.cause.text,
                len(g.students),
                ", ".join(g.parts),
                ", ".join(sorted(g.details)),
                _who(sorted(g.students), names),
            )
            for g in raw
        ]
        out.append(
            table(["error (sizes taken out)", "students", "parts", "names", "who"], rows, (1,))
        )
    return out


def backlog(report: AssignmentReport, names: dict[str, str]) -> list[str]:
    written = report.written_parts()
    if not written:
        return []
    rows = [(p, len(report.waiting(p)), len(report.submitted_answers(p))) for p in written]
    waiting = sum(r[1] for r in rows)
    out = ["<h3>Written answers waiting for a grader</h3>"]
    out.append(
        f'<p class="backlog" data-waiting="{waiting}">{waiting} written answers of the graded '
        "submissions have no grade yet (formgrader's <em>Manual Grading</em>).</p>"
    )
    out.append(table(["part", "waiting", "answers"], rows, (1, 2)))
    apart = {p: report.waiting(p, graded=False) for p in written}
    if any(apart.values()):
        listed = "; ".join(f"{p}: {_who(sorted(set(s)), names)}" for p, s in apart.items() if s)
        out.append(
            f'<p class="note">Also waiting, in submissions not graded (see above): {esc(listed)}.'
            "</p>"
        )
    review = report.under_review()
    if review:
        listed = "; ".join(f"{p}: {_who(s, names)}" for p, s in review.items())
        out.append(
            "<p>Autograded tests flagged for a grader's review (an integrity finding): "
            f"{esc(listed)}.</p>"
        )
    return out


def integrity(report: AssignmentReport, names: dict[str, str]) -> list[str]:
    out = ["<h3>Flagged for review</h3>"]
    if report.flagged:
        out.append("<p>Ticked in formgrader's <em>Flagged?</em> column.</p>")
        rows = [(names.get(s, s), why) for s, why in sorted(report.flagged.items())]
        out.append(table(["student", "why"], rows))
    else:
        out.append("<p>No student is flagged.</p>")
    out.append("<h3>Integrity findings</h3>")
    once = report.findings_once()
    if once:
        out.append('<p class="note">Each finding once per student, part and kind.</p>')
        out.append(
            figure(figures.findings_figure(report), "integrity findings and unverifiable rules")
        )
        rows = [
            (names.get(s, s), f.label or f.part or "", f.kind, f.detail, f.where) for s, f in once
        ]
        out.append(table(["student", "part", "kind", "detail", "where"], rows))
    else:
        out.append("<p>No integrity findings.</p>")
    if report.instance_matches:
        out.append("<h3>Answers that match another student's instance</h3>")
        out.append(
            "<p>Hand-computed answers that are, every number of a part, those of a classmate's "
            "own instance (the student's feedback says only &ldquo;another student's "
            "instance&rdquo;).</p>"
        )
        rows = [
            (
                f"answers of {names.get(a, a)} match student {names.get(b, b)}'s instance",
                ", ".join(p),
            )
            for a, matched in sorted(report.instance_matches.items())
            for b, p in sorted(matched.items())
        ]
        out.append(table(["finding", "parts"], rows))
    return out


def timing(report: AssignmentReport, names: dict[str, str]) -> list[str]:
    out = ["<h3>Grading time per student</h3>"]
    if not report.seconds:
        return [*out, "<p>No timing recorded.</p>"]
    out.append(f"<p>Source: {esc(report.timing_source)}.</p>")
    out.append(figure(figures.timing_figure(report, names), "grading time per student"))
    rows = [
        (names.get(s, s), Cell(f"{t:.1f}", "num"), report.run_status.get(s, ""))
        for s, t in sorted(report.seconds.items(), key=lambda kv: -kv[1])
    ]
    out.append(table(["student", "seconds", "status"], rows))
    return out


def assignment_section(report: AssignmentReport, names: dict[str, str]) -> str:
    out = [f'<section id="{esc(report.name)}">', f"<h2>{esc(report.name)}</h2>"]
    for part in (summary, failures, matrix, mistakes):
        out += part(report, names)
    out += backlog(report, names)
    out += integrity(report, names)
    out += timing(report, names)
    out.append("</section>")
    return "\n".join(out)
