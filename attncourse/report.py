"""The class report: one HTML page (``reports/index.html``) about every graded assignment.

For each assignment with submissions in the gradebook it shows, with
matplotlib figures embedded as PNG and tables beside them:

- the distribution of total scores;
- per test, the share of submissions that failed it, and the mistakes the
  class made most, grouped by cause: the "likely cause" line of the tests' failure
  messages (``attncourse.judge.checks.fail``), else the first line of the message,
  with the per-student sizes and numbers taken out (:func:`mistake_cause`); tests
  not attempted (the stub's ``NotImplementedError``) and unreadable notebooks are
  counted apart, not as mistakes;
- the students flagged for review (nbgrader's flag, formgrader's "Flagged?"
  column: set by autograde for an integrity finding, or by a grader), the
  integrity findings (:mod:`attncourse.integrity`) per student, and the hand-computed
  answers that are a classmate's own numbers (the run record's ``instance_matches``,
  which the checks of per-student numbers fill from the gradebook's roster);
- the grading time per student: from the summary ``attncourse grade`` writes
  (``autograded/.attncourse/<assignment>/summary.json``, whose ``students``
  rows have ``student``, ``seconds`` and ``status``) when there is one, else
  from the time the notebook took to execute as recorded in the autograded
  notebook.

Test results are read from the autograded notebooks (a test failed when its
cell has an error output, which only the judge writes), so a test whose
points a grader changed for an integrity finding still counts as passed or
failed on its own merits.
"""

import base64
import html
import io
import json
import os
import re
import statistics
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import nbformat
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory

from attncourse.cells import is_test_cell
from attncourse.constants import REPORTS, RUN_RECORDS
from attncourse.integrity.findings import findings_of
from attncourse.runrecord import RunRecord

RUN_SUMMARY = "summary.json"  # in autograded/.attncourse/<assignment>/, by attncourse.pipeline


@dataclass
class AssignmentReport:
    """What the report shows about one assignment."""

    name: str
    max_score: float
    scores: dict = field(default_factory=dict)  # student -> total score
    tests: dict = field(default_factory=dict)  # grade_id -> [failed, graded, points]
    mistakes: Counter = field(default_factory=Counter)  # (grade_id, cause) -> count
    not_attempted: Counter = field(default_factory=Counter)  # grade_id -> count
    unreadable: dict = field(default_factory=dict)  # student -> why
    flagged: dict = field(default_factory=dict)  # student -> why (findings, or a grader)
    findings: list = field(default_factory=list)  # (student, Finding)
    # student -> {classmate: [parts]}: answers that are another student's own numbers
    instance_matches: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)  # student -> grading seconds
    status: dict = field(default_factory=dict)  # student -> status in the grading run
    timing_source: str = ""


def failure_message(output):
    """The mistake a failed test names: its "likely cause" line, else its message's first line."""
    lines = [line.strip() for line in str(output.get("evalue", "")).splitlines() if line.strip()]
    for line in lines:
        if line.startswith("likely cause:"):
            return line.removeprefix("likely cause:").strip()
    first = lines[0] if lines else ""
    return f"{output.get('ename', 'Error')}: {first}"[:160]


# What differs between two students who made the same mistake: the sizes and numbers each drew.
_SIZES = [
    (re.compile(r"\((?:\s*-?\d+\s*,)+\s*-?\d*\s*\)"), "(…)"),  # (13, 14, 8, 10, 6)
    (re.compile(r"\[(?:\s*-?\d+\s*,)*\s*-?\d+\s*\]"), "[…]"),  # [2, 5, 7]
    (re.compile(r"-?\d+\.\d*(?:e[-+]?\d+)?|-?\d+e[-+]?\d+", re.IGNORECASE), "…"),  # 0.0123, 1e-06
    (re.compile(r"(\w)\s*=\s*-?\d+"), r"\1=…"),  # H=4
    (re.compile(r"\b\d{2,}\b"), "…"),  # 13
]


def mistake_cause(output):
    """The cause a failed test names (:func:`failure_message`) with sizes and numbers taken out,
    so that students who made the same mistake at different random sizes group together."""
    cause = failure_message(output)
    for pattern, replacement in _SIZES:
        cause = pattern.sub(replacement, cause)
    return cause


