"""What the judge knows of the libraries and of Python when it proves a rule.

Which library roots it resolves paths in, which callables iterate, which paths patch PyTorch's
machinery, and which methods a computed value (a tensor, an array, a module, a container) may
be called with. The dangerous names (builtins, modules, hooks, magics) are
:mod:`attncourse.dangerous`'s, shared with the integrity scan.
"""

import ast
import functools
import importlib
from collections.abc import Iterable

from attncourse.dangerous import HOOK

# Library roots the judge resolves attribute paths in (what the course's cells import).
LIBRARY_ROOTS = {"torch", "numpy", "math", "builtins", "functools", "itertools", "operator"}
# Dunder methods a student's class may define: any other is called implicitly by Python.
PLAIN_METHODS = {"__init__", "__call__", "__repr__", "__str__"}
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
    "torch.while_loop",
    "torch.cond",
    "torch.scan",
    "torch.associative_scan",
    "torch._higher_order_ops",
    "torch.utils._pytree",
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
# Library paths that reach PyTorch's machinery below its public API, or replace its operators.
TAMPER_PATHS = ("torch.library", "torch.overrides", "torch.utils.hooks", "torch._C")
# What the footprint rule lets an answer reach (``attncourse.judge.recordable``): torch's public
# operators in these namespaces, its top-level functions, classes and dtypes but these, tensor
# methods but these, math and builtins; numpy only for its constants.
RECORDED_NAMESPACES = ("torch.nn.functional", "torch.linalg", "torch.special", "torch.fft")
UNRECORDED_TORCH = {
    "compile",
    "vmap",
    "cond",
    "while_loop",
    "scan",
    "associative_scan",
    "load",
    "save",
    "from_file",
    "frombuffer",
    "from_dlpack",
    "from_numpy",
    "set_printoptions",
}
UNRECORDED_METHODS = {
    "numpy",
    "tolist",
    "tobytes",
    "tofile",
    "as_subclass",
    "untyped_storage",
    "storage",
    "data_ptr",
    "set_",
    "share_memory_",
    "backward",
    "attrgetter",
    "methodcaller",
}
NUMPY_CONSTANTS = {"numpy.inf", "numpy.pi", "numpy.e", "numpy.nan", "numpy.newaxis"}
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


@functools.cache
def library_object(path: str) -> object:
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


def under(path: str, prefixes: Iterable[str]) -> bool:
    return any(path == p or path.startswith(p + ".") for p in prefixes)


def private_torch(path: str) -> bool:
    """A path below torch's public API (``torch._C``, ``torch.utils._python_dispatch``...):
    where dispatch modes, the mode stack and the dispatcher's guards live."""
    parts = path.split(".")
    return parts[0] == "torch" and any(
        p.startswith("_") and not p.endswith("__") for p in parts[1:]
    )
