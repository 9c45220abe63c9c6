"""The names a command is given, checked against those the course has, before anything starts.

A typo must not look like an empty class: an assignment or a student the course does not
have stops the command with the names it does have, the closest ones first (difflib).
"""

import difflib
from collections.abc import Iterable, Sequence

SHOWN = 20  # names listed after the close matches; the rest are counted


class UnknownName(ValueError):
    """A command was given an assignment or a student the course does not have."""


def check_known(kind: str, names: Iterable[str], known: Sequence[str], where: str = "") -> None:
    """Raise :class:`UnknownName` naming each of ``names`` not in ``known`` (a ``kind``:
    "assignment", "student") and listing ``known``, close matches first."""
    unknown = [name for name in names if name not in known]
    if unknown:
        raise UnknownName("\n".join(unknown_line(kind, name, known, where) for name in unknown))


def unknown_line(kind: str, name: str, known: Sequence[str], where: str = "") -> str:
    """ "no assignment 'x' in this course; did you mean ...? It has ...": one line."""
    place = f" ({where})" if where else ""
    if not known:
        return f"no {kind} {name!r} in this course{place}: it has none"
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    rest = [k for k in known if k not in close]
    listed = ", ".join(rest[:SHOWN]) + (
        f" and {len(rest) - SHOWN} more" if len(rest) > SHOWN else ""
    )
    guess = f"; did you mean {' or '.join(close)}?" if close else ""
    others = (f" It also has: {listed}" if close else f"; it has: {listed}") if rest else ""
    return f"no {kind} {name!r} in this course{place}{guess}{others}"