def not_attempted(output):
    """True when the test failed because the answer is still the stub (``NotImplementedError``)."""
    return "NotImplementedError" in f"{output.get('ename', '')} {output.get('evalue', '')}"


def notebook_seconds(nb):
    """Seconds the notebook took to execute, from the grading record or nbclient's cell timing."""
    timing = RunRecord.of(nb).timing
    if "execute_s" in timing:
        return float(timing["execute_s"])
    stamps = []
    for cell in nb.cells:
        execution = cell.get("metadata", {}).get("execution", {})
        for key in ("iopub.execute_input", "shell.execute_reply"):
            if key in execution:
                stamps.append(datetime.fromisoformat(execution[key].replace("Z", "+00:00")))
    return (max(stamps) - min(stamps)).total_seconds() if stamps else None


def run_summary_path(autograded, assignment):
    return Path(autograded) / RUN_RECORDS / assignment / RUN_SUMMARY


def read_run_summary(autograded, assignment):
    """The rows (student, seconds, status) of the grading run's summary, or [] without one."""
    path = run_summary_path(autograded, assignment)
    return json.loads(path.read_text()).get("students", []) if path.exists() else []


def collect(course_dir):
    """An :class:`AssignmentReport` per assignment with submissions in the course's gradebook."""
    coursedir = CourseDirectory(root=str(Path(course_dir).resolve()))
    autograded = Path(coursedir.root) / coursedir.autograded_directory
    reports = []
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        for assignment in gb.assignments:
            if not assignment.num_submissions:
                continue
            report = AssignmentReport(assignment.name, assignment.max_score)
            for submission in assignment.submissions:
                student = submission.student.id
                report.scores[student] = submission.score
                for notebook in submission.notebooks:
                    path = autograded / student / assignment.name / f"{notebook.name}.ipynb"
                    _read_notebook(report, student, path, notebook)
                    if notebook.flagged:
                        kinds = sorted({f.kind for s, f in report.findings if s == student})
                        report.flagged[student] = (
                            f"integrity: {', '.join(kinds)}" if kinds else "flagged by a grader"
                        )
            rows = read_run_summary(autograded, assignment.name)
            if rows:
                report.seconds = {r["student"]: r["seconds"] for r in rows if "seconds" in r}
                report.status = {r["student"]: r.get("status", "") for r in rows}
                report.timing_source = "the summary of the last attncourse grade run"
            else:
                report.timing_source = "execution time recorded in the autograded notebooks"
            reports.append(report)
    return reports


def _read_notebook(report, student, path, notebook):
    graded = {g.name: g for g in notebook.grades}
    try:
        nb = nbformat.read(path, as_version=4)
    except (OSError, ValueError):  # not there (e.g. no submission) or not a notebook
        nb = None
    if nb is None:
        for name, grade in graded.items():
            if grade.cell_type == "code" and grade.auto_score is not None:
                report.tests.setdefault(name, [0, 0, grade.max_score])
                report.tests[name][1] += 1
                report.tests[name][0] += grade.auto_score < grade.max_score
        return
    unreadable = RunRecord.of(nb).unreadable
    if unreadable:
        report.unreadable[student] = unreadable
    for cell in nb.cells:
        if not is_test_cell(cell):
            continue
        name = cell.metadata.nbgrader["grade_id"]
        errors = [o for o in cell.outputs if o.output_type == "error"]
        entry = report.tests.setdefault(name, [0, 0, cell.metadata.nbgrader.get("points", 0)])
        entry[1] += 1
        if errors:
            entry[0] += 1
            if unreadable:
                continue
            if not_attempted(errors[-1]):
                report.not_attempted[name] += 1
            else:
                report.mistakes[(name, mistake_cause(errors[-1]))] += 1
    report.findings += [(student, f) for f in findings_of(nb)]
    for match in RunRecord.of(nb).instance_matches:
        parts = report.instance_matches.setdefault(student, {}).setdefault(match["student"], [])
        parts.append(match["part"])
    seconds = notebook_seconds(nb)
    if seconds is not None:
        report.seconds[student] = report.seconds.get(student, 0.0) + seconds


