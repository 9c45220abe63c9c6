"""The statistical visible checks of attention_theory hold with a margin under any draw.

Q1(f)'s sampler check (sample variances within 20% of the covariance the text states) and Lab
6's check (a mean distance within 8 standard errors of a reference simulated in the cell)
compare random draws. A student's correct sampler uses the cell's generator in its own way, so
its draws are in effect random: each check cell runs here under 10 seeds. Every correct
alternative of the case table passes at half the cell's tolerance, and every wrong one fails at
twice it, so both sides keep a factor of 2 to the threshold the student sees.
"""

import contextlib
import io

import nbformat
import pytest
from casetable import load, solution_namespace
from cellrun import run_cell
from visiblecatch import rule_case, visible_exceptions

from attncourse.cells import grade_id
from attncourse.course import ROOT, notebook_path

ASSIGNMENT = "attention_theory"
SEEDS = range(10)
# test cell -> (the tolerance as written in the cell, as halved, as doubled)
TOLERANCES = {
    "f_sample_keys": ("<= 0.2, (", "<= 0.1, (", "<= 0.4, ("),
    "lab_noise_sweep": ("<= 8 * se_demo", "<= 4 * se_demo", "<= 16 * se_demo"),
}
SEED = "manual_seed(0)"


def visible_cell(test):
    """The release's visible check ``test``."""
    nb = nbformat.read(notebook_path(ROOT, "release", ASSIGNMENT), as_version=4)
    return next(c.source for c in nb.cells if grade_id(c) == test)


def passes(source, namespace):
    """True when the check ``source`` passes in a copy of ``namespace``."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            run_cell(source, dict(namespace))
    except AssertionError:
        return False
    return True


def cases(test):
    """(case id, answers, whether ``test`` must pass) of the table's cases of ``test``'s group
    (the rule cases, with right values and a rule broken, aside)."""
    table = load(ASSIGNMENT)
    return [
        (case.id, case.answers, test not in case.fails)
        for case in table.cases
        if table.group_of[test] == case.group
        and not case.alone
        and case.id not in visible_exceptions(ASSIGNMENT)
        and not rule_case(ASSIGNMENT, case.id)  # a rule broken: check_rules' job, not a value's
    ]


@pytest.mark.parametrize("test", sorted(TOLERANCES))
def test_statistical_visible_checks_keep_a_factor_of_two(test):
    source = visible_cell(test)
    written, half, double = TOLERANCES[test]
    assert source.count(written) >= 1 and SEED in source, f"{test} changed: update TOLERANCES"
    failures = []
    for case_id, answers, right in cases(test):
        namespace, _ = solution_namespace(ASSIGNMENT, answers)
        strict = (half if right else double).join(source.split(written))
        for seed in SEEDS:
            check = strict.replace(SEED, f"manual_seed({seed})")
            if passes(check, namespace) != right:
                failures.append((case_id, seed))
    assert not failures, f"within a factor 2 of {test}'s threshold: {failures}"
