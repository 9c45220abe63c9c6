# Generated from the course's judge by the release build: do not edit.
"""What the parts of :class:`~coursecheck.resolve.Reach` share: its state and findings.

:class:`ReachState` is the base of each part (:mod:`~coursecheck.walk`,
:mod:`~coursecheck.calls`, :mod:`~coursecheck.scopes`,
:mod:`~coursecheck.callgraph`): the attributes ``Reach`` sets, the findings it records,
and, for the type checker only, the methods one part calls in another.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .program import Finding, Program, Scope
from .values import AbstractValue


class ReachState:
    """The resolver's state (set by ``Reach.__init__``) and its findings."""

    program: Program
    passive: bool  # only evaluate expressions: schedule and walk nothing
    name: str | None
    skip: frozenset[str]
    findings: list[Finding]
    units: list[ast.AST]  # reached function, lambda and class nodes, in order
    statements: list[ast.stmt]  # reached module-level binding statements
    edges: dict[ast.AST, set[ast.AST]]  # function node -> callee function nodes
    roots: list[AbstractValue]
    _seen: set[ast.AST]  # scheduled functions and classes
    _walked: set[ast.stmt]  # module-level statements walked
    _evaluating: set[tuple[int, int]]  # (expression, scope) pairs being evaluated
    _todo: list[ast.AST]

    def add(self, kind: str, what: str, node: ast.AST, path: str = "") -> None:
        finding = self.program.finding(kind, what, node, path)
        if finding not in self.findings:
            self.findings.append(finding)

    def of(self, *kinds: str) -> list[Finding]:
        return [f for f in self.findings if f.kind in kinds]

    if TYPE_CHECKING:  # defined by one part, called by another

        def _schedule(self, node: ast.AST) -> None: ...

        def _statement(self, stmt: ast.stmt, scope: Scope) -> None: ...

        def _library(self, path: str, node: ast.AST) -> None: ...

        def _attribute_use(
            self, node: ast.Attribute, scope: Scope, unit: ast.AST | None
        ) -> None: ...

        def _call(self, node: ast.Call, scope: Scope, unit: ast.AST | None) -> None: ...

        def _is_builtin(self, name: str, scope: Scope) -> bool: ...

        def _lookup(self, name: str, scope: Scope) -> list[tuple[str, object, Scope]]: ...

        def _name(self, name: str, scope: Scope, node: ast.AST | None) -> set[AbstractValue]: ...

        def _eval(self, expr: ast.AST, scope: Scope) -> set[AbstractValue]: ...

        def _class_member(
            self,
            cls: ast.ClassDef,
            attr: str,
            seen: set[ast.ClassDef] | None = None,
            inherit: bool = True,
        ) -> list[AbstractValue]: ...
