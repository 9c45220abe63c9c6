"""Assignment 5's Part 6 run alone: the course's first (imports) cell, then Part 6's cells
of ``source/attention_at_scale``, in this process.

Part 6 needs nothing of Parts 1-5, so it is tested on this small notebook: :func:`verdicts` runs its code cells in order in one namespace (the sweep and
its plot, which train, are left out) and at each test cell reports the visible check (the
cell's own code) and the judge's hidden check (``CHECKS`` of the ``p6_`` cells) under one secret.
"""

import contextlib
import io
import sys

import nbformat
from cellrun import run_cell

import coursecheck
from attncourse.cells import grade_id, is_test_cell
from attncourse.course import ROOT, notebook_path
from attncourse.grading.attention_at_scale import CHECKS
from attncourse.judge import verdict
from attncourse.judge.channel import LocalChannel
from attncourse.judge.history import check_rules
from attncourse.judge.remote import Session, StudentNamespace
from attncourse.pointers import located_cells
from attncourse.prover import book_of
from devtools.submissions import fill, solution_answers

SOURCE = notebook_path(ROOT, "source", "attention_at_scale")
PART6_CHECKS = {gid: check for gid, check in CHECKS.items() if gid.startswith("p6_")}
TRAINS = frozenset({"p6_experiment", "p6_plot"})  # the sweep (minutes) and its plot


def first_cell():
    """The course's first cell (its imports)."""
    return nbformat.read(SOURCE, as_version=4).cells[1]


def source_notebook():
    """The course's first cell, then Part 6's cells (solutions in place)."""
    nb = part6_notebook()
    nb.cells.insert(0, first_cell())
    return nb


def part6_notebook():
    """Part 6's cells of the source notebook (those whose grade id starts with ``p6_``)."""
    nb = nbformat.read(SOURCE, as_version=4)
    nb.cells = [c for c in nb.cells if (grade_id(c) or "").startswith("p6_")]
    return nb


SOLUTION = solution_answers(source_notebook())


def verdicts(answers=None, secret=None, hidden=True):
    """{test cell: (visible failure or None, hidden failure or None)} of the solution with
    ``answers`` replacing its answer cells; ``hidden=False`` skips the judge."""
    nb = fill(source_notebook(), {**SOLUTION, **(answers or {})})
    book = book_of("attention_at_scale", [nb])
    secret = secret or verdict.new_secret()
    ns = {"__name__": "__main__"}
    student = StudentNamespace(Session(LocalChannel(ns)), located_cells(nb))
    original = coursecheck.check_rules
    coursecheck.check_rules = lambda gid: check_rules(gid, book, sys._getframe(1).f_globals)
    out = {}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            for index, cell in enumerate(nb.cells):
                gid = grade_id(cell)
                if cell.cell_type != "code" or gid in TRAINS:
                    continue
                try:
                    run_cell(cell.source, ns)
                    seen = None
                except Exception as error:  # noqa: BLE001 - a failing cell is a verdict
                    seen = f"{type(error).__name__}: {error}"
                if is_test_cell(cell):
                    judged = (
                        verdict.run_check(PART6_CHECKS[gid], student, secret, index)
                        if hidden
                        else None
                    )
                    out[gid] = (seen, judged)
    finally:
        coursecheck.check_rules = original
    return out
