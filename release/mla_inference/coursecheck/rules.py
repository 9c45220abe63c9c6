# Generated from the course's judge by the release build: do not edit.
"""Source rules of the assignments, proved on the code a student wrote.

A rule holds only where the judge can prove it from the notebook's source
(:mod:`coursecheck.resolve`): every name the answer's code uses, and everything that
code reaches, resolves to the student's own ``def``/``class`` (analysed in turn), to a library
object known by its module path (allowed or not by the rule), to a builtin, or to a computed
value whose methods are known. What cannot be resolved (calls through subscripts or computed
``getattr``, ``exec``, dynamic imports, a value passed in and called, operators or iteration
of the student's own classes), and whatever any student cell does to change an answer from
outside it (rebinding library attributes, hooks, dynamic code), fails the rule with the
construct and its place. Nothing the kernel says about its objects is consulted.
"""

import ast

# bound at import, whatever a notebook does to the builtins later (imported by name: the type
# checker narrows through it as through the builtin itself)
from builtins import isinstance as _isinstance
from collections.abc import Iterable
from typing import Any

from .failure import fail
from .libraries import LOOP_NODES
from .program import Program, as_cells, python_source
from .resolve import Reach, reach_cell
from .resolve import reach as reach_of
from .tampering import tampering
from .pointing import Place, pointer

__all__ = [
    "LOOP_NODES",
    "assert_imports_in_first_cell",
    "assert_no_fused_attention",
    "assert_no_loops",
    "assert_no_torch",
    "assert_one_statement_per_output",
    "program_of",
    "reachable_definitions",
]


# The fused-attention family, wherever it lives (matched in the dotted path, lower case).
FUSED_WORDS = (
    "scaled_dot_product",
    "multi_head_attention",
    "multiheadattention",
    "flash_attention",
    "efficient_attention",
    "cudnn_attention",
    "flex_attention",
    "transformer",
    "sdpa",
    "torch.nn.attention",
)
# Paths below PyTorch's public API: what they compute cannot be checked against the rule.
PRIVATE = ("torch.ops", "torch._")

UNVERIFIABLE = (
    "code the judge cannot resolve statically counts as breaking the rule: write the answer "
    "with plain calls of your own functions and of torch/numpy"
)
FROM_OUTSIDE = (
    "code anywhere in the notebook that patches libraries, registers hooks or runs code the "
    "judge cannot read counts against every rule-bound part"
)


def program_of(namespace: object) -> Program:
    """The parsed notebook of ``namespace`` (a StudentNamespace, or a list of sources)."""
    program = getattr(namespace, "program", None)
    if _isinstance(program, Program):
        return program
    sources: Any = getattr(namespace, "sources", namespace)  # plain sources, or cells
    return Program(as_cells(sources))


def _reach(name: str, namespace: object, skip: Iterable[str] = ()) -> tuple[Program, Reach]:
    program = program_of(namespace)
    reach = reach_of(program, name, skip)
    if reach.primary is None:
        fail(
            f"could not find the definition of `{name}` in your cells",
            f"`{name}` defined with def or class in a notebook cell",
            "no such definition in the notebook's source",
            "defining it through exec, type(...) or globals() hides it from the grader",
        )
    return program, reach


def reachable_definitions(name: str, namespace: object) -> list[ast.AST]:
    """AST nodes of the student's code that define ``name`` and everything it reaches.

    Read from the notebook's source, never from the kernel: the last ``def`` or ``class``
    of ``name`` first, then every definition and module-level statement it reaches
    (every binding of each name counts: the kernel may hold any of them).
    """
    _, reach = _reach(name, namespace)
    first = reach.primary
    assert first is not None  # _reach failed otherwise (checks.fail raises; it has no NoReturn)
    others = [n for n in [*reach.units, *reach.statements] if n is not first]
    return [first, *others]


