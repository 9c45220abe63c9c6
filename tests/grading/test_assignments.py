"""Every assignment, found by convention: its checks accept every correct alternative of its
case table and reject every named mistake, in process and through ``nbgrader autograde``.

An assignment is ``source/<a>/<a>.ipynb``, its checks ``attncourse/grading/<a>/`` (``CHECKS``),
its case table ``tests/grading/<a>/cases_<a>.py`` and its ``release/<a>/`` from ``make release``; the
first test finds all four for every assignment under ``source/``. The toolkit is
``casetable``; what is specific to one assignment stays in ``tests/grading/<a>/test_<a>.py``.

Two layers over each table:

* fast, in process: each case's answers replace the solution's and the judge runs the
  checks of the tests it is judged on (:meth:`casetable.Table.judge`) under a fresh secret;
  tampering cases (``alone``) would tamper with this process and are left to the slow layer;
* slow, the real thing: the solution, the untouched release and every case, packed into
  submissions so that no case can change another's verdicts, autograded by nbgrader in runs
  of at most ``RUN_PACKS`` submissions, each an xdist group (``--dist loadgroup`` grades the
  runs side by side).
"""

import ast
import contextlib
import time
from pathlib import Path

import pytest
import torch
from casetable import (
    Case,
    assert_table_size,
    assert_verdicts,
    autograde_table,
    calls,
    kernel_requests,
    load,
    release_stubs,
    solution_namespace,
    source_notebook,
)

from attncourse.cells import grade_id, is_answer, is_test_cell
from attncourse.course import ROOT, assignments, notebook_path
from attncourse.judge import verdict
from attncourse.judge.program import parsed_cell
from devtools.submissions import solution_submission

HERE = Path(__file__).parent
ASSIGNMENTS = assignments()
TABLES = {a: load(a) for a in ASSIGNMENTS if (HERE / a / f"cases_{a}.py").exists()}


def group(assignment, run=0):
    """The xdist group of an autograde run of ``assignment``'s table (run 0: the assignment)."""
    return assignment if run == 0 else f"{assignment}#{run}"


def slow(assignment, run=0):
    """A param of ``assignment`` for the slow layer: one xdist group per autograde run."""
    marks = [pytest.mark.slow, pytest.mark.xdist_group(group(assignment, run))]
    return pytest.param(assignment, id=group(assignment, run), marks=marks)


def cases(in_process):
    """(assignment, case) params over every table: the cases that may run in process, or all
    of them for the slow layer. In process, a case that runs a cell the table stubs (Part 13's
    experiment at the task's size: about 4 s of CPU a case) is slow: make test judges it,
    make test-fast does not."""
    params = []
    for a, table in TABLES.items():
        for case in table.cases:
            if not in_process:
                marks = slow(a, table.run_of(case)).marks
            elif case.alone:
                continue
            else:
                marks = (pytest.mark.slow,) if table.runs_stubbed_cell(case) else ()
            params.append(pytest.param(a, case, id=f"{a}:{case.id}", marks=marks))
    return params


# ------------------------------------------------------------ the convention and the table


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_assignment_is_found_by_convention(assignment):
    """source notebook + grading package + case table + release: nothing else to register."""
    assert notebook_path(ROOT, "source", assignment).exists()
    assert isinstance(verdict.checks_of(assignment), dict), f"attncourse/grading/{assignment}/"
    case_table = HERE / assignment / f"cases_{assignment}.py"
    assert case_table.exists(), f"no case table {case_table.relative_to(ROOT)}"
    assert notebook_path(ROOT, "release", assignment).exists(), "run make release"


