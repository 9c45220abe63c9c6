"""What a failed test says went wrong, grouped so that the same mistake reads as one row.

A test cell fails with the judge's message (:func:`attncourse.judge.checks.fail`: what was
checked, ``expected:``, ``got:``, ``likely cause:``; :func:`attncourse.judge.verdict.run_check`
for what the student's code raised). A message that names a likely cause is grouped by that
cause; one that does not is a *raw error*, grouped by its kind ("NameError: a name is not
defined"). Either way the sizes and numbers each student drew are taken out of the text, so
students who made one mistake at different random sizes fall in one group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nbformat.notebooknode import NotebookNode

_LIKELY = re.compile(r"(?:^|;\s*|\n\s*)likely cause:\s*(.+)", re.IGNORECASE)
_UNDEFINED = (
    re.compile(r"`(\w+)` is not defined"),  # the judge's answer(): the name the part asks for
    re.compile(r"name '(\w+)' is not defined"),  # Python's own NameError
)
_RAISED = re.compile(r"raised (\w+)(?: while it was being checked)?:\s*(.*)", re.DOTALL)
_NOT_RUN = "the check could not be completed:"

# What differs between two students who made the same mistake: the sizes and numbers each drew.
_SIZES = [
    (re.compile(r"\((?:\s*-?\d+\s*,)+\s*-?\d*\s*\)"), "(…)"),  # (13, 14, 8, 10, 6)
    (re.compile(r"\[(?:\s*-?\d+\s*,)*\s*-?\d+\s*\]"), "[…]"),  # [2, 5, 7]
    (re.compile(r"-?\d+\.\d*(?:e[-+]?\d+)?|-?\d+e[-+]?\d+", re.IGNORECASE), "…"),  # 0.0123, 1e-06
    (re.compile(r"(\w)\s*=\s*-?\d+"), r"\1=…"),  # H=4
    (re.compile(r"\b\d{2,}\b"), "…"),  # 13
]


@dataclass(frozen=True)
class Cause:
    """The group a failed test belongs to."""

    text: str  # the likely cause, or the raw error's kind, with sizes taken out
    named: bool  # True when the judge named a likely cause
    detail: str = ""  # what differs inside the group and helps a grader (the undefined name)


def without_sizes(text: str) -> str:
    """``text`` with the sizes and numbers a student drew replaced by "…"."""
    for pattern, replacement in _SIZES:
        text = pattern.sub(replacement, text)
    return text


def _lines(output: NotebookNode) -> list[str]:
    return [line.strip() for line in str(output.get("evalue", "")).splitlines() if line.strip()]


def not_attempted(output: NotebookNode) -> bool:
    """True when the test failed because the answer is still the stub (``NotImplementedError``)."""
    return "NotImplementedError" in f"{output.get('ename', '')} {output.get('evalue', '')}"


def _first_sentence(text: str, width: int = 120) -> str:
    text = re.split(r"(?<=[.;])\s", text.strip(), maxsplit=1)[0].rstrip(".;")
    return text if len(text) <= width else text[: width - 1] + "…"


def cause_of(output: NotebookNode) -> Cause:
    """The :class:`Cause` of a failed test's error output."""
    evalue = str(output.get("evalue", ""))
    likely = _LIKELY.search(evalue)
    if likely:
        return Cause(without_sizes(likely.group(1).strip()), named=True)
    for pattern in _UNDEFINED:
        undefined = pattern.search(evalue)
        if undefined:
            return Cause("NameError: a name is not defined", False, undefined.group(1))
    lines = _lines(output)
    first = lines[0] if lines else ""
    raised = _RAISED.search(first)
    if raised:
        kind, message = raised.groups()
        return Cause(f"{kind}: {_first_sentence(without_sizes(message))}", False)
    if first.startswith(_NOT_RUN):
        return Cause(_first_sentence(without_sizes(first)), False)
    what = first.split(": ", 1)[-1] if ": " in first else first
    return Cause(f"{output.get('ename', 'Error')}: {_first_sentence(without_sizes(what))}", False)