# --- figures ---------------------------------------------------------------------------


def _axes(width, height):
    fig = Figure(figsize=(width, height))
    return fig, fig.subplots()


def _png(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode()


def score_figure(report):
    fig, ax = _axes(6, 3)
    scores = list(report.scores.values())
    ax.hist(scores, bins=min(20, max(5, len(scores))), range=(0, report.max_score or 1))
    ax.set_xlabel(f"total score (of {report.max_score:g})")
    ax.set_ylabel("students")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"{report.name}: score distribution")
    return _png(fig)


def failure_figure(report):
    names = sorted(report.tests, key=lambda n: report.tests[n][0] / max(report.tests[n][1], 1))
    rates = [100 * report.tests[n][0] / max(report.tests[n][1], 1) for n in names]
    fig, ax = _axes(6, 0.3 * len(names) + 1)
    ax.barh(names, rates, color="tab:red")
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of submissions failing")
    ax.set_title(f"{report.name}: failure rate per test")
    return _png(fig)


def _label(text, width=48, lines=3):
    """A bar label wrapped to ``lines`` lines of ``width`` characters (the rest cut with …)."""
    return textwrap.fill(text, width, max_lines=lines, placeholder=" …")


def mistakes_figure(report, top=10):
    common = report.mistakes.most_common(top)[::-1]
    labels = [_label(f"{name}: {cause}") for (name, cause), _ in common]
    height = 0.22 * sum(label.count("\n") + 1 for label in labels) + 0.25 * len(labels) + 1
    fig, ax = _axes(9, height)
    ax.barh(range(len(labels)), [count for _, count in common], color="tab:orange")
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_xlabel("submissions")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"{report.name}: most common mistakes, by cause")
    return _png(fig)


def findings_figure(report):
    kinds = Counter(f.kind for _, f in report.findings)
    fig, ax = _axes(5, 0.4 * len(kinds) + 1)
    ax.barh(list(kinds), list(kinds.values()), color="tab:purple")
    ax.set_xlabel("findings")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"{report.name}: integrity findings")
    return _png(fig)


def timing_figure(report):
    students = sorted(report.seconds, key=report.seconds.get)
    fig, ax = _axes(6, 0.25 * len(students) + 1)
    ax.barh(students, [report.seconds[s] for s in students], color="tab:green")
    ax.set_xlabel("seconds")
    ax.set_title(f"{report.name}: grading time per student")
    return _png(fig)


# --- page ------------------------------------------------------------------------------

STYLE = """
body { font-family: sans-serif; max-width: 70em; margin: 2em auto; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; }
th { background: #f0f0f0; }
td.num { text-align: right; }
img { display: block; margin: 0.5em 0; }
"""


def _short(text, width):
    return text if len(text) <= width else text[: width - 1] + "…"


def _table(header, rows, numeric=()):
    out = ["<table>", "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>"]
    for row in rows:
        cells = [
            f'<td class="num">{html.escape(str(v))}</td>'
            if i in numeric
            else f"<td>{html.escape(str(v))}</td>"
            for i, v in enumerate(row)
        ]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _figure(png, alt):
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{png}">'


