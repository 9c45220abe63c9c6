# Generated from the course's judge by the release build: do not edit.
"""What the student's cells do, anywhere, that can change an answer from outside it.

Rebinding an attribute of a library module or class (``torch.softmax = ...``), ``setattr``
on one or with a computed name, hooks (``register_*hook``, global module hooks,
``sys.settrace``), dynamic code (``exec``, ``eval``, ``__import__``, ``globals()``), frame and
dunder introspection, ``__torch_function__``/``__torch_dispatch__``, PyTorch's private paths
(``torch._C``, ``torch.utils._python_dispatch``: the dispatch-mode stack), imports of modules that reach the interpreter's
state or that the judge cannot read, and magics other than the inert ones. Every rule-bound
part counts these against its rule (:mod:`coursecheck.rules`), wherever they sit.
"""

from __future__ import annotations

import ast
import sys

from .dangerous import (
    DYNAMIC_BUILTINS,
    DYNAMIC_MODULES,
    FRAME_ATTRIBUTES,
    HOOK,
    PLAIN_DUNDERS,
    TORCH_HOOKS,
)
from .libraries import (
    FUNCTIONS,
    KNOWN_LIBRARIES,
    TAMPER_PATHS,
    private_torch,
    under,
)
from .program import Finding, Program, magic_call
from .resolve import Reach
from .values import Lib, Value, text_of


def tampering(program: Program) -> list[Finding]:
    """The tampering findings of ``program``'s student cells (computed once per program)."""
    return program.once("tampering", lambda: _Tampering(program).findings)


class _Tampering:
    """What the student's cells do to the interpreter, the libraries or the judge's view."""

    def __init__(self, program: Program):
        self.program = program
        self.findings: list[Finding] = []
        self.resolver = Reach(program, passive=True)
        for cell in program.cells:
            tree = program.trees.get(cell.index)
            if cell.student and tree is not None:
                self._scan(tree)

    def add(self, what, node):
        finding = self.program.finding("tamper", what, node)
        if finding not in self.findings:
            self.findings.append(finding)

    def _scope_of(self, node):
        return self.program.scope_of_node.get(node, self.program.module)

    def _scan(self, tree):
        for node in ast.walk(tree):
            magic = magic_call(node) if isinstance(node, ast.Expr) else None
            if magic is not None:
                self.add(f"the magic `%{magic[0]}`", node)
                continue
            if isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    if isinstance(stmt, FUNCTIONS) and stmt.name in TORCH_HOOKS:
                        self.add(f"`{stmt.name}` in class {node.name}", stmt)
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self._import(node)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                if node.id in DYNAMIC_BUILTINS or node.id == "__builtins__":
                    if not self._shadowed(node.id):
                        self.add(f"`{node.id}`", node)
            elif isinstance(node, ast.Attribute):
                self._attribute(node)
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = (
                    node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                )
                for target in targets:
                    self._target(target, node)
            elif isinstance(node, ast.Call):
                self._call(node)

    def _shadowed(self, name):
        return bool(self.program.module.names.get(name))

    def _import(self, node):
        modules = (
            [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        )
        for module in modules:
            root = module.split(".")[0]
            if getattr(node, "level", 0) or not root:
                self.add("a relative import", node)
            elif root in DYNAMIC_MODULES:
                self.add(f"`import {module}`", node)
            elif under(module, TAMPER_PATHS) or private_torch(module):
                self.add(f"`import {module}`", node)
            elif root not in sys.stdlib_module_names and root not in KNOWN_LIBRARIES:
                self.add(f"`import {module}`, a module the judge cannot read", node)

    def _attribute(self, node):
        if node.attr.startswith("__") and node.attr not in PLAIN_DUNDERS:
            self.add(f"`.{node.attr}`", node)
        elif node.attr in FRAME_ATTRIBUTES:
            self.add(f"`.{node.attr}`", node)
        else:
            for value in self._values(node):
                if isinstance(value, Lib) and (
                    under(value.path, TAMPER_PATHS) or private_torch(value.path)
                ):
                    self.add(f"`{value.path}`", node)

    def _values(self, expr):
        try:
            return self.resolver._eval(expr, self._scope_of(expr))
        except RecursionError:
            return {Value()}

    def _target(self, target, stmt):
        while isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._target(elt, stmt)
            return
        if isinstance(target, ast.Starred):
            self._target(target.value, stmt)
            return
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            base = target.value
            for value in self._values(base):
                if isinstance(value, Lib):
                    self.add(f"assigning to `{text_of(target)}` changes `{value.path}`", stmt)
                    return

    def _call(self, node):
        func = node.func
        attr = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if HOOK.search(attr or ""):
            self.add(f"`{text_of(func)}(...)` registers a hook", node)
            return
        if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args:
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self.add(f"`{func.id}(...)` with a computed attribute name", node)
                return
            if any(isinstance(v, Lib) for v in self._values(node.args[0])):
                self.add(f"`{func.id}({text_of(node.args[0])}, ...)` changes a library", node)
