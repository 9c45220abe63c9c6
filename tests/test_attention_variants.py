"""The hidden tests of ``attention_variants`` accept every correct answer and reject every wrong one.

Two layers over the mutation table in ``cases_attention_variants.py``:

* fast, in-process: each case's answer cells replace the solution's and the
  judge runs the checks of its part's test cells (``CHECKS`` of
  :mod:`attncourse.grading.attention_variants`) through
  :func:`casetable.run_in_process`, the one in-process runner of the case tables:
  the notebook's cells run in a namespace of this process and the checks reach it
  through the same request/reply encoding a kernel uses. Tampering cases
  (``alone``) rebind torch, numpy or builtins of the process they run in, so they
  run only in the slow layer, in sandboxed kernels;
* slow, the real thing: every case, the instructor's solution and the untouched
  release are autograded by ``nbgrader autograde`` in one run. Cases that do not
  share an answer cell or a dependency are packed into the same submission
  (``pack``), which keeps the run to a few dozen kernels; the assertions still
  check each case's own cells and that no other cell lost a point.
"""

import re
import sys
import time

import nbformat
import pytest
from cases_attention_variants import CASES, Case
from casetable import DISPLAY_ONLY, run_in_process
from cellrun import fresh_namespace, run_cell

from attncourse.autograde import autograde_submissions
from attncourse.cells import grade_id, is_answer, is_test_cell
from attncourse.course import ROOT, notebook_path
from attncourse.grading import attention_variants as av
from attncourse.submissions import solution_submission

ASSIGNMENT = "attention_variants"
SOURCE = nbformat.read(notebook_path(ROOT, "source", ASSIGNMENT), as_version=4)
CELLS = [(grade_id(c), c) for c in SOURCE.cells if c.cell_type == "code"]
TESTS = {
    gid: int(c.metadata["nbgrader"]["points"])
    for gid, c in CELLS
    if c.metadata.get("nbgrader", {}).get("grade") and gid
}
ANSWERS = [gid for gid, c in CELLS if is_answer(c)]
CODING_ANSWERS = [gid for gid in ANSWERS if gid != "p13_experiment"] + ["p13_experiment"]
EXPERIMENT_TEST = "p13_experiment_test"

# Test cells that read answer cells of another part (see the module docstring of the table).
DEPENDS = {
    "p13_experiment_test": {"p5_mha", "p13_reduced_matrices", "p13_experiment"},
    "p8_mha_as_gqa_test": {"p7_gqa", "p8_mha_as_gqa"},
}


def part(gid):
    return gid.split("_")[0]


def judged(case):
    """Test cells a case is judged on: its parts' tests and the cells it must lose."""
    parts = {part(g) for g in case.cells}
    return {t for t in TESTS if part(t) in parts} | set(case.lose)


def dependencies(test):
    return DEPENDS.get(test, {a for a in ANSWERS if part(a) == part(test)})


def conflict(a, b):
    """True when one case could hide the other's verdict in a shared submission.

    They may not replace the same cell, nor share a test cell that reads both
    cases' answers unless both expect that test to keep its points (a full score
    then vouches for both answers; a loss would show as a failure, never as a
    wrong answer passing).
    """
    if set(a.cells) & set(b.cells):
        return True
    for x, y in ((a, b), (b, a)):
        for test in judged(x):
            if dependencies(test) & set(y.cells) and (test in x.lose or test in y.lose):
                return True
    return False


def pack(cases):
    """Group cases into submissions so that no case can change another's verdicts."""
    groups = []
    for case in cases:
        if not case.alone:
            for group in groups:
                if not group[0].alone and not any(conflict(case, other) for other in group):
                    group.append(case)
                    break
            else:
                groups.append([case])
        else:
            groups.append([case])
    return groups


# ------------------------------------------------------------------ the table itself


def test_case_names_are_unique():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_cases_name_real_cells():
    for case in CASES:
        assert set(case.cells) <= set(ANSWERS), (case.name, set(case.cells) - set(ANSWERS))
        assert set(case.lose) <= set(TESTS), (case.name, set(case.lose) - set(TESTS))


def test_checks_cover_exactly_the_test_cells():
    """Every test cell of the source notebook has its check in CHECKS, and every check a cell."""
    cells = {gid for gid, c in CELLS if is_test_cell(c)}
    assert cells == set(TESTS)
    assert set(av.CHECKS) == cells, (
        f"test cells without a check: {sorted(cells - set(av.CHECKS))}; "
        f"checks without a test cell: {sorted(set(av.CHECKS) - cells)}"
    )
    assert all(callable(check) for check in av.CHECKS.values())