def _refuse(part, rule, reach, program):
    """Fail when the answer reaches code the judge cannot resolve, or is changed from outside."""
    for finding in tampering(program):
        fail(
            f"{part}: the judge cannot verify the {rule} rule",
            "no code that changes libraries or runs code the judge cannot read",
            str(finding),
            FROM_OUTSIDE,
        )
    for finding in reach.of("unresolved", "tamper"):
        fail(
            f"{part}: the judge cannot verify the {rule} rule",
            "code it can resolve",
            str(finding),
            UNVERIFIABLE,
        )


def assert_no_loops(name: str, namespace: object, part: str, skip: Iterable[str] = ()) -> None:
    """Fail unless no loop can run while the answer computes: no loop syntax, higher-order
    iteration, generator or recursion in it or in anything it reaches (``skip``: names of
    definitions graded by another part, left out)."""
    program, reach = _reach(name, namespace, skip)
    _refuse(part, "no-loop", reach, program)
    for finding in reach.of("loop"):
        fail(
            f"{part}: the task forbids loops",
            "vectorised tensor operations only",
            str(finding),
            "iterating over heads, positions or copies instead of using tensor operations",
        )
    for finding in reach.of("iterates", "recursion"):
        fail(
            f"{part}: the judge cannot verify the no-loop rule",
            "vectorised tensor operations only",
            f"{finding}: it iterates",
            "map, filter, reduce, vmap, module containers and recursion repeat a computation "
            "the way a loop does",
        )


def _fused(path):
    lower = path.lower()
    return any(word in lower for word in FUSED_WORDS)


def assert_no_fused_attention(name: str, namespace: object, part: str) -> None:
    """Fail if the answer reaches a library attention module or fused kernel, or PyTorch's
    private operators (whose computation the judge cannot check)."""
    program, reach = _reach(name, namespace)
    _refuse(part, "no-fused-attention", reach, program)
    for finding in reach.of("library"):
        if _fused(finding.path):
            fail(
                f"{part}: build the attention by hand, not with a library attention module or "
                "fused kernel",
                "matrix products, a softmax and your own masking",
                str(finding),
            )
        if any(finding.path == p or finding.path.startswith(p) for p in PRIVATE):
            fail(
                f"{part}: the judge cannot verify the no-fused-attention rule",
                "torch's public functions",
                f"{finding}: a private PyTorch operator",
                UNVERIFIABLE,
            )


def assert_no_torch(name: str, namespace: object, part: str) -> None:
    """Fail if the answer (numpy only) reaches torch in any form."""
    program, reach = _reach(name, namespace)
    _refuse(part, "numpy-only", reach, program)
    for finding in reach.of("library"):
        if finding.path == "torch" or finding.path.startswith("torch."):
            fail(f"{part}: this part must use numpy only, not torch", "numpy only", str(finding))


def part_label(test_source: str, default: str) -> str:
    """The part a test cell grades, from its docstring ("Part 5", "Q1(a)", "Lab 1", "(c)")."""
    tree = python_source(test_source)
    body = tree.body if tree is not None else []
    if body and _isinstance(body[0], ast.Expr) and _isinstance(body[0].value, ast.Constant):
        text = str(body[0].value.value).strip()
        if ":" in text:
            return text.split(":", 1)[0].strip()
    return default


