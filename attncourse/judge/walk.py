"""The resolver's walk: which definitions an answer reaches, and what their code does.

A worklist of the student's functions and classes (each analysed once), and the walk over
their statements and expressions that records loops, generators, imports, library uses and
dunder attributes, handing calls to :mod:`attncourse.judge.calls` and names and attributes
to :mod:`attncourse.judge.scopes`. A part of :class:`~attncourse.judge.resolve.Reach`.
"""

from __future__ import annotations

import ast

from attncourse.dangerous import PLAIN_DUNDERS
from attncourse.judge.libraries import FUNCTIONS, LOOP_NODES, PLAIN_METHODS
from attncourse.judge.reachstate import ReachState
from attncourse.judge.values import Cls, Fn, Lib, LibObj, Obj


class Walk(ReachState):
    """The worklist and the walk (a part of :class:`~attncourse.judge.resolve.Reach`)."""

    # ---------------------------------------------------------------- the worklist

    def _schedule(self, node):
        if self.passive or node in self._seen:
            return
        name = getattr(node, "name", None)
        if name in self.skip and name != self.name:
            return
        self._seen.add(node)
        self.units.append(node)
        self._todo.append(node)

    def _statement(self, stmt, scope):
        if self.passive or stmt in self._walked:
            return
        self._walked.add(stmt)
        self.statements.append(stmt)
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names = ", ".join(a.name for a in stmt.names)
            self.add("import", f"`import {names}`", stmt)
            return
        self._walk(stmt, scope, None)

    def _analyse(self, node):
        if isinstance(node, ast.ClassDef):
            self._class(node)
            return
        scope = self.program.scopes.get(node)
        if scope is None:
            self.add("unresolved", "code the judge could not place in a scope", node)
            return
        if isinstance(node, ast.AsyncFunctionDef):
            self.add("loop", "an async function", node)
        for dec in getattr(node, "decorator_list", []):
            self._walk(dec, scope.parent or self.program.module, node)
        body = node.body if isinstance(node.body, list) else [node.body]
        for stmt in [*node.args.defaults, *(d for d in node.args.kw_defaults if d), *body]:
            self._walk(stmt, scope, node)

    def _class(self, node):
        scope = self.program.classes.get(node, self.program.module)
        for keyword in node.keywords:
            self.add("unresolved", f"`{keyword.arg}=` in class {node.name}", keyword.value)
        for expr in [*node.bases, *node.decorator_list]:
            self._walk(expr, scope, None)
        for _, value, where in self.program.external_attrs.get(node.name, []):
            if value is not None:  # ``Cls.attr = value`` or setattr(Cls, "attr", value)
                self._walk(value, where, None)
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):  # (no lambda here)
                name = stmt.name
                if name.startswith("__") and name.endswith("__") and name not in PLAIN_METHODS:
                    self.add(
                        "unresolved",
                        f"`{name}` in class {node.name} (Python calls it implicitly)",
                        stmt,
                    )
                self._schedule(stmt)
            elif isinstance(stmt, ast.ClassDef):
                self._schedule(stmt)
            else:
                self._walk(stmt, scope, None)

    # -------------------------------------------------------------- walking code

    def _walk(self, root, scope, unit):
        """Findings of the expressions and statements in ``root`` (nested scopes scheduled)."""
        todo = [root]
        while todo:
            node = todo.pop()
            kind = LOOP_NODES.get(type(node))
            if kind:
                self.add("loop", kind, node)
            if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
                self.add("loop", "a generator (yield)", node)
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = ", ".join(a.name for a in node.names)
                self.add("import", f"`import {names}`", node)
                for alias in node.names:
                    path = (
                        alias.name
                        if isinstance(node, ast.Import)
                        else f"{node.module}.{alias.name}"
                    )
                    self._library(path, node)
            if isinstance(node, FUNCTIONS):
                self._schedule(node)
                todo.extend(node.args.defaults)
                todo.extend(d for d in node.args.kw_defaults if d is not None)
                todo.extend(getattr(node, "decorator_list", []))
                continue
            if isinstance(node, ast.ClassDef):
                self._schedule(node)
                continue
            if isinstance(node, ast.Call):
                self._call(node, scope, unit)
                todo.extend(node.args)
                todo.extend(k.value for k in node.keywords)
                todo.extend(self._func_children(node.func))
                continue
            if isinstance(node, ast.Attribute):
                self._attribute_use(node, scope, unit)
                todo.extend(self._func_children(node))
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                for value in self._name(node.id, scope, node):
                    self._use(value, node, unit)
                continue
            todo.extend(ast.iter_child_nodes(node))

    @staticmethod
    def _func_children(func):
        """Sub-expressions of a callee or attribute chain other than the chain itself."""
        while isinstance(func, ast.Attribute):
            func = func.value
        if isinstance(func, ast.Name):
            return []
        return [func]

    def _use(self, value, node, unit):
        """A value the code refers to: the student's code is analysed, libraries recorded."""
        if isinstance(value, Fn):
            self._schedule(value.node)
        elif isinstance(value, (Cls, Obj)):
            self._schedule(value.node if isinstance(value, Cls) else value.cls)
        elif isinstance(value, (Lib, LibObj)) and node is not None:
            self._library(value.path, node)

    def _library(self, path, node):
        self.add("library", f"`{path}`", node, path)

    def _attribute_use(self, node, scope, unit):
        if node.attr.startswith("__") and node.attr not in PLAIN_DUNDERS:
            self.add("unresolved", f"`.{node.attr}`", node)
            return
        for value in self._eval(node, scope):
            self._use(value, node, unit)
