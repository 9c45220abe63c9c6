"""What an answer's code can reach, resolved statically from the notebook's source.

The source rules (:mod:`attncourse.judge.rules`) are proofs over this module's result.
Starting from the definition of an answer, every name its code uses is resolved, the way a
type checker would: to a ``def`` or ``class`` of the student's cells (analysed in turn), to a
library object the course's own cells import (known by its dotted module path), to a builtin,
or to a value the code computes (a tensor, an array, a number), whose methods must be known
methods of such values. Whatever cannot be resolved this way is recorded as a
:class:`Finding` with its cell and line, never guessed: a call through a subscript or a
computed ``getattr``, ``exec``, dynamic imports, a value passed in and called, implicit calls
(operators and iteration of the student's own classes, metaclasses). Loops, higher-order
iteration (``map``, ``functools.reduce``, ``torch.vmap``...), generators and recursion (a cycle
in the call graph) are findings too, and so is every library object used, for the rules to
judge by its path.

Separately, :meth:`Program.tampering` lists what any student cell does that can change what
an answer computes when it is called, wherever it sits: rebinding attributes of library
modules or classes, hooks, dynamic code, introspection of frames and globals, imports of
modules the judge cannot read. Nothing here runs the student's code or asks the kernel.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import re
import sys
from dataclasses import dataclass, field

from IPython.core.inputtransformer2 import TransformerManager

from attncourse.cells import CodeCell

_transform = TransformerManager().transform_cell

# Magics whose code runs in the notebook's namespace: read like the cell's own statements.
CODE_MAGICS = {"time", "capture"}
# Magics that run no code of the notebook and change nothing an answer computes.
INERT_MAGICS = {"matplotlib", "timeit", "who", "whos", "pinfo", "precision", "config", "lsmagic"}

# Library roots the judge resolves attribute paths in (what the course's cells import).
LIBRARY_ROOTS = {"torch", "numpy", "math", "builtins", "functools", "itertools", "operator"}
# Builtins that run or reach code the judge cannot read (anywhere in the student's cells).
DYNAMIC_BUILTINS = {
    "exec",
    "eval",
    "compile",
    "__import__",
    "globals",
    "locals",
    "vars",
    "breakpoint",
    "__build_class__",
}
# Modules whose import makes every rule unverifiable: they reach the interpreter's own state.
DYNAMIC_MODULES = {
    "builtins",
    "sys",
    "importlib",
    "ctypes",
    "gc",
    "inspect",
    "types",
    "code",
    "codeop",
    "runpy",
    "pickle",
    "marshal",
    "dill",
    "cloudpickle",
    "atexit",
    "signal",
    "threading",
    "_thread",
    "multiprocessing",
    "concurrent",
    "asyncio",
    "weakref",
    "trace",
    "pdb",
    "bdb",
    "IPython",
    "ipykernel",
    "attncourse",
}
# Dunder attributes a student's code may name: everything else reaches interpreter internals.
PLAIN_DUNDERS = {"__init__", "__name__", "__doc__", "__qualname__"}
# Dunder methods a student's class may define: any other is called implicitly by Python.
PLAIN_METHODS = {"__init__", "__call__", "__repr__", "__str__"}
HOOK = re.compile(r"(^|_)(register_.*hook.*|register_module_.*|settrace|setprofile|addaudithook)$")
# Library callables that call a function over and over: iteration without loop syntax.
ITERATING = (
    "builtins.map",
    "builtins.filter",
    "builtins.iter",
    "functools.reduce",
    "itertools",
    "operator.methodcaller",
    "torch.vmap",
    "torch.func",
    "torch.nn.Sequential",
    "torch.nn.ModuleList",
    "torch.nn.ModuleDict",
    "torch.nn.Module.apply",
    "numpy.vectorize",
    "numpy.frompyfunc",
    "numpy.apply_along_axis",
    "numpy.apply_over_axes",
    "numpy.piecewise",
    "numpy.nditer",
    "numpy.ndenumerate",
    "numpy.ndindex",
)
ITERATING_METHODS = {"apply_", "map_", "map2_", "apply"}
KEY_FUNCTIONS = {"builtins.sorted", "builtins.min", "builtins.max"}
# Library paths that reach PyTorch's machinery below its public API, or replace its operators.
TAMPER_PATHS = ("torch.library", "torch.overrides", "torch.utils.hooks", "torch._C")
# Libraries a student's cell may import without making the rules unverifiable (the import
# rule still charges the import to its part).
KNOWN_LIBRARIES = {"torch", "numpy", "matplotlib", "scipy"}

# What every assignment's first cell imports (assumed when only the student's cells are given).
FIRST_CELL = "import torch\nimport torch.nn as nn\nimport numpy as np\n"

LOOP_NODES = {
    ast.For: "a for loop",
    ast.AsyncFor: "an async for loop",
    ast.While: "a while loop",
    ast.ListComp: "a list comprehension",
    ast.SetComp: "a set comprehension",
    ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression",
}
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


# ----------------------------------------------------------------------------- the cells


def as_cells(sources) -> list[CodeCell]:
    """Cells from a list of :class:`CodeCell` or of plain source strings (all the student's)."""
    return [
        s if isinstance(s, CodeCell) else CodeCell(index=i, source=s)
        for i, s in enumerate(sources or ())
    ]


@dataclass(frozen=True)
class Finding:
    """Something the code does that a rule judges: ``kind``, what (for the message) and where."""

    kind: str  # loop, iterates, recursion, library, unresolved, import, tamper
    what: str
    cell: int
    line: int
    path: str = ""  # the library path, for kind "library"

    @property
    def where(self) -> str:
        return f"cell {self.cell + 1}, line {self.line}"

    def __str__(self) -> str:
        return f"{self.what} in {self.where}"


# ------------------------------------------------------------------ abstract values


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


@functools.cache
def library_object(path: str):
    """The object at ``path`` under a known library root, or None (never student code)."""
    parts = path.split(".")
    if parts[0] not in LIBRARY_ROOTS or any(p.startswith("__") for p in parts):
        return None
    try:
        obj = importlib.import_module(parts[0])
        for part in parts[1:]:
            obj = getattr(obj, part)
    except Exception:  # noqa: BLE001 - an unknown path is not an object
        return None
    return obj


@functools.cache
def value_methods() -> frozenset:
    """Public methods and attributes of tensors, arrays, modules and plain containers."""
    import numpy
    import torch

    kinds = (torch.Tensor, numpy.ndarray, torch.nn.Module, torch.Size, dict, list, tuple, str)
    names = {n for kind in kinds for n in dir(kind) if not n.startswith("_")}
    names |= {n for kind in (int, float, complex, numpy.generic) for n in dir(kind)}
    return frozenset(n for n in names if not n.startswith("_") and not HOOK.search(n))


def _under(path: str, prefixes) -> bool:
    return any(path == p or path.startswith(p + ".") for p in prefixes)


def _python(text):
    """A cell's text as Python (IPython magics turned into calls), parsed; None if it cannot be."""
    try:
        return _MagicCode().visit(ast.parse(_transform(text)))
    except (SyntaxError, ValueError):
        return None


def _magic_call(node):
    call = node.value if isinstance(node, ast.Expr) else None
    if (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in ("run_line_magic", "run_cell_magic")
        and isinstance(call.func.value, ast.Call)
        and isinstance(call.func.value.func, ast.Name)
        and call.func.value.func.id == "get_ipython"
        and len(call.args) >= 2
        and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args)
    ):
        return call.args[0].value, call.args[-1].value
    return None


