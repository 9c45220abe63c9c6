"""The report's matplotlib figures, as base64 PNG; each title says what the figure shows."""

from __future__ import annotations

import base64
import io
import textwrap
from collections import Counter

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter

from attncourse.report.model import AssignmentReport, MistakeGroup, Submission

NOT_SHOWN = "#d9d9d9"  # a cell of the matrix with no score: not attempted, or awaiting a grader


def _axes(width: float, height: float):
    fig = Figure(figsize=(width, height))
    return fig, fig.subplots()


def png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode()


def _label(text: str, width: int = 48, lines: int = 3) -> str:
    """A label wrapped to ``lines`` lines of ``width`` characters (the rest cut with …)."""
    return textwrap.fill(text, width, max_lines=lines, placeholder=" …")


def _title(ax, text: str, width: int = 70) -> None:
    ax.set_title(textwrap.fill(text, width), fontsize=10)


def score_figure(report: AssignmentReport) -> str:
    scores = [s.score for s in report.graded()]
    fig, ax = _axes(6, 2.6)
    ax.hist(scores, bins=min(20, max(5, len(scores))), range=(0, report.max_score or 1))
    ax.set_xlabel(f"total score (of {report.max_score:g})")
    ax.set_ylabel("students")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    _title(ax, f"{report.name}: total scores of the {len(scores)} graded submissions")
    return png(fig)


def failure_figure(report: AssignmentReport) -> str:
    parts = report.tested_parts()
    rates = [report.failure_rate(p) for p in parts]
    shares = [100 * len(f) / len(a) if a else 0 for f, a in rates]
    fig, ax = _axes(max(5, 0.5 * len(parts) + 1.5), 3)
    bars = ax.bar(parts, shares, color="tab:red")
    ax.bar_label(bars, [f"{len(f)}/{len(a)}" for f, a in rates], fontsize=8)
    ax.set_ylim(0, 110)
    ax.yaxis.set_major_formatter(PercentFormatter())
    ax.set_ylabel("failed a test")
    ax.tick_params(axis="x", labelrotation=45, labelsize=8)
    _title(ax, f"{report.name}: share of the students who attempted each part and failed a test")
    return png(fig)


def heatmap(report: AssignmentReport, rows: list[Submission], names: dict[str, str]) -> str:
    """Students (rows, in the table's order) × parts (columns): share of each part's points."""
    parts = report.parts
    values = np.full((len(rows), len(parts)), np.nan)
    marks = [["" for _ in parts] for _ in rows]
    for i, sub in enumerate(rows):
        for j, part in enumerate(parts):
            result = sub.parts.get(part)
            if result is None or not result.attempted:
                marks[i][j] = "–"
            elif result.fraction is None:
                marks[i][j] = "…"
            else:
                values[i, j] = result.fraction
                marks[i][j] = f"{100 * result.fraction:.0f}"
    fig, ax = _axes(max(5, 0.55 * len(parts) + 2.5), 0.35 * len(rows) + 1.6)
    cmap = colormaps["RdYlGn"].with_extremes(bad=NOT_SHOWN)
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(parts)), parts, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), [names.get(s.student, s.student) for s in rows], fontsize=8)
    if len(rows) * len(parts) <= 600:
        for i, row in enumerate(marks):
            for j, mark in enumerate(row):
                ax.text(j, i, mark, ha="center", va="center", fontsize=7)
    fig.colorbar(image, ax=ax, format=PercentFormatter(1.0), fraction=0.03, pad=0.02)
    _title(
        ax,
        f"{report.name}: each graded student's share of each part's points "
        "(– not attempted, … awaiting a grader)",
    )
    return png(fig)


def part_scores_figure(report: AssignmentReport) -> str:
    """Per part, the spread of scores (share of its graded points) of those who attempted it."""
    parts = report.parts
    data = [
        [
            100 * s.parts[p].fraction
            for s in report.graded()
            if s.attempted(p) and s.parts[p].fraction is not None
        ]
        for p in parts
    ]
    fig, ax = _axes(max(5, 0.55 * len(parts) + 1.5), 3)
    shown = [i for i, d in enumerate(data) if d]
    if shown:
        ax.boxplot([data[i] for i in shown], positions=shown, widths=0.5, showfliers=False)
    jitter = np.random.default_rng(0)
    for i in shown:
        ax.scatter(i + jitter.uniform(-0.15, 0.15, len(data[i])), data[i], s=12, alpha=0.6)
    ax.set_xticks(range(len(parts)), parts, rotation=45, ha="right", fontsize=8)
    ax.set_xlim(-0.7, len(parts) - 0.3)
    ax.set_ylim(-5, 105)
    ax.yaxis.set_major_formatter(PercentFormatter())
    ax.set_ylabel("share of the part's points")
    _title(ax, f"{report.name}: score per part of the students who attempted it")
    return png(fig)


