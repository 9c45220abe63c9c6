# Generated from the course's judge by the release build: do not edit.
"""The abstract values the resolver computes for an expression: what it may be at run time.

A library object by its dotted path (:class:`Lib`), an instance of a library class
(:class:`LibObj`), the student's function (:class:`Fn`), class (:class:`Cls`), instance
(:class:`Obj`) or ``super()`` (:class:`Super`), or a computed value that is not code
(:class:`Value`); and :func:`text_of`, how a finding quotes an expression.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Lib:
    path: str  # a library object by its dotted path ("torch.nn.functional.softmax")


@dataclass(frozen=True)
class Fn:
    node: ast.AST  # the student's function or lambda


@dataclass(frozen=True)
class Cls:
    node: ast.ClassDef


@dataclass(frozen=True)
class Obj:
    cls: ast.ClassDef  # an instance of the student's class


@dataclass(frozen=True)
class LibObj:
    path: str  # an instance of a library class


@dataclass(frozen=True)
class Super:
    cls: ast.ClassDef


@dataclass(frozen=True)
class Value:
    """A computed value (tensor, array, number, container) or an argument: not code."""

    what: str = "a computed value"


# what an expression may be at run time: one of the values above
AbstractValue = Lib | LibObj | Fn | Cls | Obj | Super | Value


def text_of(node: ast.AST) -> str:
    """``node`` as source, cut at 60 characters (its kind, if it cannot be printed)."""
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - a node that cannot be printed is named by its kind
        return type(node).__name__
    return text if len(text) <= 60 else text[:57] + "..."
