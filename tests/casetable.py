"""The machinery of the case tables (``cases_attention_*.py``).

A :class:`Case` replaces answer cells of the instructor's solution and names the
test cells that must then fail (none for a correct alternative). Cases run
either in this process through the notebook's own test cells (fast), or packed
into submissions and autograded by the real ``nbgrader autograde`` (slow).
"""

import contextlib
import io
from dataclasses import dataclass, field

from cellrun import run_cell

from attncourse.autograde import autograde_submissions
from attncourse.cells import grade_id, is_test_cell, student_sources
from attncourse.course import ROOT
from attncourse.judge import verdict
from attncourse.judge.channel import LocalChannel
from attncourse.judge.remote import Session, StudentNamespace
from attncourse.submissions import solution_submission


@dataclass(frozen=True)
class Case:
    """One submission variant: ``answers`` override cells of the solution; ``fails`` must fail."""

    group: str
    name: str
    answers: dict
    fails: tuple = field(default=())

    @property
    def correct(self):
        return not self.fails

    @property
    def id(self):
        return f"{self.group}:{self.name}"


def cases_table(groups, rows):
    """Build Cases from rows (group, name, source or {cell: source}, fails: True = whole group)."""
    out = []
    for group, name, answers, fails in rows:
        answer_cells, tests = groups[group]
        if isinstance(answers, str):
            answers = {answer_cells[0]: answers}
        if fails is True:
            fails = tests
        out.append(Case(group, name, answers, tuple(fails)))
    return out


def packed_submissions(cases, groups):
    """Case k of every group, merged into submission k: {student: (answers, failing tests)}.

    Groups have disjoint answer cells and tests, so a case can only move the scores of its
    own group's tests; parts without a k-th case keep the instructor's solution.
    """
    by_group = {g: [c for c in cases if c.group == g] for g in groups}
    rows = max(len(v) for v in by_group.values())
    out = {}
    for k in range(rows):
        answers, fails, names = {}, set(), []
        for group_cases in by_group.values():
            if k < len(group_cases):
                case = group_cases[k]
                answers.update(case.answers)
                fails.update(case.fails)
                names.append(case.id)
        out[f"case{k:02d}"] = (answers, fails, names)
    return out


# Read-only cells that only draw or print for the student; the test cells never read them.
DISPLAY_ONLY = {
    "q2_figure",
    "q4c_demonstration",
    "f_instance",
    "f_plot",
    "lab_distribution_demo",
    "lab_peak_plot",
    "lab_cd_demo",
    "lab_noise_plot",
}


def run_in_process(assignment, answers, tests, secret=None):
    """Run the solution with ``answers`` in this process; return {test: None or the failure}.

    The code cells run in order in one namespace (errors in non-test cells are
    ignored, as when autograding), except the display-only cells; at each test
    cell named in ``tests`` the judge runs its check, reaching the namespace
    through the same request/reply encoding a kernel uses
    (:class:`~attncourse.judge.channel.LocalChannel`). The slow tests grade the
    same cases through nbgrader and sandboxed kernels.
    """
    nb = solution_submission(ROOT, assignment, answers)
    registry = verdict.checks_of(assignment)
    secret = secret or verdict.new_secret()
    ns = {"__name__": "__main__"}
    student = StudentNamespace(Session(LocalChannel(ns)), student_sources(nb))
    results = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            gid = grade_id(cell)
            if is_test_cell(cell):
                if gid in tests:
                    results[gid] = verdict.run_check(registry[gid], student, secret)
                continue
            if gid not in DISPLAY_ONLY:
                with contextlib.suppress(Exception):
                    run_cell(cell.source, ns)
    return results


def assert_case_classified(assignment, groups, case):
    """Run ``case`` in process: its failing tests fail, every other test of its group passes."""
    tests = groups[case.group][1]
    results = run_in_process(assignment, case.answers, tests)
    assert set(results) == set(tests), f"test cells did not run: {set(tests) - set(results)}"
    for test in tests:
        if test in case.fails:
            assert results[test], f"{case.id}: {test} should fail but passed"
        else:
            assert results[test] is None, (
                f"{case.id}: {test} should pass but failed:\n{results[test]}"
            )


def assert_table_size(cases, question_of, min_right=4, min_wrong=8):
    """Every question has at least ``min_right`` correct alternatives and ``min_wrong`` mistakes."""
    counts = {}
    for case in cases:
        right, wrong = counts.get(question_of(case.group), (0, 0))
        counts[question_of(case.group)] = (right + case.correct, wrong + (not case.correct))
    small = {q: c for q, c in counts.items() if c[0] < min_right or c[1] < min_wrong}
    assert not small, (
        f"questions with fewer than {min_right} right / {min_wrong} wrong cases: {small}"
    )


def autograde_table(course_dir, assignment, cases, groups):
    """The packed table of ``cases`` autograded by nbgrader in one run: (packed, scores)."""
    packed = packed_submissions(cases, groups)
    submissions = {s: solution_submission(ROOT, assignment, a) for s, (a, _, _) in packed.items()}
    return packed, autograde_submissions(course_dir, assignment, submissions)


def assert_packed_scores(packed, scores, groups):
    """Each packed submission loses points exactly in the tests its cases name, nowhere else."""
    for student, (_, fails, names) in packed.items():
        grades = scores.get(student)
        assert grades, f"{student} ({names}) was not graded"
        for test in (t for _, tests in groups.values() for t in tests):
            score, max_score, _ = grades[test]
            if test in fails:
                assert score < max_score, f"{student} {names}: {test} should lose points, got full"
            else:
                assert score == max_score, f"{student} {names}: {test} should be full, got {score}"
