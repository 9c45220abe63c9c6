"""What a student's function formed while the judge called it: its tensor operations' shapes.

Shared type (agreed before the work on Assignment 5 started): the kernel's side of the judge
records every tensor operation the called function dispatches (name, the shapes of its tensor
inputs and outputs) and sends the list back as plain data; the judge's checks decide from it,
for example that no intermediate holds more than a block of scores, or how many blocks of
scores a causal forward computed. ``Remote.call(..., footprint=True)`` returns
``(value, Footprint)``. How the record is made and why it can be trusted is documented where
it is made (the kernel's agent) and in the README's trust model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Shape = tuple[int, ...]


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


@dataclass(frozen=True)
class Footprint:
    """The operations of one call, in order; ``truncated`` when the record hit its bound."""

    ops: tuple[TensorOp, ...]
    truncated: bool = False

    def largest(self) -> TensorOp | None:
        """The operation that produced the largest tensor (None for a call with no operation)."""
        return max(self.ops, key=lambda op: op.largest_output, default=None)