@pytest.mark.parametrize("answer", CODING_ANSWERS)
def test_every_coding_answer_has_four_correct_and_eight_wrong_cases(answer):
    cases = [c for c in CASES if answer in c.cells]
    n_correct = sum(not c.lose for c in cases)
    n_wrong = sum(bool(c.lose) for c in cases)
    assert n_correct >= 4 and n_wrong >= 8, (answer, n_correct, n_wrong)


def test_packing_never_mixes_dependent_cases():
    for group in pack(CASES):
        for i, a in enumerate(group):
            assert not a.alone or len(group) == 1
            for b in group[i + 1 :]:
                assert not conflict(a, b), (a.name, b.name)


# ------------------------------------------------------------------- fast, in-process


def in_process_tests(case):
    """The test cells a case is judged on in process.

    The Part 13 experiment runs at the task's full size (seconds): in process it is
    judged for the cases that change the experiment cell and for those whose
    mistake elsewhere must cost it (``lose``); the autograded run judges it for all.
    """
    tests = judged(case)
    if "p13_experiment" not in case.cells and EXPERIMENT_TEST not in case.lose:
        tests.discard(EXPERIMENT_TEST)
    return tests


def judge(case, tests=None):
    """test grade_id -> failure message (None when it passed), judged in this process."""
    tests = in_process_tests(case) if tests is None else set(tests)
    answers = dict(case.cells)
    if EXPERIMENT_TEST not in tests:
        answers.setdefault("p13_experiment", "pass")  # no full-size run where nothing reads it
    return run_in_process(ASSIGNMENT, answers, tests)


@pytest.fixture(autouse=True)
def _close_figures():
    """The notebook's figure cells run in this process: close their figures after each case."""
    yield
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")


# Tampering cases would tamper with pytest itself: they run only in sandboxed kernels.
FAST = [c for c in CASES if not c.alone]


@pytest.mark.parametrize("case", FAST, ids=[c.name for c in FAST])
def test_case_in_process(case: Case):
    verdicts = judge(case)
    assert set(verdicts) == in_process_tests(case)
    for test, error in sorted(verdicts.items()):
        if test in case.lose:
            assert error is not None, f"{case.name}: {test} passed a wrong answer"
        else:
            assert error is None, f"{case.name}: {test} rejected a correct answer: {error}"


def test_release_stubs_earn_no_autograded_point_in_process():
    release = nbformat.read(notebook_path(ROOT, "release", ASSIGNMENT), as_version=4)
    stubs = {grade_id(c): c.source for c in release.cells if is_answer(c) and c.cell_type == "code"}
    verdicts = judge(Case("release", stubs), tests=TESTS)
    assert set(verdicts) == set(TESTS)
    assert all(verdicts.values()), [t for t, error in verdicts.items() if error is None]


def hidden_messages(case):
    """The judge's failure messages for the cells a case must lose (the experiment's only
    for a case of the experiment cell)."""
    tests = set(case.lose)
    if "p13_experiment" not in case.cells:
        tests.discard(EXPERIMENT_TEST)
    return " ".join(m for m in judge(case, tests=tests).values() if m)


def test_failure_messages_name_the_mistake():
    """A few named mistakes, with the words the student reads."""
    expected = {
        "p3_missing_scale": "missing the 1/sqrt(D_qk) scaling",
        "p5_merge_without_moving_head_axis": "heads merged without moving the head axis",
        "p5_heads_split_the_wrong_way": "heads split the wrong way",
        "p7_bias_present": "bias present",
        "p7_contiguous_repeat_interleave": "contiguous grouping",
        "p7_weight_copies": "copies of the K projection",
        "p10_np_repeat": "np.repeat",
        "p13_missing_sqrt_r_over_d": "missing the sqrt(r/d) factor",
        "p13_wrong_head_split_of_W_UK": "wrong head split of W_UK",
        "p13_wrong_head_split_of_W_O": "wrong head split of W_O",
        "p13_intermediate_tensor": "an intermediate computed on line",
        "p5_loop_over_heads": "a for loop",
        "p10_torch_svd": "numpy only",
        "p5_fused_attention": "build the attention by hand",
        "p14_latent_twice": "cached once",
        "p13x_mse_not_square_rooted": "not its square root",
        "p13x_query_and_key_swapped": "W_Q holds the key projection",
        "p13x_reduced_output_copied": "a copy of output_vanilla",
        "p13x_outputs_before_loading": "computed after the weights were loaded",
    }
    by_name = {c.name: c for c in CASES}
    for name, words in expected.items():
        messages = hidden_messages(by_name[name])
        assert words in messages, (name, messages)


# ------------------------------------------------- the visible checks students run

FIGURES = {gid for gid, _ in CELLS if gid.startswith("fig_")} | DISPLAY_ONLY