def test_every_grading_module_and_case_table_belongs_to_an_assignment():
    """The converse of the convention: ``grading/`` holds one package per assignment and
    nothing else (what checks share lives in ``attncourse.judge``), and no case table or
    per-assignment test module outlives its assignment."""
    grading = Path(verdict.__file__).parents[1] / "grading"
    packages = {p.parent.name for p in grading.glob("*/__init__.py")}
    assert {p.name for p in grading.glob("*.py")} == {"__init__.py"}, "grading/ holds packages"
    assert packages - set(ASSIGNMENTS) == set(), "grading packages without source/<a>/"
    tables = {p.stem.removeprefix("cases_") for p in HERE.glob("*/cases_*.py")}
    assert tables - set(ASSIGNMENTS) == set(), "case tables without source/<a>/"
    margins = {p.stem.removeprefix("margins_") for p in HERE.glob("*/margins_*.py")}
    folders = {p.name for p in HERE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders - set(ASSIGNMENTS) == set(), "tests/grading/ folders without source/<a>/"
    assert margins - set(ASSIGNMENTS) == set(), "margin scripts without source/<a>/"


@pytest.mark.parametrize("assignment", TABLES)
def test_checks_are_exactly_the_test_cells_of_the_source_notebook(assignment):
    table, checks = TABLES[assignment], verdict.checks_of(assignment)
    nb = source_notebook(assignment)
    test_cells = [grade_id(c) for c in nb.cells if is_test_cell(c)]
    assert len(test_cells) == len(set(test_cells)), f"duplicate test cell ids: {test_cells}"
    assert set(checks) == set(test_cells), (
        f"checks without a test cell: {sorted(set(checks) - set(test_cells))}; "
        f"test cells without a check: {sorted(set(test_cells) - set(checks))}"
    )
    assert all(callable(check) for check in checks.values())
    assert sorted(table.tests) == sorted(test_cells), "the groups cover every test cell once"
    code = {grade_id(c) for c in nb.cells if c.cell_type == "code"}
    answers = {grade_id(c) for c in nb.cells if c.cell_type == "code" and is_answer(c)}
    assert sorted(table.answer_cells) == sorted(answers - table.display_only), (
        "every code answer cell is in one group, or display-only"
    )
    assert table.display_only <= code - set(test_cells)
    assert set(table.depends) <= set(test_cells)
    assert set().union(*table.depends.values()) <= answers
    for cell, (_, readers) in table.in_process_stubs.items():
        assert cell in answers and set(readers) <= set(test_cells)
    assert table.fixed_inputs <= set(checks)


@pytest.mark.parametrize("assignment", TABLES)
def test_case_ids_are_unique_and_name_real_cells(assignment):
    table = TABLES[assignment]
    ids = [c.id for c in table.cases]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    for case in table.cases:
        assert case.answers and set(case.answers) <= set(table.groups[case.group][0]), case.id
        assert set(case.fails) <= set(table.tests), (case.id, set(case.fails) - set(table.tests))
    assert set(table.messages) <= set(ids)


@pytest.mark.parametrize("assignment", TABLES)
def test_a_mistake_costs_other_groups_only_through_depends(assignment):
    """A test of another group that a case must fail reads the case's cells (DEPENDS)."""
    table = TABLES[assignment]
    for case in table.cases:
        if not case.alone:
            for test in case.fails:
                assert table.dependencies(test) & set(case.answers), (case.id, test)


@pytest.mark.parametrize("assignment", TABLES)
def test_every_answer_has_four_correct_and_eight_wrong_cases(assignment):
    assert_table_size(TABLES[assignment])


@pytest.mark.parametrize("assignment", TABLES)
def test_packing_never_mixes_dependent_cases(assignment):
    table = TABLES[assignment]
    packs = table.pack()
    assert sorted(c.id for pack in packs for c in pack) == sorted(c.id for c in table.cases)
    runs = table.runs()
    assert sorted(i for run in runs for i in run) == list(range(len(packs)))
    assert max(map(len, runs)) - min(map(len, runs)) <= 1
    for pack in packs:
        for i, a in enumerate(pack):
            assert not a.alone or len(pack) == 1
            for b in pack[i + 1 :]:
                assert not table.conflict(a, b), (a.id, b.id)


# ------------------------------------------------------------------- fast, in process


@contextlib.contextmanager
def torch_threads(n):
    """Torch computes on ``n`` threads inside; the process's count is restored after."""
    threads = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


# slow: every correct alternative judged again (about 1.5 minutes for attention_variants alone)
@pytest.mark.slow
@pytest.mark.parametrize("assignment", TABLES)
def test_correct_alternatives_pass_with_one_and_two_torch_threads(assignment):
    """Issue 16: every correct alternative gets all passes with torch on one thread and on
    two. ``test_case_in_process`` judges every case on one thread; here the correct ones
    are judged again on two (judging them on one a second time cost make test 1.5 minutes)."""
    table = TABLES[assignment]
    compared, differ = 0, {}
    with torch_threads(2):
        for case in (c for c in table.cases if c.correct and not c.alone):
            verdicts = table.judge(case)
            compared += len(verdicts)
            if any(verdicts.values()):
                differ[case.id] = verdicts
    print(f"{assignment}: {compared} (case, test) verdicts of correct alternatives on 2 threads")
    assert compared and not differ, (
        f"{len(differ)} cases failed on 2 threads ({compared} verdicts): {differ}"
    )


@pytest.mark.parametrize(("assignment", "case"), cases(in_process=True))
def test_case_in_process(assignment, case):
    """Each case on one torch thread (a correct one also on two: the test above), on the
    tests that read its cells."""
    table = TABLES[assignment]
    with torch_threads(1):
        verdicts = table.judge(case, every=False)
    assert_verdicts(case, verdicts, table.in_process(case, every=False)[1])


def every_test_cases():
    """The in-process cases of the tables that judge each case on every test."""
    for param in cases(in_process=True):
        assignment, case = param.values
        if TABLES[assignment].every_test_in_process:
            yield pytest.param(assignment, case, id=param.id, marks=pytest.mark.slow)


# slow: the tests no cell of the case reaches (at_scale's Part 3 footprint among them: 0.3 s a
# case) cost make test-fast 40 s of CPU; they only confirm DEPENDS, as every autograded pack
# does for its cases.
@pytest.mark.parametrize(("assignment", "case"), every_test_cases())
def test_case_in_process_keeps_every_other_point(assignment, case):
    """EVERY_TEST_IN_PROCESS: each case passes every test that reads none of its cells, so
    it fails exactly its fails anywhere in the notebook (with the test above)."""
    table = TABLES[assignment]
    with torch_threads(1):
        verdicts, rest = table.judge_the_rest(case)
    assert rest, f"{case.id}: every test reads its cells"
    assert_verdicts(case, verdicts, rest)


@pytest.mark.parametrize("assignment", TABLES)
def test_release_stubs_earn_no_autograded_point_in_process(assignment):
    table = TABLES[assignment]
    verdicts = table.judge(Case("release", "stubs", release_stubs(assignment)), table.tests)
    assert set(verdicts) == set(table.tests)
    assert all(verdicts.values()), [t for t, error in verdicts.items() if error is None]


@pytest.mark.parametrize("assignment", TABLES)
def test_judging_leaves_every_parsed_cell_as_it_was(assignment):
    """The judge keeps each cell's tree (``parsed_cell``) and shares it among every reader
    of that text: judging the solution on every test changes none of them. The control: a
    change to a kept tree is what the comparison sees."""
    notebook = solution_submission(ROOT, assignment)
    texts = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    kept = {text: parsed_cell(text) for text in texts}
    kept = {text: parsed for text, parsed in kept.items() if parsed is not None}
    before = {text: ast.dump(p.tree, include_attributes=True) for text, p in kept.items()}
    table = TABLES[assignment]
    assert not any(table.judge(Case("solution", "as given", {}), table.tests).values())
    for text, parsed in kept.items():
        assert parsed_cell(text) is parsed, "the cache let a cell go: this compares nothing"
        assert ast.dump(parsed.tree, include_attributes=True) == before[text], text[:200]
    text = next(iter(kept))
    control = parsed_cell(text, fresh=True)  # a tree of its own, changed: the dump differs
    assert control.tree is not kept[text].tree
    assert ast.dump(control.tree, include_attributes=True) == before[text]
    assert ast.dump(ast.increment_lineno(control.tree, 1), include_attributes=True) != before[text]


@pytest.mark.parametrize("assignment", TABLES)
def test_checks_draw_every_input_from_the_secret(assignment):
    """The same secret sends the kernel the same requests; another secret, other inputs.

    FIXED_INPUTS checks have no random input: the same requests under every secret.
    """
    table = TABLES[assignment]
    ns, sources = solution_namespace(assignment)
    for test, check in verdict.checks_of(assignment).items():
        first = kernel_requests(check, ns, sources, "secret-a")
        assert kernel_requests(check, ns, sources, "secret-a") == first, f"{test}: same secret"
        other = kernel_requests(check, ns, sources, "secret-b")
        if test in table.fixed_inputs:
            assert other == first, f"{test} depends on the secret"
        else:
            assert calls(first), f"{test} calls nothing"
            assert other != first, f"{test}: inputs do not depend on the secret"


@pytest.mark.parametrize("assignment", [a for a, t in TABLES.items() if t.messages])
def test_failure_messages_name_the_mistake(assignment):
    """Named mistakes, with the words the student reads in the failure of the test named."""
    table = TABLES[assignment]
    by_id = {c.id: c for c in table.cases}
    for case_id, (test, words) in table.messages.items():
        message = table.judge(by_id[case_id], {test})[test] or ""
        assert words in message, (case_id, test, message)


# ------------------------------------------------------------ slow: real autograding


@pytest.fixture(scope="session")
def autograded(tmp_path_factory):
    """(assignment, run) -> (scores, {student: its cases}): one nbgrader run each, cached."""
    runs = {}

    def graded(assignment, run=0):
        if (assignment, run) not in runs:
            start = time.monotonic()
            course = tmp_path_factory.mktemp(group(assignment, run)) / "course"
            runs[assignment, run] = autograde_table(course, TABLES[assignment], run)
            seconds = time.monotonic() - start
            count = len(runs[assignment, run][0])
            print(f"\n{group(assignment, run)}: {count} submissions in {seconds:.0f} s")
        return runs[assignment, run]

    return graded


def scores_of(assignment, autograded, student, run=0):
    """test -> (score, max score, ...) of ``student``'s autograded tests."""
    scores, _ = autograded(assignment, run)
    assert student in scores, f"{assignment}: grading {student} crashed"
    tests = TABLES[assignment].tests
    missing = set(tests) - set(scores[student])
    assert not missing, f"{assignment}: {student} was not graded on {sorted(missing)}"
    return {test: scores[student][test] for test in tests}


@pytest.mark.parametrize("assignment", [slow(a) for a in TABLES])
def test_solution_gets_every_autograded_point(assignment, autograded):
    lost = {t: s for t, s in scores_of(assignment, autograded, "solution").items() if s[0] != s[1]}
    assert not lost, f"the instructor solution lost points: {lost}"


@pytest.mark.parametrize("assignment", [slow(a) for a in TABLES])
def test_release_gets_zero_and_grading_does_not_crash(assignment, autograded):
    got = scores_of(assignment, autograded, "release")
    assert all(s[0] == 0 for s in got.values()), {t: s for t, s in got.items() if s[0]}


@pytest.mark.parametrize(("assignment", "case"), cases(in_process=False))
def test_case_autograded(assignment, case, autograded):
    run = TABLES[assignment].run_of(case)
    _, members = autograded(assignment, run)
    student = next(s for s, pack in members.items() if case in pack)
    got = scores_of(assignment, autograded, student, run)
    for test in sorted(TABLES[assignment].judged(case)):
        score, max_score, _ = got[test]
        if test in case.fails:
            assert score == 0, f"{case.id}: {test} gave {score}/{max_score} to a wrong answer"
        else:
            assert score == max_score, f"{case.id}: {test} gave {score}/{max_score} to a right one"


@pytest.mark.parametrize(
    ("assignment", "run"),
    [
        pytest.param(a, run, id=group(a, run), marks=slow(a, run).marks)
        for a, table in TABLES.items()
        for run in range(len(table.runs()))
    ],
)
def test_mistakes_cost_points_nowhere_else(assignment, run, autograded):
    _, members = autograded(assignment, run)
    for student, pack in members.items():
        fails = {t for case in pack for t in case.fails}
        got = scores_of(assignment, autograded, student, run)
        moved = {t: s for t, s in got.items() if t not in fails and s[0] != s[1]}
        assert not moved, f"{student} ({[c.id for c in pack]}) lost points elsewhere: {moved}"