def assignment_section(report):
    scores = list(report.scores.values())
    parts = [f'<h2 id="{html.escape(report.name)}">{html.escape(report.name)}</h2>']
    summary = [
        len(scores),
        f"{statistics.mean(scores):.1f}",
        f"{statistics.median(scores):.1f}",
        f"{min(scores):g}",
        f"{max(scores):g}",
        f"{report.max_score:g}",
    ]
    parts.append(_table(["submissions", "mean", "median", "min", "max", "of"], [summary], range(6)))
    parts.append(_figure(score_figure(report), "score distribution"))

    parts.append("<h3>Tests</h3>")
    if report.tests:
        parts.append(_figure(failure_figure(report), "failure rate per test"))
        rows = [
            (name, f"{failed}/{graded}", f"{100 * failed / max(graded, 1):.0f}%", f"{points:g}")
            for name, (failed, graded, points) in sorted(
                report.tests.items(), key=lambda kv: -kv[1][0] / max(kv[1][1], 1)
            )
        ]
        parts.append(_table(["test", "failed", "rate", "points"], rows, (1, 2, 3)))
    if report.mistakes:
        parts.append("<h3>Most common mistakes, by cause</h3>")
        parts.append(_figure(mistakes_figure(report), "most common mistakes"))
        rows = [(name, cause, n) for (name, cause), n in report.mistakes.most_common(25)]
        parts.append(_table(["test", "likely cause (sizes taken out)", "submissions"], rows, (2,)))
    if report.not_attempted:
        parts.append("<h3>Not attempted</h3>")
        parts.append("<p>Tests that failed because the answer was still the stub.</p>")
        rows = sorted(report.not_attempted.items(), key=lambda kv: -kv[1])
        parts.append(_table(["test", "submissions"], rows, (1,)))
    if report.unreadable:
        parts.append("<h3>Unreadable notebooks</h3>")
        parts.append(_table(["student", "why"], sorted(report.unreadable.items())))

    parts.append("<h3>Flagged for review</h3>")
    if report.flagged:
        parts.append("<p>Ticked in formgrader's <em>Flagged?</em> column.</p>")
        parts.append(_table(["student", "why"], sorted(report.flagged.items())))
    else:
        parts.append("<p>No student is flagged.</p>")

    parts.append("<h3>Integrity findings</h3>")
    if report.findings:
        parts.append(_figure(findings_figure(report), "integrity findings"))
        rows = [(s, f.label or f.part or "", f.kind, f.detail, f.where) for s, f in report.findings]
        parts.append(_table(["student", "part", "kind", "detail", "where"], rows))
    else:
        parts.append("<p>No integrity findings.</p>")
    if report.instance_matches:
        parts.append("<h3>Answers that match another student's instance</h3>")
        parts.append(
            "<p>Hand-computed answers that are, every number of a part, those of a classmate's "
            "own instance (the student's feedback says only &ldquo;another student's "
            "instance&rdquo;).</p>"
        )
        rows = [
            (f"answers of {a} match student {b}'s instance", ", ".join(p))
            for a, matched in sorted(report.instance_matches.items())
            for b, p in sorted(matched.items())
        ]
        parts.append(_table(["finding", "parts"], rows))

    parts.append("<h3>Grading time per student</h3>")
    if report.seconds:
        parts.append(f"<p>Source: {html.escape(report.timing_source)}.</p>")
        parts.append(_figure(timing_figure(report), "grading time per student"))
        rows = [
            (s, f"{t:.1f}", report.status.get(s, ""))
            for s, t in sorted(report.seconds.items(), key=lambda kv: -kv[1])
        ]
        parts.append(_table(["student", "seconds", "status"], rows, (1,)))
    else:
        parts.append("<p>No timing recorded.</p>")
    return "\n".join(parts)


def render(reports, title="Attention course: grading report", similarity=()):
    """The report page's HTML; ``similarity``: assignments with a similarity page beside it."""
    body = [f"<h1>{html.escape(title)}</h1>"]
    if not reports:
        body.append("<p>No graded submissions in the gradebook yet.</p>")
    else:
        links = ", ".join(
            f'<a href="#{html.escape(r.name)}">{html.escape(r.name)}</a>' for r in reports
        )
        body.append(f"<p>Assignments: {links}</p>")
        if similarity:
            pages = ", ".join(
                f'<a href="similarity_{html.escape(name)}.html">{html.escape(name)}</a>'
                for name in similarity
            )
            body.append(f"<p>Similarity across the class: {pages}</p>")
        body += [assignment_section(report) for report in reports]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def build_report(course_dir: str | os.PathLike, out: str | os.PathLike | None = None) -> Path:
    """Write the report of ``course_dir`` to ``out`` (default ``reports/index.html``); return it."""
    out = Path(out) if out else Path(course_dir) / REPORTS / "index.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    reports = collect(course_dir)
    similarity = [r.name for r in reports if (out.parent / f"similarity_{r.name}.html").exists()]
    out.write_text(render(reports, similarity=similarity), encoding="utf-8")
    return out