class _MagicCode(ast.NodeTransformer):
    """``%time stmt`` and ``%%time``/``%%capture`` cells replaced by the statements they run;
    inert magics dropped (every other magic stays a call of ``get_ipython``, which is refused)."""

    def visit_Expr(self, node):
        magic = _magic_call(node)
        if magic is None:
            return node
        name, text = magic
        if name in INERT_MAGICS:
            return None
        if name not in CODE_MAGICS:
            return node
        inner = _python(text)
        return inner.body if inner is not None else node


def _target_names(node):
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [n for elt in node.elts for n in _target_names(elt)]
    if isinstance(node, ast.Starred):
        return _target_names(node.value)
    return []


def _own_nodes(node):
    """Nodes of a scope's body, not descending into nested functions, lambdas or classes."""
    body = node.body if isinstance(node.body, list) else [node.body]
    todo = list(body)
    if isinstance(node, FUNCTIONS):
        args = node.args
        todo += [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
    while todo:
        sub = todo.pop()
        yield sub
        if not isinstance(sub, (*DEFINITIONS, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(sub))
        else:  # decorators, bases and defaults run in this scope
            todo.extend(getattr(sub, "decorator_list", []))
            todo.extend(getattr(sub, "bases", []))
            todo.extend(k.value for k in getattr(sub, "keywords", []))
            if isinstance(sub, FUNCTIONS):
                todo.extend(sub.args.defaults)
                todo.extend(d for d in sub.args.kw_defaults if d is not None)


def _pairs(stmt):
    """(target name, value expression or None) for every name a statement binds."""
    if isinstance(stmt, ast.Assign):
        out = []
        for target in stmt.targets:
            if (
                isinstance(target, (ast.Tuple, ast.List))
                and isinstance(stmt.value, (ast.Tuple, ast.List))
                and len(target.elts) == len(stmt.value.elts)
                and not any(isinstance(e, ast.Starred) for e in target.elts)
            ):
                for t, v in zip(target.elts, stmt.value.elts, strict=True):
                    out += [(n, v if isinstance(t, ast.Name) else None) for n in _target_names(t)]
            elif isinstance(target, ast.Name):
                out.append((target.id, stmt.value))
            else:
                out += [(n, None) for n in _target_names(target)]
        return out
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return [(stmt.target.id, stmt.value)]
    if isinstance(stmt, ast.NamedExpr):
        return [(stmt.target.id, stmt.value)]
    if isinstance(stmt, (ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension)):
        return [(n, None) for n in _target_names(stmt.target)]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [
            (n, None) for i in stmt.items for n in _target_names(i.optional_vars or ast.Tuple([]))
        ]
    if isinstance(stmt, ast.ExceptHandler) and stmt.name:
        return [(stmt.name, None)]
    return []


@dataclass
class Scope:
    """Names bound in one function (or the module): name -> [(kind, payload)]."""

    node: ast.AST | None  # None: the module
    parent: Scope | None
    cls: ast.ClassDef | None = None  # the class a method belongs to
    class_body: ast.ClassDef | None = None  # set on the scope of a class body
    names: dict = field(default_factory=dict)
    declared_global: set = field(default_factory=set)

    def bind(self, name, kind, payload):
        self.names.setdefault(name, []).append((kind, payload, self))


# ------------------------------------------------------------------------ the program


class Program:
    """The notebook's code cells, parsed once; reach and tampering are computed from them."""

    def __init__(self, cells):
        self.cells = as_cells(cells)
        self.trees = {}
        self.cell_of = {}
        for cell in self.cells:
            if cell.test:
                continue
            tree = _python(cell.source)
            if tree is None:
                continue
            self.trees[cell.index] = tree
            for node in ast.walk(tree):
                self.cell_of[node] = cell.index
        self.module = Scope(None, None)
        self.scope_of_node = {}  # node -> the function scope whose own code it is
        self.course = {}  # name -> library path bound by the course's own cells (None: data)
        self.scopes = {}  # function node -> Scope
        self.classes = {}  # ClassDef -> (scope it is defined in)
        self.class_attrs = {}  # ClassDef -> {attr: [(value expr, scope)]}
        self.external_attrs = {}  # name -> [(attr, value, scope)] for ``Name.attr = v`` outside
        for cell in self.cells:
            tree = self.trees.get(cell.index)
            if tree is not None:
                self._collect(tree, self.module, course=not cell.student)
        if all(cell.student for cell in self.cells):  # plain sources: the course's first cell
            self._collect(ast.parse(FIRST_CELL), self.module, course=True)

    # --------------------------------------------------------------- binding tables

    def _collect(self, node, scope, course=False):
        """Record the bindings of ``node``'s body in ``scope``, and of nested scopes."""
        for sub in _own_nodes(node):
            self._bind_stmt(sub, scope, course)
        for sub in _own_nodes(node):
            if isinstance(sub, FUNCTIONS):
                self._function_scope(sub, scope)
            elif isinstance(sub, ast.ClassDef):
                self._class(sub, scope)

    def _bind_stmt(self, sub, scope, course):
        target_scope = scope
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._bind(scope, sub.name, "def", sub, course)
            return
        if isinstance(sub, (ast.Import, ast.ImportFrom)):
            for alias in sub.names:
                if isinstance(sub, ast.Import):
                    bound = alias.asname or alias.name.split(".")[0]
                    path = alias.name if alias.asname else alias.name.split(".")[0]
                else:
                    bound = alias.asname or alias.name
                    path = f"{sub.module or ''}.{alias.name}".lstrip(".")
                self._bind(target_scope, bound, "import", (path, sub), course)
            return
        for name, value in _pairs(sub):
            self._bind(scope, name, "value", (value, sub), course)
        if isinstance(sub, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    self.external_attrs.setdefault(target.value.id, []).append(
                        (target.attr, getattr(sub, "value", None), scope)
                    )
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Name)
            and sub.func.id == "setattr"
            and len(sub.args) == 3
            and isinstance(sub.args[0], ast.Name)
            and isinstance(sub.args[1], ast.Constant)
            and isinstance(sub.args[1].value, str)
        ):
            self.external_attrs.setdefault(sub.args[0].id, []).append(
                (sub.args[1].value, sub.args[2], scope)
            )

    def _bind(self, scope, name, kind, payload, course):
        if course and scope is self.module:
            if kind == "import":
                self.course[name] = payload[0]
            elif name not in self.course:
                self.course[name] = None
            return
        if scope.node is not None and name in scope.declared_global:
            scope = self.module
        scope.bind(name, kind, payload)

    def _function_scope(self, node, parent):
        scope = Scope(node, parent, cls=parent.class_body)
        for sub in _own_nodes(node):
            self.scope_of_node[sub] = scope
            if isinstance(sub, ast.Global):
                scope.declared_global |= set(sub.names)
        args = node.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        params += [a for a in (args.vararg, args.kwarg) if a is not None]
        for index, arg in enumerate(params):
            scope.bind(arg.arg, "param", index)
        self.scopes[node] = scope
        self._collect(node, scope)

    def _class(self, node, scope):
        self.classes[node] = scope
        attrs = self.class_attrs.setdefault(node, {})
        holder = Scope(None, scope, class_body=node)
        for stmt in node.body:
            if isinstance(stmt, DEFINITIONS):
                attrs.setdefault(stmt.name, []).append((stmt, scope))
            for name, value in _pairs(stmt):
                attrs.setdefault(name, []).append((value, scope))
            if isinstance(stmt, FUNCTIONS):
                self._function_scope(stmt, holder)
                method_scope = self.scopes[stmt]
                method_scope.cls = node
                for sub in _own_nodes(stmt):
                    self._self_attr(sub, stmt, node, method_scope)
            elif isinstance(stmt, ast.ClassDef):
                self._class(stmt, scope)
            else:
                for sub in ast.walk(stmt):
                    if isinstance(sub, ast.Lambda):
                        self._function_scope(sub, holder)

    def _self_attr(self, sub, method, cls, scope):
        """``self.x = value`` in a method binds attribute x of the class's instances."""
        args = method.args.posonlyargs + method.args.args
        if not args or not isinstance(sub, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            return
        targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
        for target in targets:
            items = [(target, getattr(sub, "value", None))]
            if isinstance(target, ast.Tuple) and isinstance(sub.value, ast.Tuple):
                if len(target.elts) == len(sub.value.elts):
                    items = list(zip(target.elts, sub.value.elts, strict=True))
            for t, value in items:
                if (
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == args[0].arg
                ):
                    self.class_attrs[cls].setdefault(t.attr, []).append((value, scope))

    def where(self, node) -> tuple[int, int]:
        return self.cell_of.get(node, -1), getattr(node, "lineno", 0)

    def finding(self, kind, what, node, path=""):
        cell, line = self.where(node)
        return Finding(kind, what, cell, line, path)

    # ----------------------------------------------------------------- definitions

    def definitions(self, name):
        """Module-level ``def``/``class`` nodes binding ``name`` in the student's cells."""
        return [p for k, p, _ in self.module.names.get(name, []) if k == "def"]

    def student_bindings(self, name):
        return self.module.names.get(name, [])

    def reach(self, name, skip=frozenset()) -> Reach:
        return Reach(self, name, frozenset(skip))

    def reach_cell(self, index, skip=frozenset()) -> Reach:
        """What the module-level code of cell ``index`` reaches (answers written as statements)."""
        return Reach(self, None, frozenset(skip), cell=index)

    @functools.cached_property
    def tampering(self) -> list[Finding]:
        """What any student cell does that can change an answer's computation from outside it."""
        return _Tampering(self).findings


# -------------------------------------------------------------------- the resolver


class Reach:
    """Everything the answer ``name`` reaches, and the findings on the way."""

    def __init__(self, program: Program, name=None, skip=frozenset(), cell=None, passive=False):
        self.program = program
        self.passive = passive  # only evaluate expressions: schedule and walk nothing
        self.name = name
        self.skip = skip
        self.findings: list[Finding] = []
        self.units = []  # reached function, lambda and class nodes, in order
        self.statements = []  # reached module-level binding statements
        self.edges = {}  # function node -> callee function nodes
        self._seen = set()  # scheduled functions and classes
        self._walked = set()  # module-level statements walked
        self._evaluating = set()
        self._todo = []
        self.roots = []
        if passive:
            return
        if cell is not None:
            tree = program.trees.get(cell)
            if tree is not None:
                for stmt in tree.body:
                    self._statement(stmt, program.module)
        else:
            self.roots = sorted(self._global(name, None), key=repr)
            for value in self.roots:
                self._use(value, None, None)
        while self._todo:
            self._analyse(self._todo.pop(0))
        self._recursion()

    # ------------------------------------------------------------------- findings

    def add(self, kind, what, node, path=""):
        finding = self.program.finding(kind, what, node, path)
        if finding not in self.findings:
            self.findings.append(finding)

    def of(self, *kinds):
        return [f for f in self.findings if f.kind in kinds]

    @property
    def primary(self):
        """The last ``def``/``class`` of the answer's own name, else the definition an alias
        of that name refers to (None when the source shows none)."""
        defs = self.program.definitions(self.name) if self.name else []
        if defs:
            return defs[-1]
        nodes = [v.node for v in self.roots if isinstance(v, (Fn, Cls))]
        nodes = [n for n in nodes if not isinstance(n, ast.Lambda)]
        return max(nodes, key=self.program.where) if nodes else None

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
            if isinstance(stmt, FUNCTIONS):
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

    # ---------------------------------------------------------------------- calls

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
            self.add("unresolved", f"`{_text(func)}(...)`, a call the judge cannot follow", node)
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
            if _under(path, ITERATING) or path.rsplit(".", 1)[-1] in ITERATING_METHODS:
                self.add("iterates", f"`{path.rsplit('.', 1)[-1]}(...)`", node, path)
            if path in KEY_FUNCTIONS and any(k.arg == "key" for k in node.keywords):
                self.add("iterates", f"`{path.rsplit('.', 1)[-1]}(..., key=...)`", node, path)
            if HOOK.search(path.rsplit(".", 1)[-1]):
                self.add("tamper", f"`{path}(...)` registers a hook", node)
        elif isinstance(value, Value):
            if isinstance(node.func, ast.Attribute):
                self._method_of_value(node.func.attr, node, scope, unit, value)
            else:
                self.add("unresolved", f"`{_text(node.func)}(...)` calls {value.what}", node)

    def _method_of_value(self, attr, node, scope, unit, value):
        """``v.attr(...)`` on a value of unknown type: a known method, or a student's member."""
        if HOOK.search(attr):
            self.add("tamper", f"`.{attr}(...)` registers a hook", node)
            return
        if attr in ITERATING_METHODS:
            self.add("iterates", f"`.{attr}(...)`", node, f"value.{attr}")
            return
        members = [
            m
            for cls in self.program.class_attrs
            for m in self._class_member(cls, attr, inherit=False)
        ]
        for member in members:
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

    # ------------------------------------------------------------------ evaluation

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
        values = set()
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
        out = set()
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
        out = set()
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
        out = []
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
        out = []
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
        out = set()
        for base in self._bases(cls):
            if isinstance(base, Cls):
                out |= set(self._class_member(base.node, attr))
            elif isinstance(base, Lib):
                out.add(Lib(f"{base.path}.{attr}"))
        return out or {Value()}

    # ------------------------------------------------------------------- recursion

    def _recursion(self):
        """A cycle in the call graph of the student's functions is iteration in disguise."""
        state = {}

        def visit(node, stack):
            state[node] = 1
            for callee in sorted(self.edges.get(node, ()), key=lambda n: self.program.where(n)):
                if state.get(callee) == 1:
                    names = [getattr(n, "name", "a lambda") for n in stack[stack.index(callee) :]]
                    cycle = " -> ".join([*names, getattr(callee, "name", "a lambda")])
                    self.add("recursion", f"recursion ({cycle})", callee)
                elif callee not in state:
                    visit(callee, [*stack, callee])
            state[node] = 2

        for node in list(self.edges):
            if node not in state:
                visit(node, [node])


# ------------------------------------------------------------------------ tampering


class _Tampering:
    """What the student's cells do to the interpreter, the libraries or the judge's view."""

    def __init__(self, program: Program):
        self.program = program
        self.findings = []
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
            magic = _magic_call(node) if isinstance(node, ast.Expr) else None
            if magic is not None:
                self.add(f"the magic `%{magic[0]}`", node)
                continue
            if isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    if isinstance(stmt, FUNCTIONS) and stmt.name in (
                        "__torch_function__",
                        "__torch_dispatch__",
                    ):
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
            elif _under(module, TAMPER_PATHS):
                self.add(f"`import {module}`", node)
            elif root not in sys.stdlib_module_names and root not in KNOWN_LIBRARIES:
                self.add(f"`import {module}`, a module the judge cannot read", node)

    def _attribute(self, node):
        if node.attr.startswith("__") and node.attr not in PLAIN_DUNDERS:
            self.add(f"`.{node.attr}`", node)
        elif node.attr in _FRAME_ATTRS:
            self.add(f"`.{node.attr}`", node)
        else:
            for value in self._values(node):
                if isinstance(value, Lib) and _under(value.path, TAMPER_PATHS):
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
                    self.add(f"assigning to `{_text(target)}` changes `{value.path}`", stmt)
                    return

    def _call(self, node):
        func = node.func
        attr = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if HOOK.search(attr or ""):
            self.add(f"`{_text(func)}(...)` registers a hook", node)
            return
        if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args:
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self.add(f"`{func.id}(...)` with a computed attribute name", node)
                return
            if any(isinstance(v, Lib) for v in self._values(node.args[0])):
                self.add(f"`{func.id}({_text(node.args[0])}, ...)` changes a library", node)


_FRAME_ATTRS = {
    "f_globals",
    "f_locals",
    "f_back",
    "f_builtins",
    "f_code",
    "gi_frame",
    "tb_frame",
    "cr_frame",
    "f_trace",
}


def _text(node):
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - a node that cannot be printed is named by its kind
        return type(node).__name__
    return text if len(text) <= 60 else text[:57] + "..."