def assert_imports_in_first_cell(namespace: object, test_index: int) -> None:
    """Fail the test cell at ``test_index`` if the answer it grades imports anything.

    The answer is the nearest answer cell above the test: an import in that cell, or in any
    code it reaches (a helper's cell, a name bound by an import in a cell the student added),
    costs every test of that answer. The course's own cells import what the course needs.
    """
    program = program_of(namespace)
    cells = {c.index: c for c in program.cells}
    test = cells.get(test_index)
    if test is None:
        return
    above = [c for c in program.cells if c.answer and not c.test and c.index < test_index]
    if not above:
        return
    answer = above[-1]
    for finding in reach_cell(program, answer.index).of("import"):
        fail(
            f"{part_label(test.source, test.grade_id or 'this part')}: imports are allowed "
            "only in the course's first cell",
            "only what the first cell imports (torch, torch.nn as nn, numpy as np)",
            str(finding),
            "the assignment's import rule: an answer that imports earns no points",
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
    bound: dict[str, list[tuple[int, ast.expr | None]]] = {}
    for node in _own_nodes(func_node):
        pairs: list[tuple[ast.expr, ast.expr | None]] = []
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
    sizes: set[str] = set()
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


def assert_one_statement_per_output(
    name: str,
    namespace: object,
    part: str,
    outputs: Iterable[str],
    size_params: Iterable[str] | None = None,
) -> None:
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
    program, reach = _reach(name, namespace)
    _refuse(part, "one-statement", reach, program)
    node = reach.primary
    assert node is not None  # _reach failed otherwise (checks.fail raises; it has no NoReturn)
    found = program.finding("statement", "", node)
    at = found.at  # "`f`, line 3 of the answer cell"
    if _isinstance(node, ast.ClassDef):  # the last def or class of the name is what is proved
        fail(
            f"{part}: {name} must be a function",
            f"`def {name}(...)`: the rule is proved on the statements of a function",
            f"a class `{name}` on {pointer(Place(found.part, found.place), '', found.line)}",
        )
    assert _isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))  # a def, not a class
    rule = "a single assignment (or the expression in the return)"
    args = node.args
    params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    numbers = set(size_params) if size_params is not None else params - _tensor_like(node)
    bound = _bindings(node)
    sizes = _size_locals(bound, numbers)
    outputs = list(outputs)
    for output in outputs:
        lines = [line for line, _ in bound.get(output, [])]
        if len(lines) > 1:
            fail(
                f"{part}: {output} must be computed in one statement",
                rule,
                f"assigned in {at(sorted(lines))}",
            )
    for output, line in _mutated_outputs(node, outputs):
        fail(
            f"{part}: {output} must be computed in one statement",
            rule,
            f"modified in place in {at(line)}",
        )
    exprs = [(o, bound[o][0][1], bound[o][0][0]) for o in outputs if o in bound]
    for sub in _own_nodes(node):
        if _isinstance(sub, ast.Return) and sub.value is not None:
            elts = sub.value.elts if _isinstance(sub.value, ast.Tuple) else [sub.value]
            exprs.extend(("a returned output", e, sub.lineno) for e in elts)
    # An argument rebound in the body holds an intermediate, whatever its name.
    allowed = (params - (set(bound) - sizes)) | sizes | set(outputs)
    for output, expr, line in exprs:
        if expr is None:
            continue
        for used in sorted(_loaded_names(expr) - allowed):
            if used in bound:
                first = bound[used][0][0]
                fail(
                    f"{part}: {output} must be computed in one statement",
                    rule,
                    f"{at(line)} uses {used!r}, an intermediate computed on line {first}",
                    "chain of statements; write the whole expression in the statement that assigns it",
                )
            if any(kind == "value" for kind, _, _ in program.module.names.get(used, [])):
                fail(
                    f"{part}: {output} must be computed in one statement",
                    rule,
                    f"{at(line)} uses {used!r}, a value computed in another "
                    "statement of the notebook",
                    "an intermediate kept in a global variable",
                )
    helpers = [
        n
        for n in reach.units
        if n is not node and _isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    for helper in helpers:
        body = [s for s in helper.body if not _is_docstring(s)]
        if len(body) != 1 or not _isinstance(body[0], ast.Return):
            found = program.finding("statement", "", helper)
            fail(
                f"{part}: each output must be computed in one statement",
                rule,
                f"helper {helper.name!r} (in {Place(found.part, found.place).name}) computes its "
                f"result in {len(body)} statements",
                "splitting an output's computation over a helper function's statements",
            )


def _is_docstring(stmt):
    return (
        _isinstance(stmt, ast.Expr)
        and _isinstance(stmt.value, ast.Constant)
        and _isinstance(stmt.value.value, str)
    )
