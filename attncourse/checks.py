"""Tamper-resistant comparison helpers for the hidden tests.

The grading kernel imports this module before any student cell runs (see
``nbgrader_config.py``), so every function below works with references to
``torch``, ``numpy`` and builtins captured while they were still pristine. A
student cell that later rebinds ``torch.allclose``, ``np.allclose``,
``isinstance`` or ``AssertionError`` changes nothing here.

Every failure raises :class:`GradingError` with a message that says what was
expected, what came and, where it can be told, the likely mistake.
"""

import builtins
import math
import random
import sys

import numpy as np
import torch

_type = builtins.type
_isinstance = builtins.isinstance
_len = builtins.len
_tuple = builtins.tuple
_int = builtins.int
_float = builtins.float
_repr = builtins.repr
_sorted = builtins.sorted
_AssertionError = builtins.AssertionError

_Tensor = torch.Tensor
_Parameter = torch.nn.Parameter
_ndarray = np.ndarray
_as_tensor = torch.as_tensor
_float64 = torch.float64
_tensor_detach = torch.Tensor.detach
_tensor_to = torch.Tensor.to
_tensor_isfinite = torch.isfinite
_tensor_all = torch.all
_tensor_sub = torch.sub
_tensor_norm = torch.linalg.vector_norm
_tensor_item = torch.Tensor.item
_np_asarray = np.asarray
_np_float64 = np.float64
_np_norm = np.linalg.norm
_np_isfinite = np.isfinite
_np_all = np.all

TENSOR_TYPES = (_Tensor, _Parameter)


class GradingError(_AssertionError):
    """A hidden test found a wrong answer; the message names the mistake."""


def fail(what, expected=None, got=None, cause=None):
    """Raise a GradingError: what was checked, what was expected, what came, the likely cause."""
    lines = [what]
    if expected is not None:
        lines.append(f"  expected: {expected}")
    if got is not None:
        lines.append(f"  got:      {got}")
    if cause:
        lines.append(f"  likely cause: {cause}")
    raise GradingError("\n".join(lines))


def device():
    """The device hidden tests run on: CUDA when available (TF32 off), else the CPU."""
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        return torch.device("cuda")
    return torch.device("cpu")


def distinct_dims(rng, names, low=2, high=9):
    """Random, pairwise distinct integer dimensions, one per name."""
    values = rng.sample(range(low, high + _len(names) + 1), _len(names))
    return dict(zip(names, values, strict=True))


def rng_for(test_id):
    """A seeded Python RNG so a test draws the same dimensions on every run."""
    return random.Random(test_id)


def as_shape(value, what):
    """Turn an answered shape into a tuple of ints, or fail saying why it is not one."""
    if _isinstance(value, torch.Size):
        value = _tuple(value)
    if _isinstance(value, _int) and _type(value) is not bool:
        value = (value,)
    if _type(value) not in (_tuple, list):
        fail(
            f"{what}: a shape must be a tuple of integers",
            "a tuple such as (3, 5)",
            f"{_type(value).__name__} {_repr(value)[:80]}",
        )
    items = []
    for item in value:
        if _isinstance(item, (np.integer,)):
            item = _int(item)
        if _type(item) is not _int:
            fail(
                f"{what}: every entry of a shape must be a plain int",
                "ints computed from the dimension arguments",
                f"{_type(item).__name__} {_repr(item)[:80]}",
            )
        items.append(item)
    return _tuple(items)


def check_shape(what, got, expected, cause=None):
    """Fail unless the answered shape equals the expected tuple."""
    shape = as_shape(got, what)
    if shape != _tuple(expected):
        fail(f"{what}: wrong shape", expected, shape, cause)


def tensor(value, what):
    """Return value as a float64 tensor on the CPU, checking it is a genuine tensor or array."""
    if (
        _type(value) in TENSOR_TYPES
        or _isinstance(value, _Tensor)
        and _type(value).__eq__ is _Tensor.__eq__
    ):
        return _tensor_to(_tensor_detach(value), device="cpu", dtype=_float64)
    if _type(value) is _ndarray:
        return _as_tensor(_np_asarray(value, dtype=_np_float64))
    fail(
        f"{what}: expected a tensor",
        "torch.Tensor (or numpy.ndarray where the task allows numpy)",
        f"{_type(value).__name__}",
        "the function returned something other than the array it computed",
    )


def rel_error(got, ref):
    """Relative error ||got - ref|| / ||ref|| in float64; inf when shapes differ or values are not finite."""
    got = _tensor_to(_tensor_detach(got), device="cpu", dtype=_float64)
    ref = _tensor_to(_tensor_detach(ref), device="cpu", dtype=_float64)
    if _tuple(got.shape) != _tuple(ref.shape):
        return math.inf
    if not _tensor_item(_tensor_all(_tensor_isfinite(got))):
        return math.inf
    denom = _tensor_item(_tensor_norm(ref))
    return _tensor_item(_tensor_norm(_tensor_sub(got, ref))) / (denom if denom > 0 else 1.0)


