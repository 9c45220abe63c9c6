"""The source rules of a test cell, as data: what the judge proves and what ships to students.

A check that grades a rule declares it with :func:`proves` and proves it with :func:`prove`
(:mod:`attncourse.judge.rules` does the proving). The same :class:`Rule` values, and this
module, go with the release (:mod:`attncourse.prover`), so a student's visible check runs
the very proof the judge runs; the judge proves again on the notebook as handed in.
"""

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, cast

from attncourse.judge import recordable, rules
from attncourse.judge.checks import GradingError, fail

NO_LOOPS = "no loops"
NO_FUSED = "no fused attention"
NUMPY_ONLY = "numpy only"
ONE_STATEMENT = "one statement per output"
USES = "uses"  # the answer reaches a definition named ``word``
NEVER_NAMES = "never names"  # the answer's own code never names ``word``
FOOTPRINT = "recorded footprint"  # the answer computes only where the kernel's record sees
KINDS = (NO_LOOPS, NO_FUSED, NUMPY_ONLY, ONE_STATEMENT, USES, NEVER_NAMES, FOOTPRINT)


@dataclass(frozen=True)
class Rule:
    """One rule a test cell grades, on the answer ``name``, in the judge's words for ``part``.

    ``skip``: definitions graded by another part, left out; ``skip_reached_from``: answers
    whose reachable definitions are left out too (their own part grades them);
    ``outputs``/``size_params``: of the one-statement rule; ``word``: of ``uses`` and
    ``never names``; ``expected`` and ``why``: what their messages expect, and the likely cause.
    """

    kind: str
    name: str
    part: str
    skip: tuple = ()
    skip_reached_from: tuple = ()
    outputs: tuple = ()
    size_params: tuple | None = None
    word: str = ""
    expected: str = ""
    why: str = ""


class RuledCheck(Protocol):
    """A check that declares the rules it grades (:func:`proves`)."""

    rules: tuple[Rule, ...]

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


def proves(*rule_list: Rule) -> Callable[[Callable[..., Any]], RuledCheck]:
    """Declare the rules a check grades (read by the release build): ``check.rules``."""

    def declare(check: Callable[..., Any]) -> RuledCheck:
        ruled = cast(RuledCheck, check)  # the function itself, given its attribute here
        ruled.rules = tuple(rule_list)
        return ruled

    return declare


def reached_names(name: str, namespace: object) -> set[str]:
    """Names of the functions and classes the answer ``name`` reaches (none if undefined)."""
    try:
        nodes = rules.reachable_definitions(name, namespace)
    except GradingError:
        return set()
    return {n.name for n in nodes if isinstance(n, ast.FunctionDef | ast.ClassDef)}


def mentions(node: ast.AST, word: str) -> int | None:
    """Line of the first mention of ``word`` (a name, an attribute, a string) in ``node``."""
    for sub in ast.walk(node):
        if (
            (isinstance(sub, ast.Name) and sub.id == word)
            or (isinstance(sub, ast.Attribute) and sub.attr == word)
            or (isinstance(sub, ast.Constant) and sub.value == word)
        ):
            return sub.lineno
    return None


def _skipped(rule: Rule, namespace: object) -> set[str]:
    skip = set(rule.skip)
    for other in rule.skip_reached_from:
        skip |= reached_names(other, namespace)
    return skip


def prove(rule_list: Iterable[Rule], namespace: object) -> None:
    """Prove every rule of ``rule_list`` on ``namespace``'s source; the first broken one fails."""
    for rule in rule_list:
        _prove_one(rule, namespace)


def _prove_one(rule: Rule, namespace: object) -> None:
    name, part = rule.name, rule.part
    if rule.kind == NO_LOOPS:
        rules.assert_no_loops(name, namespace, part, skip=_skipped(rule, namespace))
    elif rule.kind == NO_FUSED:
        rules.assert_no_fused_attention(name, namespace, part)
    elif rule.kind == NUMPY_ONLY:
        rules.assert_no_torch(name, namespace, part)
    elif rule.kind == ONE_STATEMENT:
        rules.assert_one_statement_per_output(
            name, namespace, part, rule.outputs, size_params=rule.size_params
        )
    elif rule.kind == FOOTPRINT:
        recordable.assert_recorded(name, namespace, part)
    elif rule.kind == USES:
        reached = rules.reachable_definitions(name, namespace)
        if not any(mentions(node, rule.word) for node in reached):
            fail(f"{part}: {name} must {rule.expected}", rule.expected, f"no use of {rule.word}")
    elif rule.kind == NEVER_NAMES:
        skip = _skipped(rule, namespace)
        for node in rules.reachable_definitions(name, namespace):
            own = getattr(node, "name", None)
            line = mentions(node, rule.word) if own not in skip or own == name else None
            if line is not None:
                fail(
                    f"{part}: {name} uses {rule.word} (line {line} of {own or 'a cell'})",
                    rule.expected,
                    f"{rule.word} applied in {name}",
                    rule.why,
                )
    else:
        raise ValueError(f"unknown rule kind {rule.kind!r}")