def mistakes_figure(report: AssignmentReport, groups: list[MistakeGroup], top: int = 10) -> str:
    shown = groups[:top][::-1]
    labels = [_label(g.cause.text) for g in shown]
    height = 0.22 * sum(label.count("\n") + 1 for label in labels) + 0.25 * len(labels) + 1
    fig, ax = _axes(8, height)
    colors = ["tab:orange" if g.cause.named else "tab:gray" for g in shown]
    ax.barh(range(len(shown)), [len(g.students) for g in shown], color=colors)
    ax.set_yticks(range(len(shown)), labels, fontsize=8)
    ax.set_xlabel("students")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    _title(
        ax,
        f"{report.name}: students per mistake (orange: the cause the grader named; "
        "gray: an error with no named cause)",
    )
    return png(fig)


def _stacked(ax, labels: list[str], counts: dict[str, Counter], ylabel: str) -> None:
    """Bars over ``labels`` (every label shown, zero or not), stacked by kind."""
    kinds = sorted({k for c in counts.values() for k in c})
    bottom = np.zeros(len(labels))
    for kind in kinds:
        heights = np.array([counts.get(x, Counter())[kind] for x in labels], dtype=float)
        ax.bar(labels, heights, bottom=bottom, label=kind)
        bottom += heights
    if kinds:
        ax.legend(fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))


def findings_figure(report: AssignmentReport) -> str:
    """Per part (every part shown), the students with an integrity finding of the scan, by
    kind, and those whose tests the judge failed for a rule it could not verify."""
    fig, ax = _axes(max(5, 0.5 * len(report.parts) + 1.5), 3)
    _stacked(ax, report.parts, report.integrity_by_part(), "findings (a student once per kind)")
    ax.tick_params(axis="x", labelrotation=45, labelsize=8)
    _title(
        ax,
        f"{report.name}: integrity findings per part, by kind (the scan's, and tests failed "
        "for a rule the judge could not verify)",
    )
    return png(fig)


def timing_figure(report: AssignmentReport, names: dict[str, str]) -> str:
    students = sorted(report.seconds, key=report.seconds.get)
    fig, ax = _axes(6, 0.25 * len(students) + 1)
    ax.barh([names.get(s, s) for s in students], [report.seconds[s] for s in students])
    ax.set_xlabel("seconds")
    _title(ax, f"{report.name}: seconds the grader took per student")
    return png(fig)


def trend_figure(trend: dict[str, list[float | None]], assignments: list[str]) -> str:
    """One line per student: the share of the graded points, assignment by assignment."""
    fig, ax = _axes(7, 3.2)
    labelled = len(trend) <= 12
    for name, shares in trend.items():
        if all(v is None for v in shares):
            continue  # nothing graded: the table says why
        ys = [np.nan if v is None else 100 * v for v in shares]
        ax.plot(assignments, ys, marker="o", label=name if labelled else None, alpha=0.8)
    if labelled and trend:
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1, 0.5))
    ax.set_ylim(-5, 105)
    ax.yaxis.set_major_formatter(PercentFormatter())
    ax.set_ylabel("share of the graded points")
    ax.tick_params(axis="x", labelsize=8)
    _title(ax, "Each student's share of the graded points, assignment by assignment (course order)")
    return png(fig)


def integrity_overview_figure(counts: dict[str, Counter], assignments: list[str]) -> str:
    """Per assignment (course order), students × parts with an integrity finding, by kind."""
    fig, ax = _axes(7, 3)
    _stacked(ax, assignments, counts, "findings (a student once per part and kind)")
    ax.tick_params(axis="x", labelsize=8)
    _title(
        ax,
        "Integrity findings and tests failed for a rule the judge could not verify, per "
        "assignment (course order), by kind",
    )
    return png(fig)
