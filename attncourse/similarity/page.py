"""``attncourse similarity ASSIGNMENT``: ``reports/similarity_<assignment>.csv`` and ``.html``.

The CSV has one row per pair of students and part that share fingerprints (pairs sharing
none are left out), columns ``student_a, student_b, part, score, flagged``. The HTML page
ranks the flagged pairs and shows each flagged part's two answers side by side, the lines
in shared fingerprints marked. Everything a student wrote (and every student id) is
escaped, and the page carries a Content-Security-Policy that allows no script and nothing
from elsewhere: a student's answer is text to the reader, never markup.
"""

import csv
import html
import os
from collections import defaultdict
from pathlib import Path

from attncourse.constants import REPORTS
from attncourse.similarity.compare import (
    CODE_MIN_SHARED,
    CODE_THRESHOLD,
    TEXT_MIN_SHARED,
    TEXT_THRESHOLD,
    Match,
    class_answers,
    compare,
    parts_of,
    shared_lines,
)

COLUMNS = ("student_a", "student_b", "part", "score", "flagged")

STYLE = """
body { font-family: sans-serif; max-width: 90em; margin: 2em auto; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { text-align: right; }
pre { margin: 0; font-size: 0.85em; white-space: pre-wrap; }
table.pair { width: 100%; table-layout: fixed; }
mark { background: #ffe08a; }
"""
POLICY = "default-src 'none'; style-src 'unsafe-inline'"
SHOWN = 100  # pairs whose answers the page shows side by side (the others: table and CSV)


def csv_path(course, assignment):
    return Path(course) / REPORTS / f"similarity_{assignment}.csv"


def html_path(course, assignment):
    return Path(course) / REPORTS / f"similarity_{assignment}.html"


def write_csv(path: Path, matches: list[Match]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        for m in matches:
            writer.writerow([m.student_a, m.student_b, m.part, f"{m.score:.3f}", int(m.flagged)])


def _marked(source, lines):
    """``source`` escaped, one line at a time, the lines in ``lines`` marked."""
    out = []
    for number, line in enumerate(source.split("\n"), start=1):
        text = html.escape(line) or " "
        out.append(f"<mark>{text}</mark>" if number in lines else text)
    return "<pre>" + "\n".join(out) + "</pre>"


def _e(value):
    return html.escape(str(value))


def _pair_link(a, b, shown):
    names = f"{_e(a)} and {_e(b)}"
    return f'<a href="#{_e(a)}--{_e(b)}">{names}</a>' if shown else names


def render(assignment, matches, answers, skipped):
    """The similarity page's HTML."""
    flagged = [m for m in matches if m.flagged]
    by_pair = defaultdict(list)
    for m in flagged:
        by_pair[(m.student_a, m.student_b)].append(m)
    ranked = sorted(
        by_pair.items(), key=lambda kv: (-len(kv[1]), -max(m.score for m in kv[1]), kv[0])
    )
    title = f"Similarity: {assignment}"
    body = [
        f"<h1>{_e(title)}</h1>",
        f"<p>{len(answers)} submissions compared, part by part; {len(flagged)} answers in "
        f"{len(by_pair)} pairs of students flagged. Code: flagged from a score of "
        f"{CODE_THRESHOLD} with at least {CODE_MIN_SHARED} shared fingerprints; written "
        f"answers: from {TEXT_THRESHOLD} with at least {TEXT_MIN_SHARED} shared shingles. "
        "The score is the share of the shorter answer's fingerprints the other has too, "
        "after names, literals, comments, formatting and the order of definitions are "
        "normalised and the release's own text is taken out. A flag is a reason to read "
        "both answers, not a finding of copying. Every pair sharing anything is in "
        f"similarity_{_e(assignment)}.csv.</p>",
    ]
    if skipped:
        items = "".join(f"<li>{_e(s)}: {_e(why)}</li>" for s, why in sorted(skipped.items()))
        body.append(f"<p>Not compared:</p><ul>{items}</ul>")
    if not ranked:
        body.append("<p>No pair of students flagged.</p>")
    else:
        rows = "".join(
            f'<tr><td>{_pair_link(a, b, rank < SHOWN)}</td><td class="num">{len(ms)}</td>'
            f'<td class="num">{max(m.score for m in ms):.2f}</td>'
            f"<td>{_e(', '.join(m.part for m in ms))}</td></tr>"
            for rank, ((a, b), ms) in enumerate(ranked)
        )
        body.append(
            "<h2>Flagged pairs</h2><table><tr><th>students</th><th>parts flagged</th>"
            f"<th>highest score</th><th>parts</th></tr>{rows}</table>"
        )
    if len(ranked) > SHOWN:
        body.append(
            f"<p>The answers of the first {SHOWN} pairs are shown below; the other "
            f"{len(ranked) - SHOWN} pairs' flagged parts are in the table above.</p>"
        )
    for (a, b), ms in ranked[:SHOWN]:
        body.append(f'<h2 id="{_e(a)}--{_e(b)}">{_e(a)} and {_e(b)}</h2>')
        for m in sorted(ms, key=lambda m: -m.score):
            x, y = answers[a][m.part], answers[b][m.part]
            lines_a, lines_b = shared_lines(x, y)
            body.append(
                f"<h3>{_e(m.part)}: score {m.score:.2f}, {m.shared} fingerprints shared</h3>"
                f'<table class="pair"><tr><th>{_e(a)}</th><th>{_e(b)}</th></tr>'
                f"<tr><td>{_marked(x.source, lines_a)}</td>"
                f"<td>{_marked(y.source, lines_b)}</td></tr></table>"
            )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
        f"<title>{_e(title)}</title><style>{STYLE}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def similarity_report(course: str | os.PathLike, assignment: str) -> tuple[Path, Path, int]:
    """Compare the submissions of ``assignment`` in ``course``; write the CSV and the page.

    Returns (CSV path, HTML path, number of flagged answers)."""
    releases, answers, skipped = class_answers(Path(course), assignment)
    if not releases:
        raise FileNotFoundError(f"no release notebook of {assignment} in {course}")
    matches = compare(answers, parts_of(releases, assignment))
    csv_out, html_out = csv_path(course, assignment), html_path(course, assignment)
    csv_out.parent.mkdir(parents=True, exist_ok=True)
    write_csv(csv_out, matches)
    html_out.write_text(render(assignment, matches, answers, skipped), encoding="utf-8")
    return csv_out, html_out, sum(m.flagged for m in matches)
