"""Comparison helpers of the judge: the trusted side of every hidden test.

These run in the grader's own process, never in the student's kernel. What a
check compares is plain data the kernel returned (see :mod:`attncourse.judge`):
fresh tensors and arrays read from raw bytes after a typed header, numbers, strings, tuples.
Every failure raises :class:`GradingError` with a message that says what was
expected, what came and, where it can be told, the likely mistake.

Every random input is drawn from a per-run secret (:func:`secret_scope`), so
nothing a student precomputes matches it.
"""

import contextlib
import contextvars
import functools
import hashlib
import math
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from attncourse.judge.remote import Remote, StudentNamespace, StudentRaised
from attncourse.judge.wire import Refused

_SECRET: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "attncourse_secret", default=None
)


class GradingError(AssertionError):
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


@contextlib.contextmanager
def secret_scope(secret: object) -> Iterator[None]:
    """Draw every hidden input inside this block from ``secret``."""
    token = _SECRET.set(str(secret))
    try:
        yield
    finally:
        _SECRET.reset(token)


def seed_for(test_id: str) -> int:
    """A 63-bit seed from the run's secret and ``test_id`` (the same within one run)."""
    secret = _SECRET.get()
    if secret is None:
        raise RuntimeError("hidden inputs drawn outside secret_scope()")
    digest = hashlib.sha256(f"{secret}/{test_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def rng_for(test_id: str) -> random.Random:
    """A Python RNG for one test, seeded from the run's secret."""
    return random.Random(seed_for(test_id))


def generator(test_id: str) -> torch.Generator:
    """A torch generator for one test, seeded from the run's secret."""
    return torch.Generator().manual_seed(seed_for(test_id))


def distinct_dims(
    rng: random.Random, names: Sequence[str], low: int = 2, high: int = 9
) -> dict[str, int]:
    """Random, pairwise distinct integer dimensions, one per name."""
    values = rng.sample(range(low, high + len(names) + 1), len(names))
    return dict(zip(names, values, strict=True))


def describe(value: Any) -> str:
    """A short description of an answered value for a failure message."""
    if isinstance(value, Refused):
        return value.describe()
    if isinstance(value, Remote):
        return f"a {value.cls} object"
    if isinstance(value, torch.Tensor | np.ndarray):
        return f"{type(value).__name__} of shape {tuple(value.shape)}"
    return f"{type(value).__name__} {repr(value)[:80]}"


def as_shape(value: Any, what: str) -> tuple[int, ...]:
    """Turn an answered shape into a tuple of ints, or fail saying why it is not one."""
    if isinstance(value, int) and type(value) is not bool:
        value = (value,)
    if type(value) not in (tuple, list):
        fail(
            f"{what}: a shape must be a tuple of integers",
            "a tuple such as (3, 5)",
            describe(value),
        )
    items = []
    for item in value:
        if type(item) is not int:
            fail(
                f"{what}: every entry of a shape must be a plain int",
                "ints computed from the dimension arguments",
                describe(item),
            )
        items.append(item)
    return tuple(items)


def check_shape(what: str, got: Any, expected: Sequence[int], cause: str | None = None) -> None:
    """Fail unless the answered shape equals the expected tuple."""
    shape = as_shape(got, what)
    if shape != tuple(expected):
        fail(f"{what}: wrong shape", expected, shape, cause)


def tensor(value: Any, what: str) -> torch.Tensor:
    """``value`` as a float64 CPU tensor, checking it came back as a plain numeric array."""
    if isinstance(value, Refused):
        fail(
            f"{what}: expected a plain tensor",
            "torch.Tensor (or numpy.ndarray where the task allows numpy) of a real dtype",
            value.describe(),
            "return the tensor your computation produced, not a wrapper or subclass of it",
        )
    if type(value) is torch.Tensor:
        if value.dtype == torch.bool:
            fail(f"{what}: expected numbers", "a floating-point tensor", "a boolean tensor")
        return value.detach().to(dtype=torch.float64)
    if type(value) is np.ndarray:
        if value.dtype.kind == "b":
            fail(f"{what}: expected numbers", "a floating-point array", "a boolean array")
        return torch.as_tensor(np.asarray(value, dtype=np.float64))
    fail(
        f"{what}: expected a tensor",
        "torch.Tensor (or numpy.ndarray where the task allows numpy)",
        describe(value),
        "the function returned something other than the array it computed",
    )


def rel_error(got: Any, ref: Any) -> float:
    """Relative error ||got - ref|| / ||ref|| in float64; inf when shapes differ or values are not finite."""
    got = torch.as_tensor(got).detach().to(device="cpu", dtype=torch.float64)
    ref = torch.as_tensor(ref).detach().to(device="cpu", dtype=torch.float64)
    if tuple(got.shape) != tuple(ref.shape):
        return math.inf
    if not bool(torch.isfinite(got).all()):
        return math.inf
    denom = float(torch.linalg.vector_norm(ref))
    return float(torch.linalg.vector_norm(got - ref)) / (denom if denom > 0 else 1.0)


def closest_mistake(got: Any, mistakes: Mapping[str, Any], tol: float) -> str | None:
    """Name of the known wrong answer that ``got`` reproduces within ``tol``, or None."""
    best = None
    for name, wrong in mistakes.items():
        err = rel_error(got, tensor(wrong, name))
        if err <= tol and (best is None or err < best[1]):
            best = (name, err)
    return None if best is None else best[0]


def check_close(
    what: str,
    got: Any,
    ref: Any,
    tol: float,
    mistakes: Mapping[str, Any] | None = None,
    shape_cause: str | None = None,
) -> float:
    """Fail unless ``got`` has ref's shape and relative error at most ``tol``.

    ``mistakes`` maps a description of a known mistake to the tensor that mistake
    produces; when the answer reproduces one of them, the message names it.
    NaN and inf never pass.
    """
    got_t = tensor(got, what)
    ref_t = tensor(ref, "reference")
    if tuple(got_t.shape) != tuple(ref_t.shape):
        fail(f"{what}: wrong output shape", tuple(ref_t.shape), tuple(got_t.shape), shape_cause)
    err = rel_error(got_t, ref_t)
    if err <= tol and math.isfinite(err):
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


def answer(ns: StudentNamespace, name: str, part: str) -> Any:
    """The student's ``name`` (data, or a handle to an object in the kernel); fail when missing."""
    try:
        return ns[name]  # one request: `name in ns` would transfer the value a second time
    except KeyError:
        fail(f"{part}: `{name}` is not defined", f"`{name}` defined in the answer cell", "nothing")


def call(
    func: Any, args: Sequence[Any], what: str, cause: str | None = None, **options: Any
) -> Any:
    """Call the student's ``func(*args)`` in the kernel; an exception becomes a GradingError.

    ``options`` go to :meth:`Remote.call` (``no_grad``, ``stdout``, ``ref``).
    """
    if not isinstance(func, Remote) or not func._callable:
        fail(
            f"{what}: expected a function", "a function defined in the answer cell", describe(func)
        )
    try:
        return func.call(*args, **options)
    except StudentRaised as error:
        fail(f"{what} raised {error.kind}: {error.message[:300]}", cause=cause)


def named_mistakes(
    reference: Callable[..., Any], variants: Mapping[str, Any], *args: Any, **kwargs: Any
) -> dict[str, Any]:
    """The wrong outputs of a table of named mistakes: ``{name: reference(*args, variant=v)}``.

    The one convention of every assignment's ``references.py``: a reference that can make a
    mistake takes ``variant``, a frozen dataclass whose fields at their defaults are the task's,
    and a table maps the description of each mistake to the variant that makes it. What
    :func:`check_close` takes as ``mistakes`` is this dict (name -> the wrong output).
    """
    return {name: reference(*args, variant=v, **kwargs) for name, v in variants.items()}


class Deferred(Mapping):
    """A table of named mistakes computed on first look: only a failing answer is compared
    with its mistakes (:func:`check_close`), and computing them was most of a passing value
    check's CPU (MyMHA/MyGQA 60 %; a correct MLAAttention under 100 secrets, its forward
    checks 10.8 -> 5.3 s and its rope's 5.1 -> 1.6 s)."""

    def __init__(
        self, compute: Callable[..., Mapping[str, Any]], *args: Any, **kwargs: Any
    ) -> None:
        self._compute, self._args, self._kwargs = compute, args, kwargs

    @functools.cached_property
    def _table(self) -> dict[str, Any]:
        return dict(self._compute(*self._args, **self._kwargs))

    def __getitem__(self, name: str) -> Any:
        return self._table[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)


def single_threaded(check: Callable[[StudentNamespace], Any]) -> Callable[[StudentNamespace], Any]:
    """Run ``check`` with torch on one thread in the judge's process, then restore the count.

    The references are many tiny float64 operations; on a loaded 2-core machine torch's
    second thread made them 600x slower (0.08 s vs 48 s for the MLA mistakes of one draw,
    load average 16), and they gain nothing from it. Kernels are separate processes.
    """

    @functools.wraps(check)
    def run(ns: StudentNamespace) -> Any:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return check(ns)
        finally:
            torch.set_num_threads(threads)

    return run


def integer(value: Any, what: str, noun: str = "an integer") -> int:
    """An integer answer (a numpy integer arrives as an int; a float only if it is whole)."""
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    fail(f"{what}: expected {noun}", "an int", describe(value))


def shape_mistake(shape: tuple[int, ...], candidates: Mapping[str, Sequence[int]]) -> str | None:
    """Name of the candidate mistake whose shape equals ``shape``, or None."""
    for name, wrong in candidates.items():
        if tuple(wrong) == shape:
            return name
    return None


# ------------------------------------------------------ the student's objects in the kernel


def randn(gen: torch.Generator, *shape: int, scale: float = 1.0) -> torch.Tensor:
    """Normal float64 draws of ``shape`` from a check's generator, times ``scale``."""
    return torch.randn(*shape, generator=gen, dtype=torch.float64) * scale


def method(obj: Any, name: str, what: str, expected: str = "an object") -> Remote:
    """The kernel-side bound method ``obj.name`` (a handle), or a failure naming what is missing."""
    found = None
    if isinstance(obj, Remote):
        try:
            found = obj.attr(name)
        except AttributeError:
            found = None
    if not isinstance(found, Remote):
        fail(f"{what}: expected {expected} with a .{name}() method", f".{name}()", describe(obj))
    return found


def to_grading(
    ns: StudentNamespace,
    model: Any,
    what: str,
    label: str | None = None,
    expected: str = "an object",
) -> Any:
    """``model.to(device).double()`` in the kernel: the student's model in float64 on the
    grading device (a handle). ``label`` names the model in the calls' messages (``what``)."""
    label = label or what
    moved = call(method(model, "to", what, expected), (ns.device,), f"{label}.to(device)")
    return call(method(moved, "double", what, expected), (), f"{label}.double()")


def submodule(model: Any, name: str) -> Any:
    """The kernel's ``model.<name>`` (a handle, data, or None when it has none)."""
    return getattr(model, name, None) if isinstance(model, Remote) else None


def layer_weight(found: Any) -> torch.Tensor | None:
    """``found.weight`` as data (a plain tensor), or None when the layer has no plain weight."""
    weight = getattr(found, "weight", None) if isinstance(found, Remote) else None
    return weight if type(weight) is torch.Tensor else None


def load_linear(
    model: Any,
    name: str,
    weight: torch.Tensor,
    part: str,
    missing_cause: str | None = None,
    shape_cause: Callable[[tuple[int, ...]], str | None] | None = None,
    expected: str = "an object",
) -> None:
    """Load ``weight`` into the kernel's ``model.<name>.weight`` and zero its bias if it has one
    (a bias costs the attribute test only). A missing layer, or a weight of another shape, fails
    naming it; ``shape_cause(current_shape)`` says why the shape may be wrong."""
    found = submodule(model, name)
    current = layer_weight(found)
    if current is None:
        fail(
            f"{part}: the model has no linear layer `{name}` with a `.weight`",
            "nn.Linear",
            describe(found),
            missing_cause,
        )
    if tuple(current.shape) != tuple(weight.shape):
        fail(
            f"{part}: `{name}.weight` has the wrong shape, so the test cannot load its weights",
            tuple(weight.shape),
            tuple(current.shape),
            shape_cause(tuple(current.shape)) if shape_cause else None,
        )
    loading = f"{part}: loading the test's weights into `{name}.weight`"
    handle = found.attr("weight", ref=True)
    call(method(handle, "copy_", loading, expected), (weight,), loading, no_grad=True, ref=True)
    if getattr(found, "bias", None) is not None:
        handle = found.attr("bias", ref=True)
        call(method(handle, "zero_", loading, expected), (), loading, no_grad=True, ref=True)


def check_attributes(
    model: Any, name: str, attrs: Mapping[str, int], part: str, owner: str = ""
) -> None:
    """The attribute check of a model class: ``model`` (a handle) is an ``nn.Module`` and holds
    each constructor argument of ``attrs`` as that int; ``owner`` follows the attribute's name
    in the message (" of MLAAttention(...)")."""
    if not (isinstance(model, Remote) and model.is_a("module")):
        fail(f"{part}: {name} must subclass nn.Module", "nn.Module", describe(model))
    for key, value in attrs.items():
        got = getattr(model, key, None)
        if type(got) is not int or got != value:
            fail(
                f"{part}: attribute `{key}`{owner}",
                value,
                describe(got) if isinstance(got, Remote) else repr(got)[:80],
                "store the constructor's arguments under the names given in the task",
            )


def linear_layer(model: Any, name: str, part: str) -> tuple[Remote, torch.Tensor]:
    """``model.<name>`` (a handle to an ``nn.Linear``) and its weight as data, or a failure."""
    layer = submodule(model, name)
    if not (isinstance(layer, Remote) and layer.is_a("linear")):
        fail(f"{part}: `{name}` must be an nn.Linear", "nn.Linear", describe(layer))
    weight = layer_weight(layer)
    if weight is None:
        fail(f"{part}: `{name}.weight` must be a plain tensor", "a Parameter", "none")
    return layer, weight


def check_no_bias(layer: Any, name: str, part: str) -> None:
    """Fail when the layer ``name`` has a bias (the task's projections have none)."""
    if getattr(layer, "bias", None) is not None:
        fail(f"{part}: `{name}` has a bias", "bias=False", "a bias vector", "bias present")
