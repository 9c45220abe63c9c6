"""Source rules of the assignments, checked on the code a student wrote.

The judge reads them from the notebook's source, never from the kernel: the
cells the student wrote are parsed, the answer's definition is found by its
name, and so are the student's own helpers it refers to, so a loop hidden in a
helper counts as a loop. Nothing the kernel says about its objects (names,
code objects) is consulted.
"""

import ast

from IPython.core.inputtransformer2 import TransformerManager

from attncourse.judge.checks import fail

_transform = TransformerManager().transform_cell
_type = type
_isinstance = isinstance

LOOP_NODES = {
    ast.For: "a for loop",
    ast.AsyncFor: "an async for loop",
    ast.While: "a while loop",
    ast.ListComp: "a list comprehension",
    ast.SetComp: "a set comprehension",
    ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression",
}

FUSED_ATTENTION = (
    "MultiheadAttention",
    "scaled_dot_product_attention",
    "multi_head_attention_forward",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
    "Transformer",
)


# Magics that run their code in the notebook's namespace: that code is read like the cell's own.
CODE_MAGICS = {"time", "capture"}


def _python(text):
    """A cell's text as Python (IPython magics turned into calls), parsed; None if it cannot be."""
    try:
        return _MagicCode().visit(ast.parse(_transform(text)))
    except (SyntaxError, ValueError):
        return None


class _MagicCode(ast.NodeTransformer):
    """``%time stmt`` and ``%%time``/``%%capture`` cells replaced by the statements they run."""

    def visit_Expr(self, node):
        call = node.value
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in ("run_line_magic", "run_cell_magic")
            and len(call.args) >= 2
            and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args)
            and call.args[0].value in CODE_MAGICS
        ):
            return node
        inner = _python(call.args[-1].value)
        return inner.body if inner is not None else node


