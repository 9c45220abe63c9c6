# Generated from the course's judge by the release build: do not edit.
"""What an answer's code can reach, resolved statically from the notebook's source.

The source rules (:mod:`coursecheck.rules`) are proofs over this module's result.
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

Separately, :mod:`coursecheck.tampering` lists what any student cell does that can change what
an answer computes when it is called, wherever it sits: rebinding attributes of library
modules or classes, hooks, dynamic code, introspection of frames and globals, imports of
modules the judge cannot read. Nothing here runs the student's code or asks the kernel.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

from .libraries import (
    DEFINITIONS,
    DYNAMIC_BUILTINS,
    FUNCTIONS,
    HOOK,
    ITERATING,
    ITERATING_METHODS,
    LOOP_NODES,
    PLAIN_DUNDERS,
    PLAIN_METHODS,
    library_object,
    under,
    value_methods,
)
from .program import Finding, Program

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


# -------------------------------------------------------------------- the resolver


def reach(program: Program, name: str, skip=frozenset()) -> Reach:
    """Everything the answer ``name`` reaches (``skip``: definitions graded elsewhere)."""
    return Reach(program, name, frozenset(skip))


def reach_cell(program: Program, index: int) -> Reach:
    """What the module-level code of cell ``index`` reaches (an answer cell as a whole)."""
    return Reach(program, None, cell=index)


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


def text_of(node):
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - a node that cannot be printed is named by its kind
        return type(node).__name__
    return text if len(text) <= 60 else text[:57] + "..."