def closest_mistake(got, mistakes, tol):
    """Name of the known wrong answer that ``got`` reproduces within ``tol``, or None."""
    best = None
    for name, wrong in mistakes.items():
        err = rel_error(got, tensor(wrong, name))
        if err <= tol and (best is None or err < best[1]):
            best = (name, err)
    return None if best is None else best[0]


def check_close(what, got, ref, tol, mistakes=None, shape_cause=None):
    """Fail unless ``got`` has ref's shape and relative error at most ``tol``.

    ``mistakes`` maps a description of a known mistake to the tensor that mistake
    produces; when the answer reproduces one of them, the message names it.
    """
    got_t = tensor(got, what)
    ref_t = tensor(ref, "reference")
    if _tuple(got_t.shape) != _tuple(ref_t.shape):
        fail(f"{what}: wrong output shape", _tuple(ref_t.shape), _tuple(got_t.shape), shape_cause)
    err = rel_error(got_t, ref_t)
    if err <= tol:
        return err
    cause = closest_mistake(got_t, mistakes or {}, tol)
    if err == math.inf:
        cause = cause or "the output contains NaN or inf"
    fail(
        f"{what}: values differ from the reference",
        f"relative error <= {tol:.1e}",
        f"relative error {err:.3e}",
        cause,
    )


# Attributes of these objects are put back to their import-time values by
# restore_pristine(), so a student cell that rebinds, say, ``torch.softmax``,
# ``np.allclose`` or ``nn.Linear.forward`` cannot change what a hidden test computes.
_PROTECTED = (
    builtins,
    torch,
    torch.Tensor,
    torch.nn,
    torch.nn.Module,
    torch.nn.Linear,
    torch.nn.functional,
    torch.linalg,
    torch.testing,
    np,
    np.linalg,
    np.testing,
)
_dict = builtins.dict
_vars = builtins.vars
_setattr = builtins.setattr
_getattr = builtins.getattr
_delattr = builtins.delattr
_id = builtins.id
_SNAPSHOTS = [(obj, _dict(_vars(obj))) for obj in _PROTECTED]
_MISSING = object()


def _restore(obj, snapshot):
    current = _vars(obj)
    for name, value in snapshot.items():
        if current.get(name, _MISSING) is not value:
            try:
                _setattr(obj, name, value)
            except (AttributeError, TypeError):
                pass
    if _isinstance(obj, _type):
        # On a class, an added attribute shadows its base (``torch.Tensor.__sub__ = ...``
        # hides TensorBase's); modules keep added names (lazily imported submodules).
        for name in [n for n in current if n not in snapshot]:
            try:
                _delattr(obj, name)
            except (AttributeError, TypeError):
                pass


def protect(module):
    """Snapshot ``module``'s globals now so restore_pristine() puts them back later."""
    _SNAPSHOTS.append((module, _dict(_vars(module))))


def restore_pristine():
    """Undo any rebinding of torch, numpy, builtins or this module's helpers since import."""
    for obj, snapshot in _SNAPSHOTS:
        _restore(obj, snapshot)


def call(func, args, what, cause=None):
    """Call the student's ``func(*args)``; an exception becomes a GradingError that names it."""
    if not callable(func):
        fail(
            f"{what}: expected a function",
            "a function defined in the answer cell",
            _type(func).__name__,
        )
    try:
        return func(*args)
    except GradingError:
        raise
    except Exception as error:
        fail(f"{what} raised {_type(error).__name__}: {str(error)[:300]}", cause=cause)


def shape_mistake(shape, candidates):
    """Name of the candidate mistake whose shape equals ``shape``, or None."""
    for name, wrong in candidates.items():
        if _tuple(wrong) == shape:
            return name
    return None


protect(sys.modules[__name__])

# Load every assignment's hidden-test module now: the grading kernel imports this
# module before the first student cell, so those modules capture pristine helpers too.
import attncourse.grading  # noqa: E402,F401,I001


def answer(ns, name, part, _restore=restore_pristine):
    """The object the student defined under ``name``; fail clearly when it is missing.

    Every check starts here, so it first undoes any rebinding of torch, numpy,
    builtins and the course's helpers (bound as a default: rebinding the module's
    name does not change it).
    """
    _restore()
    if name not in ns:
        fail(f"{part}: `{name}` is not defined", f"`{name}` defined in the answer cell", "nothing")
    return ns[name]
