"""The integrity rules, applied to the source of one cell (read, never run).

:func:`scan_source` gives ``(kind, line, detail)`` for each rule a cell breaks; what the
kinds mean is in :mod:`attncourse.integrity`. A cell that does not parse is scanned
token by token.
"""

import ast
import io
import tokenize

from attncourse import dangerous
from attncourse.ipythoncode import cell_python, cell_tree

BASE_PROTECTED = {
    "torch",
    "np",
    "numpy",
    "nn",
    "builtins",
    "__builtins__",
    "attncourse",
    "isinstance",
    "issubclass",
    "type",
    "AssertionError",
    "Exception",
    "BaseException",
    "getattr",
    "hasattr",
    "setattr",
    "callable",
}
# What the scan flags, from the vocabulary the judge's rule prover reads too.
INTERPRETER_MODULES = dangerous.INTERPRETER_MODULES | dangerous.SYSTEM_MODULES
INTERPRETER_ATTRIBUTES = dangerous.FRAME_ATTRIBUTES | dangerous.INTERNAL_ATTRIBUTES
INTERPRETER_CALLS = dangerous.INTERPRETER_BUILTINS | {"get_ipython"}
HOOK_METHODS = dangerous.TORCH_HOOKS | dangerous.NUMPY_HOOKS | dangerous.TRUTH_HOOKS
SAFE_MAGICS = dangerous.CODE_MAGICS | dangerous.QUIET_MAGICS
ARRAY_TYPES = {"Tensor", "ndarray", "Parameter"}


def scan_source(source, protected=frozenset(BASE_PROTECTED), allowed_imports=frozenset()):
    """``(kind, line, detail)`` for every rule the code in one cell breaks."""
    tree = cell_tree(source)
    if tree is None:
        return _scan_tokens(cell_python(source) or source, protected)
    return _Scanner(set(protected), set(allowed_imports)).scan(tree)


