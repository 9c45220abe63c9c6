# Generated from the course's judge by the release build: do not edit.
"""The notebook's code as the judge reads it: cells parsed once, and what every name binds.

A :class:`Program` parses the code cells (IPython magics turned into the statements they
run), and records every binding of every name: the module's (the student's cells and,
apart, what the course's own cells import), each function's parameters and locals, each
class's attributes (``self.x = ...`` in its methods, ``Cls.x = ...`` or ``setattr`` outside).
:mod:`coursecheck.resolve` follows these bindings; a :class:`Finding` is what it reports.
"""

from __future__ import annotations

import ast
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .cells import CodeCell
from .dangerous import CODE_MAGICS, INERT_MAGICS
from .ipythoncode import cell_tree
from .libraries import DEFINITIONS, FIRST_CELL, FUNCTIONS
from .pointing import (
    Place,
    enclosing_names,
    located,
    place_of,
    pointer,
)

# ----------------------------------------------------------------------------- the cells


def as_cells(sources: Iterable[str | CodeCell] | None) -> list[CodeCell]:
    """Cells from a list of :class:`CodeCell` or of plain source strings (all the student's)."""
    return [
        s if isinstance(s, CodeCell) else CodeCell(index=i, source=s)
        for i, s in enumerate(sources or ())
    ]


@dataclass(frozen=True)
class Finding:
    """Something the code does that a rule judges: ``kind``, what (for the message) and where,
    as the student sees it (:mod:`coursecheck.pointers`): the part, the enclosing function or
    class and the line in the cell's own source."""

    kind: str  # loop, iterates, recursion, library, unresolved, import, tamper
    what: str
    cell: int  # the cell's index in the notebook (for the report; never in a message)
    line: int  # in the cell's own source, 1-based
    path: str = ""  # the library path, for kind "library"
    part: str = ""  # "Part 5"; "" in a cell of no part
    function: str = ""  # "MyMHA.forward"; "" at a cell's top level
    place: str = "a cell you added"  # "the answer cell", "a cell you added after Part 5"

    @property
    def where(self) -> str:
        """ "`MyMHA.forward`, line 12 of the answer cell"."""
        return pointer(Place(self.part, self.place), self.function, self.line)

    def at(self, line: int | list[int]) -> str:
        """The same place at another line (or lines) of the cell."""
        return pointer(Place(self.part, self.place), self.function, line)

    def __str__(self) -> str:
        return located(self.what, Place(self.part, self.place), self.function, self.line)


# Cell magics nested deeper than this stay calls of ``get_ipython`` (which the rules refuse):
# each level parses the cell's text again.
MAGIC_NESTING = 4


def python_source(text: str, nesting: int = 0) -> ast.Module | None:
    """A cell's text as Python (IPython magics turned into calls), parsed; None if it cannot be
    (deeper than Python's own parser or recursion goes included). The tree may be one
    :func:`parsed_cell` keeps: read it, never change it."""
    if nesting == 0:
        parsed = parsed_cell(text)
        return parsed.tree if parsed is not None else None
    return _python_source(text, nesting)


@dataclass(frozen=True)
class ParsedCell:
    """A cell's tree (:func:`python_source`), its nodes in :func:`ast.walk` order, and each
    node inside a ``def`` or ``class`` -> its qualified name (:func:`enclosing_names`)."""

    tree: ast.Module
    nodes: tuple[ast.AST, ...]
    owners: dict[ast.AST, str]


# What the parsed cells kept by one process may hold, in characters of their texts (a tree takes
# 70-250 bytes per character: at most about 130 MB however hostile the cells), and the longest
# text kept (the course's longest cell, mla_inference's timing lab, has 8,231).
KEPT_TEXT = 16_000
KEPT_TOTAL = 512_000


