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
    CODE_MIN_RARE,
    CODE_MIN_SHARED,
    CODE_THRESHOLD,
    TEXT_MIN_SHARED,
    TEXT_THRESHOLD,
    Match,
    class_answers,
    class_weights,
    compare,
    parts_of,
    shared_lines,
)
from attncourse.similarity.rarity import COMMON_MIN, COMMON_SHARE, common_count

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
mark.common { background: #e4e4e4; }
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


def _marked(source, rare, common):
    """``source`` escaped, one line at a time: lines in ``rare`` marked, lines only in
    ``common`` greyed."""
    out = []
    for number, line in enumerate(source.split("\n"), start=1):
        text = html.escape(line) or " "
        if number in rare:
            text = f"<mark>{text}</mark>"
        elif number in common:
            text = f'<mark class="common">{text}</mark>'
        out.append(text)
    return "<pre>" + "\n".join(out) + "</pre>"


def _explained(assignment, students):
    """What the score counts and what it leaves out, in an instructor's words."""
    return (
        f"<p>{students} submissions compared, part by part. For each part, each pair's "
        "score is the share of the shorter answer that the other answer has too, once "
        "what students share without copying is taken out:</p><ul>"
        "<li><strong>the release</strong>: the stub each student starts from (signatures, docstrings, "
        "<code>super().__init__()</code>), the course's visible code and the questions never "
        "count;</li>"
        "<li><strong>what copying hides</strong> does not hide it: variable names, numbers and strings, "
        "comments, blank lines and formatting, docstrings, dead code and the order of "
        "definitions are ignored;</li>"
        "<li><strong>what many classmates wrote alike</strong> counts less, and not at all once "
        f"{COMMON_SHARE:.0%} of the class (and at least {COMMON_MIN} students) wrote it: here "
        f"{common_count(students):g} of {students}, fewer on a part some left blank. A "
        "passage only two students share counts fully. The lines the task dictates (the "
        "four <code>nn.Linear</code> of an attention layer) and an idiom many reach for (the "
        "same <code>torch.einsum</code>) are no evidence that two students worked "
        "together.</li></ul>"
        f"<p>Code is flagged from a score of {CODE_THRESHOLD} when at least "
        f"{CODE_MIN_SHARED} fingerprints (a passage of several lines) are shared and they "
        f"weigh at least {CODE_MIN_RARE} once what the class shares is discounted (a "
        "fingerprint only the two share weighs 1); written answers from "
        f"{TEXT_THRESHOLD} with at least {TEXT_MIN_SHARED} shared five-word phrases. Below, "
        "lines shared and rare in the class are <mark>marked</mark>, lines shared but common "
        'in the class <mark class="common">greyed</mark>. A flag is a reason to read both '
        "answers, not a finding of copying. Every pair sharing anything is in "
        f"similarity_{_e(assignment)}.csv.</p>"
    )


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
        _explained(assignment, len(answers)),
        f"<p>{len(flagged)} answers in {len(by_pair)} "
        f"{'pair' if len(by_pair) == 1 else 'pairs'} of students flagged.</p>",
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
    rarity = {}
    for (a, b), ms in ranked[:SHOWN]:
        body.append(f'<h2 id="{_e(a)}--{_e(b)}">{_e(a)} and {_e(b)}</h2>')
        for m in sorted(ms, key=lambda m: -m.score):
            x, y = answers[a][m.part], answers[b][m.part]
            if m.part not in rarity:
                rarity[m.part] = class_weights(answers, m.part)
            rare, every = shared_lines(x, y, rarity[m.part]), shared_lines(x, y)
            body.append(
                f"<h3>{_e(m.part)}: score {m.score:.2f}, {m.shared} fingerprints shared, "
                f"weighing {m.rare:g} once what the class shares is discounted</h3>"
                f'<table class="pair"><tr><th>{_e(a)}</th><th>{_e(b)}</th></tr>'
                f"<tr><td>{_marked(x.source, rare[0], every[0])}</td>"
                f"<td>{_marked(y.source, rare[1], every[1])}</td></tr></table>"
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