def import_bindings(tree):
    """``(name bound, module path)`` for every import statement in ``tree``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                out.append((bound, alias.name if alias.asname else bound))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                module = f"{'.' * node.level}{node.module or ''}"
                out.append((alias.asname or alias.name, f"{module}.{alias.name}"))
    return out


def _root(node):
    """The name an attribute/subscript/call chain starts from, or None."""
    while True:
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return None


def _chain_attributes(node):
    names = []
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        if isinstance(node, ast.Attribute):
            names.append(node.attr)
        node = node.func if isinstance(node, ast.Call) else node.value
    return names


def _is_dunder(name):
    return name.startswith("__") and name.endswith("__")


def _is_magic(call):
    """True for ``get_ipython().run_line_magic(…)``/``run_cell_magic(…)``, what IPython makes of ``%``."""
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr in {"run_line_magic", "run_cell_magic"}
        and isinstance(func.value, ast.Call)
        and getattr(func.value.func, "id", None) == "get_ipython"
    )


def _target_nodes(node):
    """Every target expression (unpacking tuples/lists/starred) of an assignment-like node."""
    if isinstance(node, (ast.Tuple, ast.List)):
        for elt in node.elts:
            yield from _target_nodes(elt)
    elif isinstance(node, ast.Starred):
        yield from _target_nodes(node.value)
    else:
        yield node


class _Scanner(ast.NodeVisitor):
    def __init__(self, protected, allowed_imports):
        self.protected = protected
        self.allowed_imports = allowed_imports
        self.aliases = set()
        self.findings = []
        self.depth = 0

    def scan(self, tree):
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and self._is_protected_chain(node.value):
                for target in node.targets:
                    self.aliases |= {t.id for t in _target_nodes(target) if isinstance(t, ast.Name)}
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for bound, module in import_bindings(node):
                    if module.split(".")[0] in self.protected | INTERPRETER_MODULES:
                        self.aliases.add(bound)
        self.visit(tree)
        return sorted(set(self.findings), key=lambda f: (f[1] or 0, f[0], f[2]))

    def add(self, kind, node, detail):
        self.findings.append((kind, getattr(node, "lineno", None), detail))

    def _is_protected_chain(self, node):
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return False
        return _root(node) in self.protected

    def _check_target(self, target, verb):
        for node in _target_nodes(target):
            if isinstance(node, ast.Name):
                if self.depth == 0 and node.id in self.protected:
                    self.add("rebinding", node, f"{verb} the name {node.id!r}")
            elif isinstance(node, (ast.Attribute, ast.Subscript)):
                shared = self.protected | self.aliases | {"type", "globals", "locals", "vars"}
                if _root(node) in shared or any(map(_is_dunder, _chain_attributes(node))):
                    self.add("rebinding", node, f"{verb} {ast.unparse(node)}")

    # --- scopes: a top-level rebinding matters, a local variable does not
    def _scoped(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def visit_FunctionDef(self, node):
        self._check_binding(node.name, node)
        for deco in node.decorator_list:
            self.visit(deco)
        self._visit_arguments(node.args)
        self.depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def _visit_arguments(self, args):
        for default in [*args.defaults, *args.kw_defaults]:
            if default is not None:
                self.visit(default)

    def visit_Lambda(self, node):
        self._scoped(node)

    def visit_ClassDef(self, node):
        self._check_binding(node.name, node)
        for base in node.bases:
            if (_chain_attributes(base) or [getattr(base, "id", "")])[0] in ARRAY_TYPES:
                self.add("rebinding", base, f"a subclass of {ast.unparse(base)}")
        for stmt in node.body:
            if (
                isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
                and stmt.name in HOOK_METHODS
            ):
                self.add("rebinding", stmt, f"defines the hook {stmt.name} in class {node.name}")
        for item in [*node.bases, *node.keywords, *node.decorator_list]:
            self.visit(item)
        self.depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.depth -= 1

    def _check_binding(self, name, node):
        if self.depth == 0 and name in self.protected:
            self.add("rebinding", node, f"redefines the name {name!r}")

    def visit_Global(self, node):
        for name in node.names:
            if name in self.protected:
                self.add("rebinding", node, f"declares {name!r} global to rebind it")

    visit_Nonlocal = visit_Global

    # --- statements that bind or write
    _TARGETS = {
        ast.Assign: ("targets", "assigns"),
        ast.AugAssign: ("target", "assigns"),
        ast.AnnAssign: ("target", "assigns"),
        ast.NamedExpr: ("target", "assigns"),
        ast.Delete: ("targets", "deletes"),
        ast.For: ("target", "loops into"),
        ast.AsyncFor: ("target", "loops into"),
        ast.withitem: ("optional_vars", "binds"),
    }

    def _visit_targets(self, node):
        field, verb = self._TARGETS[type(node)]
        targets = getattr(node, field)
        for target in targets if isinstance(targets, list) else [targets]:
            if target is not None:
                self._check_target(target, verb)
        self.generic_visit(node)

    visit_Assign = visit_AugAssign = visit_AnnAssign = visit_NamedExpr = _visit_targets
    visit_Delete = visit_For = visit_AsyncFor = visit_withitem = _visit_targets

    def visit_ExceptHandler(self, node):
        if node.name:
            self._check_binding(node.name, node)
        self.generic_visit(node)

    def visit_Import(self, node):
        self._check_import(node)

    visit_ImportFrom = visit_Import

    def _check_import(self, node):
        for bound, module in import_bindings(node):
            if (bound, module) not in self.allowed_imports:
                self.add(
                    "import",
                    node,
                    f"imports {module} as {bound!r} (the course's cells do not import it)",
                )

    # --- names and calls
    def visit_Name(self, node):
        if node.id in {"__builtins__", "builtins"}:
            self.add("interpreter", node, f"uses {node.id}")
        elif node.id == "importlib":
            self.add("import", node, "uses importlib")

    def visit_Attribute(self, node):
        if node.attr in INTERPRETER_MODULES or node.attr in INTERPRETER_ATTRIBUTES:
            self.add("interpreter", node, f"reaches {ast.unparse(node)}")
        self.generic_visit(node)

    def visit_Call(self, node):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else None
        if name == "__import__":
            self.add("import", node, "calls __import__")
        elif name in dangerous.DYNAMIC_CODE:
            self.add("dynamic code", node, f"calls {name}()")
        elif name in INTERPRETER_CALLS:
            self.add("interpreter", node, f"calls {name}()")
        elif name in {"setattr", "delattr"} or (
            isinstance(func, ast.Attribute) and func.attr in {"__setattr__", "__delattr__"}
        ):
            self._check_setattr(node)
        elif name in {"getattr", "hasattr"} or (
            isinstance(func, ast.Attribute) and func.attr == "__getattribute__"
        ):
            self._check_getattr(node)
        if _is_magic(node):
            self._check_magic(node)
            for arg in node.args:
                self.visit(arg)
            return
        self.generic_visit(node)

    def _check_setattr(self, node):
        if not node.args:
            return
        obj = node.args[0]
        name = node.args[1] if len(node.args) > 1 else None
        literal = name.value if isinstance(name, ast.Constant) else None
        root = _root(obj)
        if (
            root in self.protected | self.aliases | {"type"}
            or (root != "self" and not isinstance(literal, str))
            or (isinstance(literal, str) and _is_dunder(literal))
        ):
            self.add("rebinding", node, f"calls {ast.unparse(node.func)} on {ast.unparse(obj)}")

    def _check_getattr(self, node):
        """getattr on a protected module with a computed name can reach anything (``torch.sys``)."""
        if len(node.args) < 2 or isinstance(node.args[1], ast.Constant):
            if (
                len(node.args) >= 2
                and node.args[1].value in INTERPRETER_MODULES | INTERPRETER_ATTRIBUTES
            ):
                self.add("interpreter", node, f"reaches {ast.unparse(node)}")
            return
        if _root(node.args[0]) in self.protected | self.aliases:
            self.add("interpreter", node, f"looks up a computed name with {ast.unparse(node)}")

    def _check_magic(self, node):
        args = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
        magic = args[0] if args else None
        if magic not in SAFE_MAGICS:
            self.add("interpreter", node, f"runs the IPython magic %{magic}")
            return
        code = args[-1] if len(args) > 1 else None
        if isinstance(code, str):
            below = node.func.attr == "run_cell_magic"  # its code starts on the next line
            for kind, line, detail in scan_source(code, self.protected, self.allowed_imports):
                at = node.lineno - 1 + below + line if line else node.lineno
                self.findings.append((kind, at, f"{detail} (in %{magic})"))


_ASSIGN_OPS = {"=", "+=", "-=", "*=", "/=", "|=", "&=", ":="}


def _scan_tokens(source, protected):
    """Findings for a cell that does not parse: suspicious names, imports and rebinding lines."""
    findings = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        tokens = _tokens_until_error(source)
    line_tokens = {}
    for tok in tokens:
        if tok.type == tokenize.NAME:
            row = tok.start[0]
            line_tokens.setdefault(row, []).append(tok)
            if tok.string == "import":
                findings.append(("import", row, "an import (the cell does not parse)"))
            elif tok.string in INTERPRETER_MODULES | INTERPRETER_ATTRIBUTES | INTERPRETER_CALLS:
                findings.append(
                    ("interpreter", row, f"uses {tok.string} (the cell does not parse)")
                )
            elif tok.string in dangerous.DYNAMIC_CODE:
                findings.append(
                    ("dynamic code", row, f"uses {tok.string} (the cell does not parse)")
                )
        elif tok.type == tokenize.OP:
            line_tokens.setdefault(tok.start[0], []).append(tok)
    for row, toks in line_tokens.items():
        first = toks[0]
        ops = [t.string for t in toks if t.type == tokenize.OP]
        assign = next((i for i, t in enumerate(toks) if t.string in _ASSIGN_OPS), None)
        if first.type == tokenize.NAME and first.string in protected and assign is not None:
            what = "attributes of" if "." in ops[: ops.index(toks[assign].string)] else "the name"
            findings.append(
                ("rebinding", row, f"assigns {what} {first.string!r} (the cell does not parse)")
            )
    return sorted(set(findings), key=lambda f: (f[1] or 0, f[0], f[2]))


def _tokens_until_error(source):
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            out.append(tok)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out
