"""Assignment 5's Part 6 fragment run alone: the course's first (imports) cell, then the cells
of ``fragment/part6.ipynb``, in this process.

The rest of ``attention_at_scale`` is built on another branch, so Part 6 is tested on this
small notebook: :func:`verdicts` runs its code cells in order in one namespace (the sweep and
its plot, which train, are left out) and at each test cell reports the visible check (the
cell's own code) and the judge's hidden check (``EXPERIMENT_CHECKS``) under one secret.
"""

import contextlib
import io
import sys
from pathlib import Path

import nbformat
from cellrun import run_cell

import coursecheck
from attncourse.cells import grade_id, is_test_cell
from attncourse.course import ROOT, notebook_path
from attncourse.grading.attention_at_scale.experiment import EXPERIMENT_CHECKS
from attncourse.judge import verdict
from attncourse.judge.channel import LocalChannel
from attncourse.judge.history import check_rules
from attncourse.judge.remote import Session, StudentNamespace
from attncourse.pointers import located_cells
from attncourse.prover import book_of
from attncourse.submissions import fill, solution_answers

FRAGMENT = ROOT / "fragment" / "part6.ipynb"
TRAINS = frozenset({"p6_experiment", "p6_plot"})  # the sweep (minutes) and its plot


def first_cell():
    """The course's first cell: attention_at_scale's once it exists, else mla_inference's."""
    for assignment in ("attention_at_scale", "mla_inference"):
        path = notebook_path(ROOT, "source", assignment)
        if Path(path).exists():
            return nbformat.read(path, as_version=4).cells[1]
    raise FileNotFoundError("no source notebook to take the first cell from")


def source_notebook():
    """The course's first cell, then the fragment (solutions in place)."""
    nb = nbformat.read(FRAGMENT, as_version=4)
    nb.cells.insert(0, first_cell())
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
                        verdict.run_check(EXPERIMENT_CHECKS[gid], student, secret, index)
                        if hidden
                        else None
                    )
                    out[gid] = (seen, judged)
    finally:
        coursecheck.check_rules = original
    return out
