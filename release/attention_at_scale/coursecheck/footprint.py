# Generated from the course's judge by the release build: do not edit.
"""What a student's function formed while the judge called it: its tensor operations' shapes.

Shared type (agreed before the work on Assignment 5 started): the kernel's side of the judge
records every tensor operation the called function dispatches (name, the shapes of its tensor
inputs and outputs) and sends the list back as plain data; the judge's checks decide from it,
for example that no intermediate holds more than a block of scores, or how many blocks of
scores a causal forward computed. ``Remote.call(..., footprint=True)`` returns
``(value, Footprint)``.

How the record is made: :class:`coursecheck.agent.Recorder`, a
``TorchDispatchMode`` entered around the one call, sees every ATen operation below autograd
(``@``, ``matmul`` and ``einsum`` arrive as the ``bmm``/``mm`` they lower to, views and
factories included) and keeps names and shapes only, at most :data:`MAX_OPS`.
Why it can be trusted although it runs in the student's process: the record is only as good
as the proof that the answer cannot reach the recorder or compute where it does not look.
The ``footprint`` rule (:mod:`coursecheck.recordable`) proves from the source that the
answer reaches only public torch functions and tensor methods that dispatch (no numpy,
``.numpy()``, ``.tolist()``, ``torch._C``, ``torch.utils``, dispatch or function modes,
tensor subclasses, ``torch.library``, ``torch.compile``, ``torch.jit``, checkpointing, private
paths), and code in any other cell that could push a mode, patch torch or reach the agent
counts against it (:mod:`coursecheck.tampering`); a check grades a footprint only when
that rule holds. Then the record is complete: the answer's tensors are made only by
dispatched operations, and each is seen with its shape. A reply is still only data: it is
parsed by :func:`from_wire` within the bounds of any reply, and a forged one gains nothing
that the rule has not already refused.

Every number here is computed from shapes only (this module ships to students as well, for
the visible footprint check).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

Shape = tuple[int, ...]
MAX_OPS = 100_000  # operations one record keeps; a longer call is ``truncated``
MAX_NAMES = 2_000  # distinct operation names in one record
MAX_NDIM = 16
# ATen's matrix products: the scores of a query block against a key block arrive as one of
# these, whatever the student wrote (``@``, ``torch.matmul``, ``einsum``, batched or not).
PRODUCTS = ("aten.mm.", "aten.bmm.", "aten.addmm.", "aten.baddbmm.", "aten.addbmm.")
SCALAR = "aten._local_scalar_dense."  # a tensor's value taken out as a Python number


@dataclass(frozen=True)
class TensorOp:
    """One dispatched operation: its name (``aten.mm.default``) and its tensors' shapes."""

    name: str
    inputs: tuple[Shape, ...]
    outputs: tuple[Shape, ...]

    @property
    def largest_output(self) -> int:
        """Elements of the largest tensor this operation produced (0 when none)."""
        return max((math.prod(shape) for shape in self.outputs), default=0)

    def scores(self, d: int) -> int:
        """Entries of ``q . k`` products this operation computes, for head dimension ``d``.

        A matrix product (:data:`PRODUCTS`) whose contracted dimension is ``d`` and whose
        result's matrix has no side ``d`` (``P @ V`` keeps ``d``): every entry of its result. An
        outer product by broadcasting (``q[:, None, :] * k[None, :, :]``, both inputs ending
        in ``d``, the result larger than either): its entries over ``d``. Else 0.
        """
        if not self.outputs:
            return 0
        out = self.outputs[0]
        if self.name.startswith(PRODUCTS) and len(self.inputs) >= 2:
            left = self.inputs[-2]
            if left and left[-1] == d and d not in out[-2:]:
                return math.prod(out)
        if self.name.startswith("aten.mul.") and len(self.inputs) == 2:
            a, b = self.inputs
            size = math.prod(out)
            if a and b and out and a[-1] == b[-1] == out[-1] == d:
                if size > max(math.prod(a), math.prod(b)):
                    return size // d
        return 0