def _statements(body):
    """Top-level statements, looking into if/try/with blocks (not into functions or classes)."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, field, None)
            if inner and not isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            ):
                yield from _statements(inner)


def _bindings_of(sources):
    """name -> nodes binding it, and name -> nodes setting ``name.attr``, in notebook order.

    Besides top-level definitions, assignments and imports: a function that
    declares ``global name`` binds it, and ``setattr(name, ...)`` sets an attribute.
    """
    defs, attrs = {}, {}
    for text in sources:
        tree = _python(text)
        if tree is None:
            continue
        for node in _statements(tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defs.setdefault(node.name, []).append(node)
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Global):
                        for name in sub.names:
                            defs.setdefault(name, []).append(node)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    defs.setdefault(bound, []).append(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in _target_names(target):
                        defs.setdefault(name, []).append(node)
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                        attrs.setdefault(target.value.id, []).append(node)
            for sub in ast.walk(node):
                if (
                    isinstance(sub, ast.Call)
                    and isinstance(sub.func, ast.Name)
                    and sub.func.id == "setattr"
                    and sub.args
                    and isinstance(sub.args[0], ast.Name)
                ):
                    attrs.setdefault(sub.args[0].id, []).append(node)
    return defs, attrs


def _names_in(node):
    return {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name)}


def _free_names(node):
    """Global names a definition refers to: what it loads minus its parameters and locals."""
    if isinstance(node, ast.ClassDef):
        outer = [*node.bases, *(k.value for k in node.keywords), *node.decorator_list]
        names = set().union(*map(_names_in, outer)) if outer else set()
        for stmt in node.body:
            names |= _free_names(stmt)
        return names
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _names_in(node)
    args = node.args
    params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    inner = [sub for stmt in node.body for sub in ast.walk(stmt)]
    declared = {n for sub in inner if isinstance(sub, ast.Global) for n in sub.names}
    stored = {
        sub.id for sub in inner if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store)
    }
    loaded = {
        sub.id for sub in inner if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)
    }
    outer = [*node.decorator_list, *args.defaults, *(d for d in args.kw_defaults if d is not None)]
    names = set().union(*map(_names_in, outer)) if outer else set()
    return (loaded - ((params | stored) - declared)) | names


def _sources(namespace):
    return getattr(namespace, "sources", namespace)


def reachable_definitions(name, namespace):
    """AST nodes of the student's code that define ``name`` and every helper it refers to.

    Read from the notebook's source (``namespace.sources``: the cells the
    student wrote), never from the kernel: every binding of each name anywhere
    in those cells (a draft left in a cell of their own counts too: the kernel
    may hold any of them), assignments to its attributes (``MyMHA.forward = f``,
    ``setattr``), and, through the global names they use, the student's own
    helpers, base classes and aliases. The first node is the last ``def`` or
    ``class`` of ``name`` itself (an alias is followed).
    """
    defs, attrs = _bindings_of(_sources(namespace))
    nodes, seen, todo = [], set(), [name]
    while todo:
        current = todo.pop(0)
        if current in seen or current not in defs:
            continue
        seen.add(current)
        found = [*defs[current], *attrs.get(current, [])]
        nodes.extend(n for n in found if n not in nodes)
        for node in found:
            todo.extend(sorted(_free_names(node) - seen))
    primary = [
        n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
    if not primary:
        fail(
            f"could not find the definition of `{name}` in your cells",
            f"`{name}` defined with def or class in a notebook cell",
            "no such definition in the notebook's source",
            "defining it through exec, type(...) or globals() hides it from the grader",
        )
    first = next((n for n in reversed(primary) if n.name == name), primary[-1])
    return [first, *[n for n in nodes if n is not first]]


def assert_no_loops(name, namespace, part):
    """Fail if the answer, or a helper it calls, loops (for, while, comprehensions, generators)."""
    for node in reachable_definitions(name, namespace):
        for sub in ast.walk(node):
            kind = LOOP_NODES.get(_type(sub))
            if kind:
                fail(
                    f"{part}: the task forbids loops",
                    "vectorised tensor operations only",
                    f"{kind} at line {sub.lineno} of {getattr(node, 'name', 'the cell')}",
                    "iterating over heads, positions or copies instead of using tensor operations",
                )


def assert_no_names(name, namespace, part, names, reason):
    """Fail if the answer or its helpers mention any of ``names`` (as a name or attribute)."""
    banned = set(names)
    for node in reachable_definitions(name, namespace):
        for sub in ast.walk(node):
            idents = ()
            if _isinstance(sub, ast.Name):
                idents = (sub.id,)
            elif _isinstance(sub, ast.Attribute):
                idents = (sub.attr,)
            elif _isinstance(sub, ast.Constant) and _isinstance(sub.value, str):
                idents = (sub.value,)  # getattr(F, "scaled_dot_product_attention")
            elif _isinstance(sub, ast.alias):  # import torch.nn as T, from x import sdpa
                idents = sub.name.split(".")
            elif _isinstance(sub, ast.ImportFrom) and sub.module:
                idents = sub.module.split(".")
            ident = next((i for i in idents if i in banned), None)
            if ident is not None:
                fail(
                    f"{part}: {reason}",
                    f"none of {', '.join(sorted(banned))}",
                    f"{ident!r} at line {sub.lineno}",
                )


def assert_no_fused_attention(name, namespace, part):
    """Fail if the answer hands the attention to a library module or fused kernel."""
    assert_no_names(
        name,
        namespace,
        part,
        FUSED_ATTENTION,
        "build the attention by hand, not with a library attention module or fused kernel",
    )


def assert_no_torch(name, namespace, part):
    """Fail if the answer (numpy only) uses torch."""
    assert_no_names(
        name, namespace, part, ("torch", "nn"), "this part must use numpy only, not torch"
    )


def _target_names(node):
    """Names bound by an assignment target (tuples unpacked)."""
    if _isinstance(node, ast.Name):
        return [node.id]
    if _isinstance(node, (ast.Tuple, ast.List)):
        return [name for elt in node.elts for name in _target_names(elt)]
    if _isinstance(node, ast.Starred):
        return _target_names(node.value)
    return []


SIZE_FUNCTIONS = {"len", "int", "float", "round", "abs", "min", "max", "sqrt"}
SIZE_METHODS = {"size", "numel", "dim"}


def _is_size(expr, sizes, params):
    """True if ``expr`` computes only a size or scalar (shapes, ints, arithmetic on them)."""
    if _isinstance(expr, ast.Constant):
        return _isinstance(expr.value, (int, float))
    if _isinstance(expr, ast.Name):
        return expr.id in sizes
    if _isinstance(expr, ast.Attribute):
        return expr.attr in ("shape", "ndim")
    if _isinstance(expr, ast.Subscript):
        return _isinstance(expr.value, ast.Attribute) and expr.value.attr == "shape"
    if _isinstance(expr, (ast.Tuple, ast.List)):
        return all(_is_size(e, sizes, params) for e in expr.elts)
    if _isinstance(expr, (ast.BinOp, ast.UnaryOp)):
        operands = [expr.left, expr.right] if _isinstance(expr, ast.BinOp) else [expr.operand]
        return all(
            (_isinstance(e, ast.Name) and e.id in params) or _is_size(e, sizes, params)
            for e in operands
        )
    if _isinstance(expr, ast.Call):
        func = expr.func
        name = func.id if _isinstance(func, ast.Name) else getattr(func, "attr", None)
        if _isinstance(func, ast.Attribute) and name in SIZE_METHODS:
            return True
        return name in SIZE_FUNCTIONS and all(
            (_isinstance(a, ast.Name) and a.id in params) or _is_size(a, sizes, params)
            for a in expr.args
        )
    return False


def _own_nodes(func_node):
    """AST nodes of a function body, not descending into nested functions or classes."""
    todo = list(func_node.body)
    while todo:
        node = todo.pop()
        yield node
        if not _isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def _bindings(func_node):
    """name -> [(line, value expression or None)] for every local binding in a function."""
    bound = {}
    for node in _own_nodes(func_node):
        pairs = []
        if _isinstance(node, ast.Assign):
            for target in node.targets:
                if _isinstance(target, (ast.Tuple, ast.List)) and _isinstance(
                    node.value, (ast.Tuple, ast.List)
                ):
                    if len(target.elts) == len(node.value.elts):
                        pairs.extend(zip(target.elts, node.value.elts, strict=True))
                        continue
                if _isinstance(target, (ast.Tuple, ast.List)) and _is_size(node.value, (), ()):
                    pairs.extend((elt, ast.Constant(0)) for elt in target.elts)
                    continue
                pairs.append((target, node.value))
        elif _isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            pairs.append((node.target, None))
        elif _isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            pairs.append((node.target, None))
        elif _isinstance(node, (ast.With, ast.AsyncWith)):
            pairs.extend((item.optional_vars, None) for item in node.items if item.optional_vars)
        for target, value in pairs:
            if _isinstance(target, ast.Subscript | ast.Attribute):
                target = target.value
                value = None
            for name in _target_names(target):
                bound.setdefault(name, []).append((node.lineno, value))
    return bound


def _size_locals(bound, params):
    sizes = set()
    changed = True
    while changed:
        changed = False
        for name, values in bound.items():
            if name not in sizes and all(
                v is not None and _is_size(v, sizes, params) for _, v in values
            ):
                sizes.add(name)
                changed = True
    return sizes


def _tensor_like(func_node):
    """Names the code treats as arrays: indexed, with an attribute taken, or in a ``@``."""
    names = set()
    for node in ast.walk(func_node):
        if _isinstance(node, (ast.Attribute, ast.Subscript)) and _isinstance(node.value, ast.Name):
            names.add(node.value.id)
        if _isinstance(node, ast.BinOp) and _isinstance(node.op, ast.MatMult):
            names |= {n.id for n in (node.left, node.right) if _isinstance(n, ast.Name)}
    return names


def _loaded_names(expr):
    return {n.id for n in ast.walk(expr) if _isinstance(n, ast.Name)}


def _mutated_outputs(func_node, outputs):
    """(name, line) of in-place method calls on outputs, e.g. ``W.mul_(2)``."""
    for node in _own_nodes(func_node):
        if _isinstance(node, ast.Call) and _isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if (
                _isinstance(owner, ast.Name)
                and owner.id in outputs
                and node.func.attr.endswith("_")
                and not node.func.attr.startswith("_")
            ):
                yield owner.id, node.lineno


def assert_one_statement_per_output(name, namespace, part, outputs, size_params=None):
    """Fail unless each output of ``func`` is computed in a single statement.

    An output is assigned once (or written straight into the ``return``), is not
    modified afterwards, and its expression uses only the arguments, other
    outputs and size-only locals (``r = W_DKV.shape[0]``, ``d = D // H``): an
    intermediate tensor computed in an earlier statement breaks the rule, and
    so does a helper function that computes it in several statements.
    ``size_params`` names the arguments that are numbers, not tensors (e.g. ``("H",)``);
    by default an argument counts as a number unless the code indexes it, takes an
    attribute of it or multiplies it with ``@``.
    """
    nodes = reachable_definitions(name, namespace)
    node = nodes[0]
    rule = "a single assignment (or the expression in the return)"
    args = node.args
    params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    numbers = set(size_params) if size_params is not None else params - _tensor_like(node)
    bound = _bindings(node)
    sizes = _size_locals(bound, numbers)
    outputs = list(outputs)
    for name in outputs:
        lines = [line for line, _ in bound.get(name, [])]
        if len(lines) > 1:
            fail(
                f"{part}: {name} must be computed in one statement",
                rule,
                f"assigned on lines {lines}",
            )
    for name, line in _mutated_outputs(node, outputs):
        fail(
            f"{part}: {name} must be computed in one statement",
            rule,
            f"modified in place on line {line}",
        )
    exprs = [(name, bound[name][0][1], bound[name][0][0]) for name in outputs if name in bound]
    for sub in _own_nodes(node):
        if _isinstance(sub, ast.Return) and sub.value is not None:
            elts = sub.value.elts if _isinstance(sub.value, ast.Tuple) else [sub.value]
            exprs.extend(("a returned output", e, sub.lineno) for e in elts)
    allowed = params | sizes | set(outputs)
    for name, expr, line in exprs:
        if expr is None:
            continue
        for used in sorted(_loaded_names(expr) - allowed):
            if used in bound:
                first = bound[used][0][0]
                fail(
                    f"{part}: {name} must be computed in one statement",
                    rule,
                    f"line {line} uses {used!r}, an intermediate computed on line {first}",
                    "chain of statements; write the whole expression in the statement that assigns it",
                )
    helpers = [n for n in nodes[1:] if _isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for helper in helpers:
        body = [s for s in helper.body if not _is_docstring(s)]
        if len(body) != 1 or not _isinstance(body[0], ast.Return):
            fail(
                f"{part}: each output must be computed in one statement",
                rule,
                f"helper {helper.name!r} computes its result in {len(body)} statements",
                "splitting an output's computation over a helper function's statements",
            )


def _is_docstring(stmt):
    return (
        _isinstance(stmt, ast.Expr)
        and _isinstance(stmt.value, ast.Constant)
        and _isinstance(stmt.value.value, str)
    )
