# Generated from the course's judge by the release build: do not edit.
"""The resolver's calls: what a call in the student's code runs, followed or refused.

A call of the student's function, class or instance is an edge of the call graph; a library
callable is recorded by its path (and as iteration or a hook where it is one); a method of a
computed value must be one the judge knows; builtins with rules of their own (dynamic code,
``getattr`` with a computed name, ``map``) are judged here. A part of
:class:`~coursecheck.resolve.Reach`.
"""

from __future__ import annotations

import ast
import builtins

from .dangerous import DYNAMIC_BUILTINS, HOOK, PLAIN_DUNDERS
from .libraries import ITERATING, ITERATING_METHODS, under, value_methods
from .reachstate import ReachState
from .values import Cls, Fn, Lib, LibObj, Obj, Value, text_of


class Calls(ReachState):
    """Calls followed or refused (a part of :class:`~coursecheck.resolve.Reach`)."""

    def _call(self, node, scope, unit):
        func = node.func
        if isinstance(func, ast.Name) and self._is_builtin(func.id, scope):
            if self._builtin_call(func.id, node, scope, unit):
                return
        if isinstance(func, ast.Attribute) and func.attr.startswith("__"):
            if func.attr != "__init__":
                self.add("unresolved", f"`.{func.attr}(...)`", node)
                return
        values = self._eval(func, scope)
        if not values:
            self.add("unresolved", f"`{text_of(func)}(...)`, a call the judge cannot follow", node)
        for value in values:
            self._call_value(value, node, scope, unit)

    def _call_value(self, value, node, scope, unit):
        if isinstance(value, Fn):
            self._schedule(value.node)
            self._edge(unit, value.node)
        elif isinstance(value, Cls):
            self._schedule(value.node)
            for init in self._class_member(value.node, "__init__"):
                if isinstance(init, Fn):
                    self._edge(unit, init.node)
        elif isinstance(value, Obj):
            self._schedule(value.cls)
            for name in ("forward", "__call__"):
                for method in self._class_member(value.cls, name):
                    if isinstance(method, Fn):
                        self._edge(unit, method.node)
        elif isinstance(value, (Lib, LibObj)):
            path = value.path
            self._library(path, node)
            if under(path, ITERATING) or path.rsplit(".", 1)[-1] in ITERATING_METHODS:
                self.add("iterates", f"`{path.rsplit('.', 1)[-1]}(...)`", node, path)
            if any(k.arg == "key" for k in node.keywords):  # sorted, min, max, list.sort...
                self.add("iterates", f"`{path.rsplit('.', 1)[-1]}(..., key=...)`", node, path)
            if HOOK.search(path.rsplit(".", 1)[-1]):
                self.add("tamper", f"`{path}(...)` registers a hook", node)
        elif isinstance(value, Value):
            if isinstance(node.func, ast.Attribute):
                self._method_of_value(node.func.attr, node, scope, unit, value)
            else:
                self.add("unresolved", f"`{text_of(node.func)}(...)` calls {value.what}", node)

    def _method_of_value(self, attr, node, scope, unit, value):
        """``v.attr(...)`` on a value of unknown type: a known method, or a student's member."""
        if HOOK.search(attr):
            self.add("tamper", f"`.{attr}(...)` registers a hook", node)
            return
        if attr in ITERATING_METHODS or (
            attr == "sort" and any(k.arg == "key" for k in node.keywords)
        ):
            self.add("iterates", f"`.{attr}(...)`", node, f"value.{attr}")
            return
        members = [
            m
            for cls in self.program.class_attrs
            for m in self._class_member(cls, attr, inherit=False)
        ]
        for member in members:
            if isinstance(member, Value):  # bound to something the judge cannot follow
                self.add("unresolved", f"`.{attr}(...)` calls {member.what}", node)
            else:
                self._call_value(member, node, scope, unit)
        if not members and attr not in value_methods():
            self.add(
                "unresolved",
                f"`.{attr}(...)` on {value.what}, not a method the judge knows",
                node,
            )

    def _edge(self, unit, callee):
        if unit is not None:
            self.edges.setdefault(unit, set()).add(callee)

    def _is_builtin(self, name, scope):
        return not self._lookup(name, scope) and hasattr(builtins, name)

    def _builtin_call(self, name, node, scope, unit):
        """Builtins with rules of their own; True when the call is fully handled here."""
        args = node.args
        if name in DYNAMIC_BUILTINS:
            self.add("unresolved", f"`{name}(...)` runs code the judge cannot read", node)
            return True
        if name in ("getattr", "setattr", "delattr", "hasattr"):
            if len(args) < 2 or not (
                isinstance(args[1], ast.Constant) and isinstance(args[1].value, str)
            ):
                self.add("unresolved", f"`{name}(...)` with a computed attribute name", node)
                return True
            if args[1].value.startswith("__") and args[1].value not in PLAIN_DUNDERS:
                self.add("unresolved", f"`{name}(..., {args[1].value!r})`", node)
                return True
            if name == "getattr":
                attribute = ast.copy_location(
                    ast.Attribute(args[0], args[1].value, ast.Load()), node
                )
                self.program.cell_of.setdefault(attribute, self.program.cell_of.get(node, -1))
                self._attribute_use(attribute, scope, unit)
            return False
        if name == "super":
            return True
        if name in ("map", "filter"):
            self.add("iterates", f"`{name}(...)`", node, f"builtins.{name}")
            return False
        return False
