"""Students see what the grader will see: the release's visible checks on every case table.

Every wrong case that loses hidden points fails a visible test cell of the part where the
mistake is made (the parts of the answer cells it replaces, among those whose hidden tests it
fails; a later part failing instead teaches the wrong lesson); every correct case fails no
visible test cell. A table's ``VISIBLE_EXCEPTIONS`` (case id -> reason) lists the wrong cases
no visible check of their part can catch, and the test fails when one is caught, so the list
stays honest. Rule cases (every hidden failure a rule's) are caught by the rule cells' visible
``check_rules``: the judge's own proof, run on the cells as the student ran them.
Cases that tamper with the kernel (``alone``) run only in the autograded tables.
``python tests/helpers/visible_rates.py`` prints the catch rates.
"""

import pytest
from casetable import load
from visiblecatch import (
    ASSIGNMENTS,
    case_verdicts,
    deciding_tests,
    missed_parts,
    visible_exceptions,
    visible_messages,
    visible_verdicts,
)

# make test-fast judges every FAST_SAMPLE-th case of each table (about 3 s a case for the
# variants table's later parts); make test judges them all.
FAST_SAMPLE = 8


def _params():
    for assignment in ASSIGNMENTS:
        cases = [case for case in load(assignment).cases if not case.alone]
        for n, case in enumerate(cases):
            marks = () if n % FAST_SAMPLE == 0 else (pytest.mark.slow,)
            yield pytest.param(assignment, case, id=f"{assignment}-{case.id}", marks=marks)


@pytest.mark.parametrize(("assignment", "case"), list(_params()))
def test_visible_checks_see_what_the_grader_sees(assignment, case):
    table = load(assignment)
    verdicts = case_verdicts(table, case, deciding_tests(table, case))
    if case.correct:
        flagged = {test: error for test, error in verdicts.items() if error is not None}
        assert not flagged, f"{case.id}: a correct answer fails visible checks: {flagged}"
        return
    missed = missed_parts(table, case, verdicts)
    exceptions = visible_exceptions(assignment)
    if case.id in exceptions:
        assert missed, f"{case.id} is caught: remove it from VISIBLE_EXCEPTIONS"
        return
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
    message = case_verdicts(table, case, frozenset({test}))[test]
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


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_run_cut_after_the_deciding_cells_misses_the_same_parts(assignment):
    """A wrong case's run stops after the last visible cell of the parts that decide it
    (:func:`visiblecatch.deciding_tests`): the verdicts it has are the full run's, and the
    parts it finds missed the same."""
    table = load(assignment)
    wrong = [c for c in table.cases if c.fails and not c.alone]
    for case in (wrong[0], wrong[len(wrong) // 2], wrong[-1]):
        deciding = deciding_tests(table, case)
        cut, full = case_verdicts(table, case, deciding), case_verdicts(table, case)
        assert deciding <= set(cut) and cut == {t: full[t] for t in cut}, case.id
        assert missed_parts(table, case, cut) == missed_parts(table, case, full), case.id
