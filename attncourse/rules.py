"""Source rules of the assignments, checked on the code a student wrote.

Inside the grading kernel every function and class a student defines keeps a
reference to the cell it came from (IPython registers each cell's text in
``linecache``). The rules below parse those cells, and the cells of the
student's own helpers that the answer calls, so a loop hidden in a helper
counts as a loop.
"""

import ast
import builtins
import linecache
import types

from attncourse.checks import fail

_type = builtins.type
_isinstance = builtins.isinstance

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


def _code_objects(obj):
    """Code objects of a function, or of every method of a class."""
    if _isinstance(obj, types.FunctionType):
        return [obj.__code__]
    if _isinstance(obj, types.MethodType):
        return [obj.__func__.__code__]
    if _isinstance(obj, type):
        codes = []
        for value in vars(obj).values():
            if _isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if _isinstance(value, property):
                value = value.fget
            if _isinstance(value, types.FunctionType):
                codes.append(value.__code__)
        return codes
    return []


def _is_cell_file(filename):
    return not filename.startswith("<frozen") and "site-packages" not in filename


def _cell_text(code):
    lines = linecache.getlines(code.co_filename)
    return "".join(lines) if lines and _is_cell_file(code.co_filename) else None


def reachable_definitions(obj, namespace):
    """AST nodes defining ``obj`` and every student helper it refers to by a global name."""
    nodes = []
    seen = set()
    todo = [obj]
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        codes = _code_objects(item)
        text = next((t for t in map(_cell_text, codes) if t is not None), None)
        if text is None:
            continue
        node = _definition(ast.parse(text), item.__name__)
        if node is not None:
            nodes.append(node)
        for code in codes:
            for name in _names_used(code):
                ref = namespace.get(name)
                if _isinstance(ref, (types.FunctionType, type)):
                    todo.append(ref)
    if not nodes:
        fail(
            f"could not find the source of {getattr(obj, '__name__', obj)!r}",
            "a function or class defined in a notebook cell",
            _type(obj).__name__,
        )
    return nodes


def _names_used(code):
    names = set(code.co_names)
    for const in code.co_consts:
        if _isinstance(const, types.CodeType):
            names |= _names_used(const)
    return names


def _definition(tree, name):
    for node in ast.walk(tree):
        if _isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            if node.name == name:
                return node
    return None


def assert_no_loops(obj, namespace, part):
    """Fail if the answer, or a helper it calls, loops (for, while, comprehensions, generators)."""
    for node in reachable_definitions(obj, namespace):
        for sub in ast.walk(node):
            kind = LOOP_NODES.get(_type(sub))
            if kind:
                fail(
                    f"{part}: the task forbids loops",
                    "vectorised tensor operations only",
                    f"{kind} at line {sub.lineno} of {getattr(node, 'name', 'the cell')}",
                    "iterating over heads, positions or copies instead of using tensor operations",
                )


def assert_no_names(obj, namespace, part, names, reason):
    """Fail if the answer or its helpers mention any of ``names`` (as a name or attribute)."""
    banned = set(names)
    for node in reachable_definitions(obj, namespace):
        for sub in ast.walk(node):
            ident = None
            if _isinstance(sub, ast.Name):
                ident = sub.id
            elif _isinstance(sub, ast.Attribute):
                ident = sub.attr
            if ident in banned:
                fail(
                    f"{part}: {reason}",
                    f"none of {', '.join(sorted(banned))}",
                    f"{ident!r} at line {sub.lineno}",
                )


def assert_no_fused_attention(obj, namespace, part):
    """Fail if the answer hands the attention to a library module or fused kernel."""
    assert_no_names(
        obj,
        namespace,
        part,
        FUSED_ATTENTION,
        "build the attention by hand, not with a library attention module or fused kernel",
    )


def assert_no_torch(obj, namespace, part):
    """Fail if the answer (numpy only) uses torch."""
    assert_no_names(obj, namespace, part, ("torch", "nn"), "this part must use numpy only, not torch")


def _target_names(node):
    """Names bound by an assignment target (tuples unpacked)."""
    if _isinstance(node, ast.Name):
        return [node.id]
    if _isinstance(node, (ast.Tuple, ast.List)):
        return [name for elt in node.elts for name in _target_names(elt)]
    if _isinstance(node, ast.Starred):
        return _target_names(node.value)
    return []


def assert_one_statement_per_output(func, namespace, part, outputs):
    """Fail unless each output name of ``func`` is assigned exactly once, in one statement.

    The answer may also return the expressions directly; a chain of
    intermediate statements feeding an output breaks the rule.
    """
    node = reachable_definitions(func, namespace)[0]
    assigned = {}
    for stmt in ast.walk(node):
        targets = []
        if _isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                targets.extend(_target_names(target))
        elif _isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
            targets.extend(_target_names(stmt.target))
        elif _isinstance(stmt, ast.NamedExpr):
            targets.extend(_target_names(stmt.target))
        for name in targets:
            assigned.setdefault(name, []).append(stmt.lineno)
    for name in outputs:
        lines = assigned.get(name, [])
        if len(lines) > 1:
            fail(
                f"{part}: {name} must be computed in one statement",
                "a single assignment (or the expression in the return)",
                f"assigned on lines {lines}",
            )
