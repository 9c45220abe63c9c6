"""Assignment 3 (attention_variants), what is its own: the shared tests are in ``test_assignments``.

Its grade ids carry their part (``p5_mha``), which is how its case table groups them, and
the visible checks of its test cells (what the student's own kernel runs) must accept
every correct MyMHA and MyGQA and show the grouping and scale mistakes before submission.
"""

import re

import pytest
from casetable import load, source_notebook
from cellrun import fresh_namespace, run_cell

from attncourse.cells import grade_id, is_answer, is_test_cell
from attncourse.course import ROOT
from attncourse.submissions import solution_submission

ASSIGNMENT = "attention_variants"
TABLE = load(ASSIGNMENT)
CASES = {case.name: case for case in TABLE.cases}
EXPERIMENT_TEST = "p13_experiment_test"


def test_grade_ids_follow_the_part_prefixes():
    nb = source_notebook(ASSIGNMENT)
    code = [c for c in nb.cells if c.cell_type == "code"]
    graded = [grade_id(c) for c in code if is_answer(c) or is_test_cell(c)]
    for gid in graded:
        assert re.fullmatch(r"p\d+_[a-z0-9_]+", gid), gid


def visible_failures(answers, tests):
    """Run the solution with ``answers`` in this process, and the visible checks of ``tests``
    (the test cells' own source, as the student's kernel runs it): {test: None or the error}."""
    nb = solution_submission(ROOT, ASSIGNMENT, answers)
    ns = fresh_namespace()
    results = {}
    for cell in nb.cells:
        gid = grade_id(cell)
        if cell.cell_type != "code" or gid in TABLE.display_only or gid == "setup_imports":
            continue
        if is_test_cell(cell) and gid not in tests:
            continue
        if gid == "p13_experiment" and EXPERIMENT_TEST not in tests:
            continue  # the full-size experiment only where its check is asked for
        try:
            run_cell(cell.source, ns)
        except Exception as error:  # a failing visible check, or an answer that raises
            if gid in tests:
                results[gid] = f"{type(error).__name__}: {error}"
            continue
        if gid in tests:
            results[gid] = None
    return results


def test_solution_passes_every_visible_check():
    assert visible_failures({}, set(TABLE.tests)) == dict.fromkeys(TABLE.tests)


VISIBLE_P5, VISIBLE_P7 = "p5_mha_values_test", "p7_gqa_interleaved_heads_test"
VISIBLE_RIGHT = [c for c in TABLE.cases if c.correct and set(c.answers) & {"p5_mha", "p7_gqa"}]


@pytest.mark.parametrize("case", VISIBLE_RIGHT, ids=[c.name for c in VISIBLE_RIGHT])
def test_visible_by_hand_checks_accept_every_correct_mha_and_gqa(case):
    assert visible_failures(case.answers, {VISIBLE_P5, VISIBLE_P7}) == dict.fromkeys(
        {VISIBLE_P5, VISIBLE_P7}
    )


# Mistakes the visible checks must show before submission (issues 12 and 22): the grouping,
# the scale, and the reduced model's missing sqrt(r/d), also in the experiment's relative_error.
VISIBLE_CATCHES = {
    "p3_missing_scale": ("p3_softmax_argument_values_test", "1/sqrt(D_qk) scale is missing"),
    "p5_missing_scale": (VISIBLE_P5, "divided by sqrt(D_qk)"),
    "p5_scale_D_v": (VISIBLE_P5, "divided by sqrt(D_qk)"),
    "p5_softmax_over_queries": (VISIBLE_P5, "softmax taken over the keys"),
    "p7_contiguous_repeat_interleave": (VISIBLE_P7, "not head 2 // (H/G) = 1 (contiguous)"),
    "p7_contiguous_index": (VISIBLE_P7, "not head 2 // (H/G) = 1 (contiguous)"),
    "p7_missing_scale": (VISIBLE_P7, "divided by sqrt(D_qk)"),
    "p13_missing_sqrt_r_over_d": ("p13_reduced_matrices_test", "equation (1)"),
}


@pytest.mark.parametrize("name", sorted(VISIBLE_CATCHES))
def test_visible_checks_show_grouping_and_scale_mistakes(name):
    test, words = VISIBLE_CATCHES[name]
    error = visible_failures(CASES[name].answers, {test})[test]
    assert error is not None and words in error, (name, error)


def test_experiment_shows_a_missing_sqrt_r_over_d():
    """With the course's scaled data the experiment itself discriminates: relative_error ~0.2."""
    answers = CASES["p13_missing_sqrt_r_over_d"].answers
    error = visible_failures(answers, {EXPERIMENT_TEST})[EXPERIMENT_TEST]
    assert error is not None and "is too large" in error, error
