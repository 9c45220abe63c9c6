"""Assignment 4 (mla_inference), what is its own: the shared tests are in ``test_assignments``."""

import contextlib
import io

import matplotlib
import matplotlib.pyplot as plt
import pytest
from casetable import (
    assert_no_point_lost,
    calls,
    kernel_requests,
    load,
    run_in_process,
    solution_namespace,
    source_notebook,
)
from cellrun import run_cell

from attncourse.cells import grade_id
from attncourse.judge import verdict

ASSIGNMENT = "mla_inference"


def test_rope_rule_check_runs_the_answer():
    """The rope's rule check has no random input, yet calls the answer before reading its source."""
    ns, sources = solution_namespace(ASSIGNMENT)
    checks = verdict.checks_of(ASSIGNMENT)
    for test in sorted(load(ASSIGNMENT).fixed_inputs):
        assert calls(kernel_requests(checks[test], ns, sources, "secret-a")), test


def test_a_rope_that_is_no_rotation_costs_the_later_parts_too():
    """Carrying rope forward is for rotations: one that scales vectors is not trusted."""
    cos_only = (
        "def rope(x, positions, base=10000.0):\n"
        "    d = x.shape[-1]\n"
        "    i = torch.arange(d // 2, dtype=torch.float64)\n"
        "    angle = positions.to(torch.float64)[..., None] * base ** (-2 * i / d)\n"
        "    return x * angle.cos().repeat_interleave(2, -1).to(x.dtype)\n"
    )
    tests = set(load(ASSIGNMENT).tests)
    results = run_in_process(ASSIGNMENT, {"p1_rope_answer": cos_only}, tests)
    assert set(results) == tests
    failed = {test for test, message in results.items() if message is not None}
    assert {"p1_rope", "p2_mla_forward", "p3_decode_forward", "p3_latent_query"} <= failed


def test_timing_lab_and_model_plot_make_one_quick_pass_while_grading(monkeypatch):
    """Under nbgrader (``NBGRADER_EXECUTION`` set) the lab times every (method, size) once at
    small sizes, and the model plot fits GB/s to both methods and their ratio."""
    matplotlib.use("Agg")
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    ns, _ = solution_namespace(ASSIGNMENT)
    cells = {grade_id(c): c.source for c in source_notebook(ASSIGNMENT).cells}
    with contextlib.redirect_stdout(io.StringIO()):
        for gid in ("p5_timing_lab", "p5_timing_plot"):
            run_cell(cells[gid], ns)
    plt.close("all")
    assert ns["rounds_lab"] == 1 and max(ns["cache_bytes_lab"]) < 2**22
    assert {name: len(runs) for name, runs in ns["timings"].items()} == {"MHA": 4, "MLA": 4}
    assert set(ns["fits_lab"]) == {"MHA", "MLA"}
    assert all(gbps > 0 for gbps, *_ in ns["fits_lab"].values()) and ns["ratio_lab"][0] > 0


TABLE = load(ASSIGNMENT)
RIGHT = [case for case in TABLE.cases if case.correct and not case.alone]
SECRETS = [f"accept-{k}" for k in range(100)]


# slow: about 135 s of CPU for the 36 cases (a decode case 5 s, a rope case 2 s; the decode
# and forward checks take 0.05-0.2 s a secret)
@pytest.mark.slow
@pytest.mark.parametrize("case", RIGHT, ids=[case.id for case in RIGHT])
def test_correct_alternative_keeps_every_point_under_100_secrets(case):
    """Issue 22: every correct alternative (float32 softmax, constants and matmuls included)
    passes its own group's value checks under 100 secrets, each drawing other sizes, weights
    and positions. The rule checks read the source (one run of a small model decides whether
    it works), so one secret per run of ``test_case_in_process`` covers them."""
    tests = [test for test in TABLE.groups[case.group][1] if not test.endswith("_rules")]
    assert_no_point_lost(TABLE, case, SECRETS, tests)
