"""The hidden tests of ``attention_variants`` accept every correct answer and reject every wrong one.

Two layers over the mutation table in ``cases_attention_variants.py``:

* fast, in-process: each case's answer cells and its part's test cells run in a
  namespace like the notebook's (cell text registered in linecache, as IPython
  does), and each test cell must pass or fail as the table says;
* slow, the real thing: every case, the instructor's solution and the untouched
  release are autograded by ``nbgrader autograde`` in one run. Cases that do not
  share an answer cell or a dependency are packed into the same submission
  (``pack``), which keeps the run to a few dozen kernels; the assertions still
  check each case's own cells and that no other cell lost a point.
"""

import contextlib
import io
import re
import time

import nbformat
import pytest
from cases_attention_variants import CASES, Case
from cellrun import fresh_namespace, run_cell

from attncourse.autograde import autograde_submissions
from attncourse.checks import GradingError, restore_pristine
from attncourse.course import ROOT, notebook_path
from attncourse.grading import attention_variants as av
from attncourse.submissions import grade_id, is_answer, solution_answers, solution_submission

ASSIGNMENT = "attention_variants"
SOURCE = nbformat.read(notebook_path(ROOT, "source", ASSIGNMENT), as_version=4)
SOLUTION = solution_answers(SOURCE)
CELLS = [(grade_id(c), c) for c in SOURCE.cells if c.cell_type == "code"]
TESTS = {
    gid: int(c.metadata["nbgrader"]["points"])
    for gid, c in CELLS
    if c.metadata.get("nbgrader", {}).get("grade") and gid
}
ANSWERS = [gid for gid, c in CELLS if is_answer(c)]
HIDDEN = {
    gid: re.search(r"_av\.(check_\w+)\(", c.source).group(1) for gid, c in CELLS if gid in TESTS
}
CODING_ANSWERS = [gid for gid in ANSWERS if gid != "p13_experiment"] + ["p13_experiment"]

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


def run_in_process(case, experiment=False):
    """test grade_id -> error message (None when it passed) for the case's judged cells.

    The Part 13 experiment (seconds of compute) runs only when ``experiment`` is set;
    otherwise its test is left to the autograded run.
    """
    wanted = judged(case) - ({"p13_experiment_test"} if not experiment else set())
    ns = fresh_namespace()
    answers = dict(SOLUTION, **case.cells)
    verdicts = {}
    try:
        for gid, cell in CELLS:
            if gid in answers:
                if gid == "p13_experiment" and "p13_experiment_test" not in wanted:
                    continue
                try:
                    with contextlib.redirect_stdout(io.StringIO()):
                        run_cell(answers[gid], ns)
                except Exception:  # a broken answer cell, as in the notebook
                    pass
            elif gid in wanted:
                try:
                    with contextlib.redirect_stdout(io.StringIO()):
                        run_cell(cell.source, ns)
                    verdicts[gid] = None
                except Exception as error:
                    verdicts[gid] = f"{type(error).__name__}: {error}"
    finally:
        restore_pristine()
    return verdicts


# Tampering cases would tamper with pytest itself; the experiment cases need the full-size run.
FAST = [c for c in CASES if not c.alone and "p13_experiment" not in c.cells]


@pytest.mark.parametrize("case", FAST, ids=[c.name for c in FAST])
def test_case_in_process(case: Case):
    verdicts = run_in_process(case)
    for test, error in sorted(verdicts.items()):
        if test in case.lose:
            assert error is not None, f"{case.name}: {test} passed a wrong answer"
        else:
            assert error is None, f"{case.name}: {test} rejected a correct answer: {error}"


def test_release_stubs_earn_no_autograded_point_in_process():
    release = nbformat.read(notebook_path(ROOT, "release", ASSIGNMENT), as_version=4)
    stubs = {grade_id(c): c.source for c in release.cells if is_answer(c) and c.cell_type == "code"}
    verdicts = run_in_process(Case("release", stubs), experiment=True)
    assert set(verdicts) == set(TESTS)
    assert all(verdicts.values()), [t for t, error in verdicts.items() if error is None]


def namespace_for(case, experiment=False):
    """The namespace after the case's answer cells ran (the solution's elsewhere)."""
    ns = fresh_namespace()
    answers = dict(SOLUTION, **case.cells)
    for gid in ANSWERS:
        if experiment or gid != "p13_experiment":
            with contextlib.suppress(Exception), contextlib.redirect_stdout(io.StringIO()):
                run_cell(answers[gid], ns)
    return ns


def hidden_messages(case):
    """The hidden checks' failure messages for the cells a case must lose (experiment aside)."""
    ns = namespace_for(case)
    messages = []
    for test in sorted(case.lose - {"p13_experiment_test"}):
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                getattr(av, HIDDEN[test])(ns)
        except GradingError as error:
            messages.append(str(error))
    return " ".join(messages)


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
    }
    by_name = {c.name: c for c in CASES}
    for name, words in expected.items():
        messages = hidden_messages(by_name[name])
        assert words in messages, (name, messages)


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
