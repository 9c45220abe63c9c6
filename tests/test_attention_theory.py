"""Assignment 2 (attention theory and lab): every correct alternative earns its part, every named mistake loses it.

The fast tests run each case of ``cases_attention_theory`` in this process: the
solution's cells with the case's answers run in a dict namespace, and at each test
cell the judge runs the check of ``attncourse.grading.attention_theory.CHECKS``
through the same request/reply encoding a kernel uses, under a fresh secret. The
slow test autogrades the whole table with the real ``nbgrader autograde`` in one
run: case k of every group goes into submission k (groups have disjoint answer
cells and tests), so a wrong answer must lose points in exactly the tests its case
names while the other groups' cases in the same notebook keep theirs.

The table has no tampering cases (answers that rebind torch, numpy or builtins);
such a case must never run in this process (it would poison the test process) and
would belong to the slow layer only.
"""

import contextlib
import io

import nbformat
import pytest
from cases_attention_theory import ASSIGNMENT, CASES, GROUPS
from casetable import (
    DISPLAY_ONLY,
    assert_case_classified,
    assert_packed_scores,
    assert_table_size,
    autograde_table,
)
from cellrun import run_cell

from attncourse.cells import grade_id, is_test_cell, student_sources
from attncourse.course import ROOT, notebook_path
from attncourse.grading import attention_theory
from attncourse.judge import verdict
from attncourse.judge.channel import LocalChannel
from attncourse.judge.remote import Session, StudentNamespace
from attncourse.submissions import solution_submission


def solution_namespace(answers=None):
    """(globals, the student's sources) of the solution with ``answers``, its cells run here.

    Every code cell but the test cells and the display-only cells runs in order;
    errors are ignored, as when autograding.
    """
    nb = solution_submission(ROOT, ASSIGNMENT, answers or {})
    ns = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for cell in nb.cells:
            if cell.cell_type == "code" and not is_test_cell(cell):
                if grade_id(cell) not in DISPLAY_ONLY:
                    with contextlib.suppress(Exception):
                        run_cell(cell.source, ns)
    return ns, student_sources(nb)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_case_is_classified_in_process(case):
    assert_case_classified(ASSIGNMENT, GROUPS, case)


def test_every_question_has_enough_alternatives_and_mistakes():
    assert_table_size(CASES, lambda group: group)


def test_checks_are_exactly_the_test_cells_of_the_source_notebook():
    nb = nbformat.read(notebook_path(ROOT, "source", ASSIGNMENT), as_version=4)
    test_cells = [grade_id(cell) for cell in nb.cells if is_test_cell(cell)]
    assert len(test_cells) == len(set(test_cells)), f"duplicate test cell ids: {test_cells}"
    assert set(attention_theory.CHECKS) == set(test_cells), (
        f"checks without a test cell: {set(attention_theory.CHECKS) - set(test_cells)}; "
        f"test cells without a check: {set(test_cells) - set(attention_theory.CHECKS)}"
    )
    grouped = [test for _, tests in GROUPS.values() for test in tests]
    assert sorted(grouped) == sorted(test_cells), "the case table's groups cover every test cell"


def test_checks_draw_every_input_from_the_secret():
    """The same secret sends the kernel the same requests; another secret, other inputs."""
    ns, sources = solution_namespace()

    def requests(check, secret):
        channel = LocalChannel(ns)
        sent = []
        serve = channel.send

        def send(text):
            sent.append(text)
            return serve(text)

        channel.send = send
        student = StudentNamespace(Session(channel), sources)
        with contextlib.redirect_stdout(io.StringIO()):
            assert verdict.run_check(check, student, secret) is None
        return sent

    for test, check in attention_theory.CHECKS.items():
        first = requests(check, "secret-a")
        assert any('"op": "call"' in text for text in first), f"{test} calls nothing"
        assert requests(check, "secret-a") == first, f"{test}: same secret, other inputs"
        assert requests(check, "secret-b") != first, f"{test}: inputs do not depend on the secret"


@pytest.fixture(scope="module")
def autograded_table(tmp_path_factory):
    return autograde_table(
        tmp_path_factory.mktemp(ASSIGNMENT) / "course", ASSIGNMENT, CASES, GROUPS
    )


@pytest.mark.slow
@pytest.mark.xdist_group(ASSIGNMENT)
def test_nbgrader_classifies_every_case(autograded_table):
    packed, scores = autograded_table
    assert_packed_scores(packed, scores, GROUPS)
