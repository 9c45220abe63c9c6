"""Answers worked from another student's instance of the worksheet (its Q3 and Q5 numbers).

Each id has its own numbers (``references.instance_of``); answers that are right for another
id are no answer of the graded one's. ``find_classmate`` names the classmate whose instance a
part's answers come from (searching the roster only when nothing else explains them), and
``copied_instances`` gives the named mistakes of the other instances a student may have used:
the example's, the id ``STUDENT_ID`` names, a classmate's.
"""

from collections.abc import Callable, Iterable

from torch import Tensor

from attncourse.constants import EXAMPLE_STUDENT
from attncourse.judge.checks import rel_error
from attncourse.judge.remote import StudentNamespace


def find_classmate(
    ns: StudentNamespace,
    got: tuple[Tensor, ...],
    answers_of: Callable[[str], tuple[Tensor, ...]],
    tol: float,
    part: str,
    explained: Iterable[Tensor] = (),
    distance: Callable[[Tensor, Tensor], float] = rel_error,
) -> str | None:
    """The classmate whose instance ``got`` (a part's answers, a tuple like ``answers_of(id)``)
    comes from, or None; a match is recorded in ``ns.instance_matches`` for the report.

    The roster (``ns.roster()``, the gradebook's students) is searched only when no answer is
    the graded id's own (``distance`` within ``tol``) or a named mistake (``explained``), and
    a classmate matches only when every answer is theirs: a copy, not one small coincidence.
    """
    pairs = [*zip(got, answers_of(ns.student), strict=True), *((got[0], e) for e in explained)]
    if any(distance(g, o) <= tol for g, o in pairs):
        return None
    for other in ns.roster():
        if other != ns.student and all(
            distance(g, o) <= tol for g, o in zip(got, answers_of(other), strict=True)
        ):
            if {"part": part, "student": other} not in ns.instance_matches:
                ns.instance_matches.append({"part": part, "student": other})
            return other
    return None


def copied_instances(
    ns: StudentNamespace, answer_of: Callable[[str], Tensor], classmate: str | None = None
) -> dict[str, Tensor]:
    """Named mistakes: ``answer_of(other)`` for the example instance (no id set), the id
    STUDENT_ID names if not the graded one, and ``classmate`` (:func:`find_classmate`), named
    to the student only as "another student's instance"."""
    others = {EXAMPLE_STUDENT: "the example instance (no id was set)"}
    if classmate is not None:
        others[classmate] = "another student's instance"
    written = ns.get("STUDENT_ID")
    if type(written) is str and written.strip():
        others[written.strip()] = f"student {written.strip()!r}'s instance"
    return {
        f"answers match {label}, not your own (graded as {ns.student!r}): work from the "
        "numbers the provided cell prints for your id": answer_of(other)
        for other, label in others.items()
        if other != ns.student
    }
