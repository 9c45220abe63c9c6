"""Issue 22 for assignments 1 and 2: every correct alternative of the case tables keeps every
point under 100 secrets (each drawing other sizes and data), and the worksheet's hand-computed
answers under 100 students' own numbers. (``mla_inference``'s is in its own test module.)

Cost, measured per secret on one core: the worksheet's checks 1-3 ms; the theory set's 1-7 ms,
but for the simulation (f) (keys 0.22 s, outputs 0.08 s: 20000 draws of the student's sampler
come back through the kernel's channel) and the lab's noise sweep (0.12 s: the student's
20000 draws of n d noise). Those three run 100 secrets only under ``make accept-secrets``
(marker ``secrets``, left out of ``make test``) and 3 secrets in ``make test``.
"""

import contextlib
import io

import pytest
from casetable import assert_no_point_lost, load, source_notebook

from attncourse.cells import grade_id
from attncourse.grading import attention_worksheet as aw
from attncourse.judge import verdict
from attncourse.judge.channel import LocalChannel
from attncourse.judge.remote import Session, StudentNamespace
from attncourse.preprocessors.pininstance import INSTANCE_CELL

SECRETS = [f"accept-{k}" for k in range(100)]
FEW = SECRETS[:3]
STUDENTS = [f"id{k:03d}" for k in range(100)]
EXPENSIVE = {"f_sample_keys", "f_simulation_statistics", "lab_noise_sweep"}
TABLES = {a: load(a) for a in ("attention_worksheet", "attention_theory")}
# about 25 s of one core: make test runs it, make test-fast (under 3 minutes) leaves it out
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("accept_secrets")]


def _right(expensive):
    """(assignment, case, its tests drawn from the secret) of every correct alternative."""
    out = []
    for assignment, table in TABLES.items():
        for case in table.cases:
            tests = [t for t in table.groups[case.group][1] if t not in table.fixed_inputs]
            tests = [t for t in tests if (t in EXPENSIVE) == expensive]
            if case.correct and not case.alone and tests:
                out.append(pytest.param(assignment, case, tests, id=f"{assignment}:{case.id}"))
    return out


@pytest.mark.parametrize(("assignment", "case", "tests"), _right(expensive=False))
def test_correct_alternative_keeps_every_point_under_100_secrets(assignment, case, tests):
    assert_no_point_lost(TABLES[assignment], case, SECRETS, tests)


@pytest.mark.parametrize(("assignment", "case", "tests"), _right(expensive=True))
def test_correct_simulation_keeps_every_point_under_a_few_secrets(assignment, case, tests):
    """make test's share of the statistical checks: 3 secrets (100 under make accept-secrets)."""
    assert_no_point_lost(TABLES[assignment], case, FEW, tests)


@pytest.mark.secrets
@pytest.mark.parametrize(("assignment", "case", "tests"), _right(expensive=True))
def test_correct_simulation_keeps_every_point_under_100_secrets(assignment, case, tests):
    assert_no_point_lost(TABLES[assignment], case, SECRETS, tests)


# ------------------------------------------------- the worksheet's numbers, each student's own

WORKSHEET = TABLES["attention_worksheet"]
HAND = [
    pytest.param(case, id=case.id)
    for case in WORKSHEET.cases
    if case.correct
    and set(WORKSHEET.groups[case.group][1]) <= WORKSHEET.fixed_inputs
    and case.group != "q2"
]


@pytest.fixture(scope="module")
def given():
    """student -> the worksheet's globals after its provided cells ran with that id."""
    code = {grade_id(c) or "": c.source for c in source_notebook("attention_worksheet").cells}
    out = {}
    for student in STUDENTS:
        names = {"__name__": "__main__"}
        provided = code[INSTANCE_CELL].replace(
            'os.environ.get("JUPYTERHUB_USER")', repr(student), 1
        )
        with contextlib.redirect_stdout(io.StringIO()):
            for source in (code["setup_imports"], code[""], provided):
                exec(source, names)
            for part in ("q3_given", "q5_given"):
                exec(code[part], names)
        out[student] = names
    return out


@pytest.mark.parametrize("case", HAND)
def test_hand_computed_alternative_keeps_every_point_for_100_students(case, given):
    """Typed or computed from the printed numbers, each student's answers are judged against
    their own instance (the case's typed numbers replaced by each student's, as handed in)."""
    tests = WORKSHEET.groups[case.group][1]
    lost = {}
    for student in STUDENTS:
        names = dict(given[student])
        with contextlib.redirect_stdout(io.StringIO()):
            for source in case.answers.values():
                exec(WORKSHEET.for_student(source, student), names)
        ns = StudentNamespace(Session(LocalChannel(names)), (), student)
        for test in tests:
            message = verdict.run_check(aw.CHECKS[test], ns, "secret")
            if message is not None:
                lost.setdefault(test, []).append((student, message))
    assert not lost, f"{case.id} lost points for some of {len(STUDENTS)} students: {lost}"
