# Generated from the course's judge by the release build: do not edit.
"""The footprint rule: the answer computes only where the kernel's recorder sees it.

A footprint (:mod:`coursecheck.footprint`) is recorded in the student's own process, by
a dispatch mode around the judge's call. It is complete when every tensor the answer forms is
made by an operation that goes through PyTorch's dispatcher, and nothing the answer runs can
pop, disable or replace that mode. This module proves both from the source, as the other rules
are proved (:mod:`coursecheck.resolve`): everything the answer reaches must be its own
code, builtins, ``math``, numpy's constants, or torch's public operators (top-level functions,
classes and dtypes, ``torch.nn.functional``, ``torch.linalg``, ``torch.special``,
``torch.fft``, tensor methods), minus what computes outside the dispatcher or reaches the
recorder: numpy and ``.numpy()``/``.tolist()``, private paths (``torch._C``,
``torch.utils._python_dispatch``), ``torch.utils`` (checkpoint, dlpack, C++ extensions),
``torch.library``, ``torch.overrides``, ``torch.autograd``, ``torch.jit``, ``torch.compile``,
``torch.ops``, tensor subclasses, and the fused-attention family. What it cannot resolve, and
any cell that tampers (:mod:`coursecheck.tampering`: a ``__torch_dispatch__`` or
``__torch_function__`` class, a private torch path, patches, hooks, dynamic code), fails it.
"""

import ast
import inspect

from .failure import fail
from .libraries import (
    NUMPY_CONSTANTS,
    RECORDED_NAMESPACES,
    UNRECORDED_METHODS,
    UNRECORDED_TORCH,
    library_object,
    private_torch,
    under,
)
from .program import Program
from .resolve import Reach
from .rules import _fused, _reach, _refuse

RULE = "footprint"
EXPECTED = "torch's public operators on tensors, your own functions, math and builtins"
WHY = (
    "the grader records the tensor operations your function dispatches; numpy, Python lists, "
    "private or compiled paths, modes and tensor subclasses compute where that record cannot "
    "see, so the judge cannot prove what was formed"
)
_BASES = {"torch", "torch.nn", *RECORDED_NAMESPACES}


def unrecorded(path: str) -> str | None:
    """Why the library object at ``path`` may compute outside the record (None: it may not)."""
    parts = path.split(".")
    root = parts[0]
    if root in ("builtins", "math", "functools", "itertools"):
        return None
    if root == "operator":
        return "a string-named attribute" if parts[-1] in UNRECORDED_METHODS else None
    if root == "numpy":
        return None if path in NUMPY_CONSTANTS or path == "numpy" else "numpy computes on copies"
    if root != "torch":
        return "a library the judge does not know"
    if private_torch(path):
        return "a private PyTorch path"
    if _fused(path):
        return "a fused attention kernel"
    if path in _BASES or under(path, RECORDED_NAMESPACES):
        return None
    if parts[:2] == ["torch", "Tensor"]:
        return "a tensor method outside the record" if parts[-1] in UNRECORDED_METHODS else None
    if len(parts) == 2 or (len(parts) == 3 and parts[1] == "nn"):
        obj = library_object(path)
        if obj is not None and not inspect.ismodule(obj) and parts[-1] not in UNRECORDED_TORCH:
            return None if not parts[-1].endswith("Storage") else "raw storage"
    return "outside torch's public operators"


def _subclasses_tensor(node: ast.ClassDef, program: Program) -> bool:
    import torch

    # a passive resolver: evaluating a base adds nothing to the Reach the other rules read
    values = Reach(program, passive=True)
    scope = program.classes.get(node, program.module)
    for base in node.bases:
        for value in values._eval(base, scope):
            obj = library_object(getattr(value, "path", "")) if hasattr(value, "path") else None
            if isinstance(obj, type) and issubclass(obj, torch.Tensor):
                return True
    return False


def assert_recorded(name: str, namespace: object, part: str) -> None:
    """Fail unless ``name`` and everything it reaches compute where the footprint sees."""
    program, reach = _reach(name, namespace)
    _refuse(part, f"{RULE}", reach, program)
    what = f"{part}: the judge cannot verify what {name} forms"
    for finding in reach.of("library"):
        why = unrecorded(finding.path)
        if why:
            fail(what, EXPECTED, f"{finding}: {why}", WHY)
    for node in reach.units:
        if isinstance(node, ast.ClassDef) and _subclasses_tensor(node, program):
            found = program.finding(RULE, f"class {node.name}, a tensor subclass", node)
            fail(what, EXPECTED, str(found), WHY)
    for root in [*reach.units, *reach.statements]:
        for sub in ast.walk(root):
            word = (
                sub.attr
                if isinstance(sub, ast.Attribute)
                else sub.value
                if isinstance(sub, ast.Constant)
                else None
            )
            if isinstance(word, str) and word in UNRECORDED_METHODS:
                found = program.finding(RULE, f"`{word}`", sub)
                fail(what, EXPECTED, f"{found}: computes outside the record", WHY)
