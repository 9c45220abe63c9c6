# Generated from the course's judge by the release build: do not edit.
"""The resolver's names and attributes: the abstract values an expression may have.

A name is looked up as Python would (function scopes, class bodies skipped, the module, where
the student's bindings and the course's both count); each binding gives values
(:mod:`coursecheck.values`); an attribute is a library path, a member of the student's
class or its bases, or a computed value. A part of :class:`~coursecheck.resolve.Reach`.
"""

from __future__ import annotations

import ast
import builtins

from .dangerous import DYNAMIC_BUILTINS
from .libraries import DEFINITIONS, library_object
from .reachstate import ReachState
from .values import AbstractValue, Cls, Fn, Lib, LibObj, Obj, Super, Value


class Scopes(ReachState):
    """Names, bindings and attributes (a part of :class:`~coursecheck.resolve.Reach`)."""

    def _lookup(self, name, scope):
        """The bindings of ``name`` seen from ``scope``: its function scopes (class bodies
        skipped, as Python does), then the module, where the student's bindings and the
        course's both count (either may be the one in force when the answer runs)."""
        current = scope
        while current is not None and current is not self.program.module:
            if current.node is not None:
                if name in current.declared_global:
                    break
                if name in current.names:
                    return current.names[name]
            current = current.parent
        found = list(self.program.module.names.get(name, []))
        if name in self.program.course:
            found.append(("course", self.program.course[name], self.program.module))
        return found

    def _global(self, name, node):
        return self._name(name, self.program.module, node)

    def _name(self, name, scope, node):
        if name == "__builtins__":
            if node is not None:
                self.add("unresolved", "`__builtins__`", node)
            return set()
        bindings = self._lookup(name, scope)
        if not bindings:
            if hasattr(builtins, name):
                if name in DYNAMIC_BUILTINS or name in ("getattr", "setattr", "delattr"):
                    if node is not None:
                        self.add("unresolved", f"`{name}` used as a value", node)
                return {Lib(f"builtins.{name}")}
            return set()
        values: set[AbstractValue] = set()
        for kind, payload, where in bindings:
            values |= self._binding(name, kind, payload, where)
        return values

    def _binding(self, name, kind, payload, where):
        if kind == "course":
            return {Lib(payload)} if payload else {Value("the course's data")}
        if kind == "def":
            return {Cls(payload) if isinstance(payload, ast.ClassDef) else Fn(payload)}
        if kind == "import":
            path, stmt = payload
            if where is self.program.module:
                self._statement(stmt, where)
            return {Lib(path)}
        if kind == "param":
            owner = where.node
            if payload == 0 and where.cls is not None and not self._is_static(owner):
                return {Cls(where.cls) if self._is_classmethod(owner) else Obj(where.cls)}
            return {Value(f"`{name}`, a value passed in")}
        value, stmt = payload
        if where is self.program.module and stmt is not None:
            self._statement(stmt, where)
        if value is None:
            return {Value(f"`{name}`, a value computed by the code")}
        return self._eval(value, where)

    @staticmethod
    def _is_static(node):
        return any(
            isinstance(d, ast.Name) and d.id == "staticmethod"
            for d in getattr(node, "decorator_list", [])
        )

    @staticmethod
    def _is_classmethod(node):
        return any(
            isinstance(d, ast.Name) and d.id == "classmethod"
            for d in getattr(node, "decorator_list", [])
        )

    def _eval(self, expr, scope):
        """The set of abstract values ``expr`` may have."""
        key = (id(expr), id(scope))
        if key in self._evaluating:
            return {Value()}
        self._evaluating.add(key)
        try:
            return self._eval_inner(expr, scope)
        finally:
            self._evaluating.discard(key)

    def _eval_inner(self, expr, scope):
        if isinstance(expr, ast.Name):
            return self._name(expr.id, scope, None)
        if isinstance(expr, ast.Attribute):
            return self._attribute(expr, scope)
        if isinstance(expr, ast.Lambda):
            return {Fn(expr)}
        if isinstance(expr, ast.Call):
            return self._result(expr, scope)
        if isinstance(expr, ast.IfExp):
            return self._eval(expr.body, scope) | self._eval(expr.orelse, scope)
        if isinstance(expr, ast.BoolOp):
            return set().union(*(self._eval(v, scope) for v in expr.values))
        if isinstance(expr, ast.NamedExpr):
            return self._eval(expr.value, scope)
        if isinstance(expr, ast.Starred):
            return self._eval(expr.value, scope)
        if isinstance(expr, ast.Subscript):
            return {Value("the result of a subscript")}
        return {Value()}

    def _attribute(self, expr, scope):
        attr = expr.attr
        out: set[AbstractValue] = set()
        for base in self._eval(expr.value, scope):
            if isinstance(base, Lib):
                out.add(Lib(f"{base.path}.{attr}"))
            elif isinstance(base, LibObj):
                out.add(Lib(f"{base.path}.{attr}"))
            elif isinstance(base, (Cls, Obj)):
                cls = base.node if isinstance(base, Cls) else base.cls
                out |= set(self._class_member(cls, attr)) or {Value(f"`.{attr}`")}
            elif isinstance(base, Super):
                out |= self._base_member(base.cls, attr)
            else:
                out.add(Value(f"`.{attr}` of {getattr(base, 'what', 'a function')}"))
        return out

    def _result(self, call, scope):
        func = call.func
        if isinstance(func, ast.Name) and func.id == "super" and self._is_builtin("super", scope):
            owner = scope
            while owner is not None and owner.cls is None:
                owner = owner.parent
            return {Super(owner.cls)} if owner is not None else {Value()}
        if (
            isinstance(func, ast.Name)
            and func.id in ("staticmethod", "classmethod", "property")
            and call.args
        ):
            return self._eval(call.args[0], scope)
        if (
            isinstance(func, ast.Name)
            and func.id == "getattr"
            and len(call.args) >= 2
            and isinstance(call.args[1], ast.Constant)
            and isinstance(call.args[1].value, str)
        ):
            return self._attribute(
                ast.Attribute(call.args[0], call.args[1].value, ast.Load()), scope
            )
        out: set[AbstractValue] = set()
        for value in self._eval(func, scope):
            if isinstance(value, Cls):
                out.add(Obj(value.node))
            elif isinstance(value, Lib):
                obj = library_object(value.path)
                out.add(LibObj(value.path) if isinstance(obj, type) else Value())
            else:
                out.add(Value("the result of a call"))
        return out

    def _bases(self, cls):
        scope = self.program.classes.get(cls, self.program.module)
        out: list[AbstractValue] = []
        for base in cls.bases:
            out += sorted(self._eval(base, scope), key=repr)
        return out

    def _class_member(self, cls, attr, seen=None, inherit=True):
        """Values of ``attr`` on the student's class ``cls`` and its bases (instance bindings
        ``self.attr = ...`` and later ``Cls.attr = ...`` included)."""
        seen = seen or set()
        if cls in seen:
            return []
        seen.add(cls)
        out: list[AbstractValue] = []
        for value, scope in self.program.class_attrs.get(cls, {}).get(attr, []):
            if isinstance(value, DEFINITIONS):
                out.append(Cls(value) if isinstance(value, ast.ClassDef) else Fn(value))
            elif value is None:
                out.append(Value(f"`.{attr}`"))
            else:
                out += sorted(self._eval(value, scope), key=repr)
        for a, value, scope in self.program.external_attrs.get(cls.name, []):
            if a == attr:
                out += sorted(self._eval(value, scope), key=repr) if value else [Value()]
        if out or not inherit:
            return out
        for base in self._bases(cls):
            if isinstance(base, Cls):
                out += self._class_member(base.node, attr, seen)
            elif isinstance(base, Lib):
                out.append(Lib(f"{base.path}.{attr}"))
        return out

    def _base_member(self, cls, attr):
        out: set[AbstractValue] = set()
        for base in self._bases(cls):
            if isinstance(base, Cls):
                out |= set(self._class_member(base.node, attr))
            elif isinstance(base, Lib):
                out.add(Lib(f"{base.path}.{attr}"))
        return out or {Value()}