class _Kept:
    """A memo of :func:`_parse_cell`, as ``functools.lru_cache`` but bounded by the characters
    of the texts it holds (what a tree costs grows with its text, not with the entries)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._parsed: OrderedDict[str, ParsedCell] = OrderedDict()  # least recent first
        self._held = 0
        self._lock = threading.Lock()  # the judge's thread and the grader's read it

    def parsed(self, text: str) -> ParsedCell | None:
        with self._lock:
            parsed = self._parsed.get(text)
            if parsed is not None:
                self._parsed.move_to_end(text)
                return parsed
        parsed = _parse_cell(text)
        if parsed is None:
            return None  # not kept: a MemoryError need not recur
        with self._lock:
            if text not in self._parsed:
                self._parsed[text] = parsed
                self._held += len(text)
            while self._held > self.total:
                self._held -= len(self._parsed.popitem(last=False)[0])
        return parsed


_KEPT = _Kept(KEPT_TOTAL)


def parsed_cell(text: str, fresh: bool = False) -> ParsedCell | None:
    """``text`` parsed as :func:`python_source` parses it, or None. A grading process reads the
    same texts again and again (each cell by the limits and every rule; the course's own cells,
    and a test table's, for every notebook), so a text of up to ``KEPT_TEXT`` characters is
    parsed once and its tree shared, the least recently read let go past ``KEPT_TOTAL``
    characters; nothing changes a tree after parsing (tests/grading/test_assignments.py checks
    that judging leaves every kept one as it was). ``fresh``: a tree of its own (a program
    that holds the same text twice)."""
    if fresh or len(text) > KEPT_TEXT:
        return _parse_cell(text)
    return _KEPT.parsed(text)


def _parse_cell(text: str) -> ParsedCell | None:
    tree = _python_source(text, 0)
    if tree is None:
        return None
    return ParsedCell(tree, tuple(ast.walk(tree)), enclosing_names(tree))


def _python_source(text: str, nesting: int) -> ast.Module | None:
    tree = cell_tree(text)  # the cell's own lines
    if tree is None:
        return None
    try:
        return _MagicCode(nesting).visit(tree)
    except (RecursionError, MemoryError):
        return None


def magic_call(node: ast.AST) -> tuple[str, str] | None:
    call = node.value if isinstance(node, ast.Expr) else None
    if (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in ("run_line_magic", "run_cell_magic")
        and isinstance(call.func.value, ast.Call)
        and isinstance(call.func.value.func, ast.Name)
        and call.func.value.func.id == "get_ipython"
        and len(call.args) >= 2
    ):
        values = [a.value for a in call.args if isinstance(a, ast.Constant)]
        texts = [v for v in values if isinstance(v, str)]
        return (texts[0], texts[-1]) if len(texts) == len(call.args) else None
    return None


class _MagicCode(ast.NodeTransformer):
    """``%time stmt`` and ``%%time``/``%%capture`` cells replaced by the statements they run;
    inert magics dropped (every other magic stays a call of ``get_ipython``, which is refused)."""

    def __init__(self, nesting=0):
        self.nesting = nesting

    def visit_Expr(self, node):
        magic = magic_call(node)
        if magic is None:
            return node
        name, text = magic
        if name in INERT_MAGICS:
            return None
        if name not in CODE_MAGICS or self.nesting >= MAGIC_NESTING:
            return node
        inner = python_source(text, self.nesting + 1)
        if inner is None:
            return node
        below = node.value.func.attr == "run_cell_magic"  # its body starts on the next line
        return ast.increment_lineno(inner, node.lineno - 1 + below).body


def _target_names(node):
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [n for elt in node.elts for n in _target_names(elt)]
    if isinstance(node, ast.Starred):
        return _target_names(node.value)
    return []


def own_nodes(node: Any) -> Iterator[ast.AST]:
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


def pairs(stmt: ast.AST) -> list[tuple[str, ast.expr | None]]:
    """(target name, value expression or None) for every name a statement binds."""
    if isinstance(stmt, ast.Assign):
        out: list[tuple[str, ast.expr | None]] = []
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

    def bind(self, name: str, kind: str, payload: object) -> None:
        self.names.setdefault(name, []).append((kind, payload, self))


# ------------------------------------------------------------------------ the program


class Program:
    """The notebook's code cells, parsed once, with the bindings of every name."""

    def __init__(self, cells: Iterable[str | CodeCell]) -> None:
        self.cells = as_cells(cells)
        self.trees: dict[int, ast.Module] = {}
        self.cell_of: dict[ast.AST, int] = {}
        self.owner_of = {}  # node -> the def/class it sits in ("MyMHA.forward")
        for cell in self.cells:
            if cell.test:
                continue
            parsed = parsed_cell(cell.source)
            if parsed is None:
                continue
            if parsed.tree in self.trees.values():  # the same text twice: its nodes are keys
                parsed = parsed_cell(cell.source, fresh=True)
                assert parsed is not None
            self.trees[cell.index] = parsed.tree
            self.cell_of.update(dict.fromkeys(parsed.nodes, cell.index))
            self.owner_of.update(parsed.owners)
        self._computed: dict[object, Any] = {}  # what the rules derived from it (:meth:`once`)
        self._own: dict[ast.AST, list[ast.AST]] = {}
        self.module = Scope(None, None)
        self.scope_of_node: dict[ast.AST, Scope] = {}  # node -> the function scope of its code
        self.course: dict[str, str | None] = {}  # name -> library path bound by the course's cells
        self.scopes: dict[ast.AST, Scope] = {}  # function node -> Scope
        self.classes: dict[ast.ClassDef, Scope] = {}  # ClassDef -> (scope it is defined in)
        self.class_attrs: dict[ast.ClassDef, dict[str, list[tuple[ast.AST | None, Scope]]]] = {}
        # name -> [(attr, value, scope)] for ``Name.attr = v`` outside its class
        self.external_attrs: dict[str, list[tuple[str, ast.expr | None, Scope]]] = {}
        for cell in self.cells:
            tree = self.trees.get(cell.index)
            if tree is not None:
                self._collect(tree, self.module, course=not cell.student)
        if all(cell.student for cell in self.cells):  # plain sources: the course's first cell
            self._collect(ast.parse(FIRST_CELL), self.module, course=True)

    def once(self, key: object, compute: Callable[[], Any]) -> Any:
        """``compute()``, called once per program and ``key``: what the rules derive from the
        source (its tampering, what each answer reaches) is read by every check of a notebook."""
        if key not in self._computed:
            self._computed[key] = compute()
        return self._computed[key]

    # --------------------------------------------------------------- binding tables

    def _own_nodes(self, node):
        """:func:`own_nodes` of ``node``, listed once (a method's are read four times)."""
        if node not in self._own:
            self._own[node] = list(own_nodes(node))
        return self._own[node]

    def _collect(self, node, scope, course=False):
        """Record the bindings of ``node``'s body in ``scope``, and of nested scopes."""
        for sub in self._own_nodes(node):
            self._bind_stmt(sub, scope, course)
        for sub in self._own_nodes(node):
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
        for name, value in pairs(sub):
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
        for sub in self._own_nodes(node):
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
            for name, value in pairs(stmt):
                attrs.setdefault(name, []).append((value, scope))
            if isinstance(stmt, FUNCTIONS):
                self._function_scope(stmt, holder)
                method_scope = self.scopes[stmt]
                method_scope.cls = node
                for sub in self._own_nodes(stmt):
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

    def where(self, node: ast.AST) -> tuple[int, int]:
        return self.cell_of.get(node, -1), getattr(node, "lineno", 0)

    def finding(self, kind: str, what: str, node: ast.AST, path: str = "") -> Finding:
        cell, line = self.where(node)
        found = next((c for c in self.cells if c.index == cell), None)
        place = place_of(found) if found is not None else Place("", "a cell you added")
        return Finding(
            kind, what, cell, line, path, place.part, self.owner_of.get(node, ""), place.cell
        )

    # ----------------------------------------------------------------- definitions

    def definitions(self, name: str) -> list[ast.AST]:
        """Module-level ``def``/``class`` nodes binding ``name`` in the student's cells."""
        return [p for k, p, _ in self.module.names.get(name, []) if k == "def"]