@dataclass(frozen=True)
class Footprint:
    """The operations of one call, in order; ``truncated`` when the record hit its bound."""

    ops: tuple[TensorOp, ...]
    truncated: bool = False

    def largest(self) -> TensorOp | None:
        """The operation that produced the largest tensor (None for a call with no operation)."""
        return max(self.ops, key=lambda op: op.largest_output, default=None)

    def scores(self, d: int) -> int:
        """Entries of query-key products computed in all (:meth:`TensorOp.scores`)."""
        return sum(op.scores(d) for op in self.ops)

    def scalars(self) -> int:
        """Values taken out of tensors as Python numbers (``.item()``, ``float(t)``)."""
        return sum(op.name.startswith(SCALAR) for op in self.ops)

    def named(self, words: Iterable[str]) -> TensorOp | None:
        """The first operation whose name holds one of ``words`` (lower case), or None."""
        words = tuple(words)
        names = {op.name for op in self.ops}  # a record repeats a few names many times
        hits = {name for name in names if any(w in name.lower() for w in words)}
        return next((op for op in self.ops if op.name in hits), None) if hits else None


def blocks(length: int, size: int) -> list[tuple[int, int]]:
    """``(start, end)`` of the blocks of ``size`` over ``length`` positions (the last partial)."""
    return [(start, min(start + size, length)) for start in range(0, length, size)]


def causal_blocks(length: int, block_q: int, block_k: int) -> tuple[int, int, int]:
    """(pairs of a query block and a key block on or below the diagonal, pairs above it, the
    score entries of the pairs on or below it) for a causal forward over ``length`` positions,
    query ``i`` seeing keys ``j <= i``: a pair is needed when its first key is at most its last
    query."""
    below = above = entries = 0
    for q0, q1 in blocks(length, block_q):
        for k0, k1 in blocks(length, block_k):
            if k0 <= q1 - 1:
                below += 1
                entries += (q1 - q0) * (k1 - k0)
            else:
                above += 1
    return below, above, entries


def from_wire(value: object) -> Footprint:
    """The :class:`Footprint` of a reply's record; ValueError when it is not one.

    The agent sends ``{"names": [...], "codes": int64 array, "truncated": bool}``: per
    operation its name's index, its input and output counts, then each shape's ndim and dims,
    all in one flat array (a record of thousands of operations in one bounded array item).
    """
    if type(value) is not dict or set(value) != {"names", "codes", "truncated"}:
        raise ValueError("not a footprint record")
    names, codes, truncated = value["names"], value["codes"], value["truncated"]
    if type(names) is not list or len(names) > MAX_NAMES or type(truncated) is not bool:
        raise ValueError("malformed footprint record")
    if not all(type(n) is str and len(n) <= 200 for n in names):
        raise ValueError("malformed operation name")
    flat = _ints(codes)
    end, count, at = len(flat), len(names), 0
    ops: list[TensorOp] = []
    seen: dict[tuple[int, ...], TensorOp] = {}  # an operation met again (a loop's body): one object
    while at < end:
        if len(ops) >= MAX_OPS:
            raise ValueError("more operations than a record holds")
        if at + 3 > end:
            raise ValueError("a footprint record cut short")
        name, n_in, n_out = flat[at], flat[at + 1], flat[at + 2]
        if not (0 <= name < count and 0 <= n_in <= MAX_OPS and 0 <= n_out <= MAX_OPS):
            raise ValueError("malformed operation")
        start, at = at, at + 3
        shapes = []
        for _ in range(n_in + n_out):
            if at >= end:
                raise ValueError("a footprint record cut short")
            ndim = flat[at]
            if not 0 <= ndim <= MAX_NDIM:
                raise ValueError("malformed shape")
            if at + 1 + ndim > end:
                raise ValueError("a footprint record cut short")
            dims = tuple(flat[at + 1 : at + 1 + ndim])
            if dims and min(dims) < 0:
                raise ValueError("malformed shape")
            shapes.append(dims)
            at += 1 + ndim
        key = tuple(flat[start:at])
        op = seen.get(key)
        if op is None:  # TensorOp is frozen: the same operation may stand at several places
            op = seen[key] = TensorOp(names[name], tuple(shapes[:n_in]), tuple(shapes[n_in:]))
        ops.append(op)
    return Footprint(tuple(ops), truncated)


def _ints(codes: object) -> list[int]:
    tolist = getattr(codes, "tolist", None)  # a fresh tensor or array decoded by the wire
    if tolist is None or getattr(codes, "ndim", None) != 1:
        raise ValueError("malformed footprint codes")
    flat = tolist()
    if not set(map(type, flat)) <= {int}:  # exactly int (a bool is not), at C speed
        raise ValueError("malformed footprint codes")
    return flat
