"""The assignment's rules, talked around: every attack of ``attacks.RULE_ATTACKS`` is judged in
this process beside its honest control, on the test cells of its part.

Each attack is a correct answer that breaks a rule in a way no list of forbidden names sees
(``map`` over heads, recursion, a looping helper kept in a dict, a fused kernel reached through
``torch.ops`` or a built name, torch under another name, intermediates in the parameters' own
names, an import in a cell of its own, a metaclass that says yes). The control breaks the same
rule plainly. The attack may pass no test that its control fails, and where it loses, the
message names the construct and its place.
"""

import functools

import pytest
from attacks import RULE_ATTACKS
from casetable import Case, load, run_in_process

ASSIGNMENT = "attention_variants"
pytestmark = pytest.mark.xdist_group("rule_attacks")  # one worker: controls are judged once


@functools.cache
def _verdicts(answers, tests, code):
    table = load(ASSIGNMENT)  # its stubs keep the full-size Part 13 experiment out
    answers, tests = table.in_process(Case("attack", "attack", dict(answers)), tests)
    return run_in_process(ASSIGNMENT, answers, tests, secret="rule-attacks", inserted=code)


def verdicts(answers, tests, code):
    """{test: None or the failure} of the solution with ``answers`` and the cell ``code``."""
    return _verdicts(tuple(sorted(answers.items())), tuple(tests), code)


def test_there_are_at_least_20_rule_attacks_of_every_class():
    kinds = {a.kind for a in RULE_ATTACKS}
    assert len(RULE_ATTACKS) >= 20 and len({a.name for a in RULE_ATTACKS}) == len(RULE_ATTACKS)
    assert kinds >= {"no loops", "no fused attention", "numpy only", "one statement", "imports"}


@pytest.mark.parametrize("attack", RULE_ATTACKS, ids=lambda a: a.name)
def test_rule_attack_gains_nothing_over_its_control(attack):
    control = verdicts(attack.control, attack.tests, attack.code)
    got = verdicts(attack.answers, attack.tests, attack.code)
    lost = [t for t in attack.tests if control[t] is not None]
    assert lost, f"{attack.name}: the control breaks no rule the tests see: {control}"
    gains = [t for t in lost if got[t] is None]
    assert not gains, f"{attack.name} passed {gains}, which its control fails"
    flagged = [m for m in got.values() if m and ("cell" in m or "real type" in m)]
    assert flagged, f"{attack.name}: no failure names the construct and its cell: {got}"


RULE_WORDS = ("rule", "forbids loops", "numpy only", "by hand", "one statement", "a MyGQA")


@pytest.mark.parametrize(
    "attack", [a for a in RULE_ATTACKS if a.kind != "imports"], ids=lambda a: a.name
)
def test_rule_attack_control_loses_only_rule_points(attack):
    """The controls compute the right values: only the rule costs them points."""
    control = verdicts(attack.control, attack.tests, attack.code)
    others = {t: m for t, m in control.items() if m and not any(w in m for w in RULE_WORDS)}
    assert not others, others
