"""Students see what the grader will see: the release's visible checks on every case table.

Every wrong case that loses hidden points fails a visible test cell of the part where the
mistake is made (the parts of the answer cells it replaces, among those whose hidden tests it
fails; a later part failing instead teaches the wrong lesson); every correct case fails no
visible test cell. A table's ``VISIBLE_EXCEPTIONS`` (case id -> reason) lists the wrong cases
no visible check of their part can catch, and the test fails when one is caught, so the list
stays honest. Rule cases (every hidden failure a rule's: a rule cell, or a value cell the judge
refuses for fused attention) await the visible rule checks written on another branch: while
``RULE_CASES_AWAITING_VISIBLE_RULES`` is True, one that no visible check catches is an xfail.
Cases that tamper with the kernel (``alone``) run only in the autograded tables.
``python tests/visible_rates.py`` prints the catch rates.
"""

import functools
import re

import nbformat
import pytest
from casetable import load
from visiblecatch import visible_exceptions, visible_messages, visible_verdicts

from attncourse.course import ROOT, notebook_path
from attncourse.parts import cell_parts

ASSIGNMENTS = ("attention_worksheet", "attention_theory", "attention_variants", "mla_inference")
RULE_CELL = re.compile(r"(_rules|_no_loops)(_test)?$")


@functools.cache
def parts(assignment):
    """grade_id -> part label of every graded cell of the release."""
    nb = nbformat.read(notebook_path(ROOT, "release", assignment), as_version=4)
    return {gid: p.part for gid, p in cell_parts(nb).items()}


def case_verdicts(table, case):
    """{visible test cell: None or its failure} of ``case``; a test cell the table's in-process
    stubs leave out (it reads a stubbed cell) is not reported."""
    answers, _ = table.in_process(case, case.fails)
    stubbed = {
        test
        for cell, (stub, readers) in table.in_process_stubs.items()
        if answers.get(cell) == stub and cell not in case.answers
        for test in readers
    }
    verdicts = visible_verdicts(table.assignment, answers)
    return {test: error for test, error in verdicts.items() if test not in stubbed}


def missed_parts(table, case, verdicts):
    """The parts where ``case``'s mistake is made and costs hidden points, none of whose visible
    cells fails (the parts of its failing hidden tests when none is an answer cell's part)."""
    label = parts(table.assignment)
    caught = {label[test] for test, error in verdicts.items() if error is not None}
    losing = {label[test] for test in case.fails}
    own = {label[cell] for cell in case.answers} & losing
    return sorted((own or losing) - caught)


# The lead sets this to False once the visible rule checks (branch rulecheck) are merged.
RULE_CASES_AWAITING_VISIBLE_RULES = True
RULE_REFUSAL = re.compile(r"build the attention by hand|cannot verify the no-fused-attention rule")


@functools.cache
def rule_case(assignment, case_id):
    """True when every hidden failure of the case is a rule's: a rule cell, or a value cell
    the judge refuses for fused attention (judged here in process)."""
    table = load(assignment)
    case = next(c for c in table.cases if c.id == case_id)
    others = [test for test in case.fails if not RULE_CELL.search(test)]
    if not others:
        return True
    verdicts = table.judge(case, tests=others)
    return all(message and RULE_REFUSAL.search(message) for message in verdicts.values())


def _params():
    for assignment in ASSIGNMENTS:
        for case in load(assignment).cases:
            if not case.alone:
                yield pytest.param(assignment, case, id=f"{assignment}-{case.id}")


@pytest.mark.parametrize(("assignment", "case"), list(_params()))
def test_visible_checks_see_what_the_grader_sees(assignment, case):
    table = load(assignment)
    verdicts = case_verdicts(table, case)
    if case.correct:
        flagged = {test: error for test, error in verdicts.items() if error is not None}
        assert not flagged, f"{case.id}: a correct answer fails visible checks: {flagged}"
        return
    missed = missed_parts(table, case, verdicts)
    exceptions = visible_exceptions(assignment)
    if case.id in exceptions:
        assert missed, f"{case.id} is caught: remove it from VISIBLE_EXCEPTIONS"
        return
    if missed and RULE_CASES_AWAITING_VISIBLE_RULES and rule_case(assignment, case.id):
        pytest.xfail(f"a rule case awaiting the visible rule checks of {missed}")
    assert not missed, f"{case.id} loses hidden points in {missed} but no visible check there fails"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_exceptions_name_wrong_cases_with_reasons(assignment):
    wrong = {case.id for case in load(assignment).cases if not case.correct and not case.alone}
    for case_id, reason in visible_exceptions(assignment).items():
        assert case_id in wrong, f"{case_id} is not a wrong in-process case of the table"
        assert len(reason.split()) >= 4, f"{case_id}: say why no visible check can catch it"


def _messages():
    for assignment in ASSIGNMENTS:
        for case_id, (test, words) in visible_messages(assignment).items():
            yield pytest.param(assignment, case_id, test, words, id=f"{assignment}-{case_id}")


@pytest.mark.parametrize(("assignment", "case_id", "test", "words"), list(_messages()))
def test_visible_messages_name_the_likely_cause(assignment, case_id, test, words):
    table = load(assignment)
    case = next(c for c in table.cases if c.id == case_id)
    message = case_verdicts(table, case)[test]
    assert message is not None and words in message, f"{case_id}: {test} said {message!r}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_shortcut_gives_the_verdicts_of_a_full_run(assignment):
    """A run from the first replaced answer cell gives the verdicts of a run from the top."""
    table = load(assignment)
    wrong = [c for c in table.cases if c.fails and not c.alone]
    for case in (wrong[0], wrong[len(wrong) // 2], wrong[-1]):
        answers, _ = table.in_process(case, case.fails)
        assert visible_verdicts(assignment, answers) == visible_verdicts(
            assignment, answers, shortcut=False
        ), case.id