def visible_failures(answers, tests):
    """Run the solution with ``answers`` in this process, and the visible checks of ``tests``
    (the test cells' own source, as the student's kernel runs it): {test: None or the error}."""
    nb = solution_submission(ROOT, ASSIGNMENT, answers)
    ns = fresh_namespace()
    results = {}
    for cell in nb.cells:
        gid = grade_id(cell)
        if cell.cell_type != "code" or gid in FIGURES or gid == "setup_imports":
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
    assert visible_failures({}, set(TESTS)) == dict.fromkeys(TESTS)


VISIBLE_P5, VISIBLE_P7 = "p5_mha_values_test", "p7_gqa_interleaved_heads_test"
VISIBLE_RIGHT = [c for c in CASES if not c.lose and set(c.cells) & {"p5_mha", "p7_gqa"}]


@pytest.mark.parametrize("case", VISIBLE_RIGHT, ids=[c.name for c in VISIBLE_RIGHT])
def test_visible_by_hand_checks_accept_every_correct_mha_and_gqa(case):
    assert visible_failures(case.cells, {VISIBLE_P5, VISIBLE_P7}) == dict.fromkeys(
        {VISIBLE_P5, VISIBLE_P7}
    )


# Mistakes the visible checks must show before submission (issue 12): the grouping, the
# scale, and the reduced model's missing sqrt(r/d), also in the experiment's relative_error.
VISIBLE_CATCHES = {
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
    case = next(c for c in CASES if c.name == name)
    test, words = VISIBLE_CATCHES[name]
    error = visible_failures(case.cells, {test})[test]
    assert error is not None and words in error, (name, error)


def test_experiment_shows_a_missing_sqrt_r_over_d():
    """With the course's scaled data the experiment itself discriminates: relative_error ~0.2."""
    case = next(c for c in CASES if c.name == "p13_missing_sqrt_r_over_d")
    error = visible_failures(case.cells, {EXPERIMENT_TEST})[EXPERIMENT_TEST]
    assert error is not None and "is too large" in error, error


# ------------------------------------------------------------ slow: real autograding


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Autograde the solution, the release and every packed group of cases in one run."""
    release = nbformat.read(notebook_path(ROOT, "release", ASSIGNMENT), as_version=4)
    groups = pack(CASES)
    submissions = {"solution": solution_submission(ROOT, ASSIGNMENT), "release": release}
    members = {}
    for index, group in enumerate(groups):
        student = f"mutant{index:03d}"
        cells = {g: s for case in group for g, s in case.cells.items()}
        submissions[student] = solution_submission(ROOT, ASSIGNMENT, cells)
        members[student] = group
    start = time.monotonic()
    scores = autograde_submissions(
        tmp_path_factory.mktemp("av") / "course", ASSIGNMENT, submissions
    )
    seconds = time.monotonic() - start
    print(f"\nautograded {len(submissions)} submissions in {seconds:.0f} s")
    return scores, members


def autograded(scores, student):
    return {g: scores[student][g] for g in TESTS}


@pytest.mark.slow
@pytest.mark.xdist_group("attention_variants")
def test_solution_gets_every_autograded_point(graded):
    scores, _ = graded
    lost = {g: s for g, s in autograded(scores, "solution").items() if s[0] != s[1]}
    assert not lost, f"the instructor solution lost points: {lost}"


@pytest.mark.slow
@pytest.mark.xdist_group("attention_variants")
def test_release_gets_zero_and_grading_does_not_crash(graded):
    scores, _ = graded
    got = autograded(scores, "release")
    assert set(got) == set(TESTS)
    assert all(s[0] == 0 for s in got.values()), {g: s for g, s in got.items() if s[0]}


@pytest.mark.slow
@pytest.mark.xdist_group("attention_variants")
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_autograded(graded, case):
    scores, members = graded
    student = next(s for s, group in members.items() if case in group)
    got = autograded(scores, student)
    for test in sorted(judged(case)):
        score, max_score, _ = got[test]
        if test in case.lose:
            assert score == 0, f"{case.name}: {test} gave {score}/{max_score} to a wrong answer"
        else:
            assert score == max_score, (
                f"{case.name}: {test} gave {score}/{max_score} to a correct answer"
            )


@pytest.mark.slow
@pytest.mark.xdist_group("attention_variants")
def test_mistakes_cost_points_nowhere_else(graded):
    scores, members = graded
    for student, group in members.items():
        lose = set().union(*(c.lose for c in group))
        moved = {
            g: s for g, s in autograded(scores, student).items() if g not in lose and s[0] != s[1]
        }
        assert not moved, f"{student} ({[c.name for c in group]}) lost points elsewhere: {moved}"


def test_grade_ids_follow_the_part_prefixes():
    for gid in list(TESTS) + ANSWERS:
        assert re.fullmatch(r"p\d+_[a-z0-9_]+", gid), gid
