# Generated from the course's judge by the release build: do not edit.
"""The kernel agent's footprint recorder, as the grader records."""

import numpy
import torch
from torch.utils._python_dispatch import TorchDispatchMode

MAX_OPS = 100000
MAX_NAMES = 2000


class Recorder(TorchDispatchMode):
    """Names and shapes of the tensor operations dispatched while it is entered: per
    operation its name's index in ``names``, its input and output counts, then each shape's
    ndim and dims, in the flat list ``codes`` (read by ``footprint.from_wire`` in the judge)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []
        self.index: dict[object, int] = {}  # operator -> its name's index
        self.codes: list[int] = []
        self.count, self.truncated = 0, False

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch (2.6 on) wraps a mode's __torch_dispatch__ in torch._dynamo.disable unless this
        # says False: the wrapper imports torch._dynamo on the first operation recorded (about
        # 1 s of a kernel's CPU) and adds two frames to every operation. No recorded call runs
        # under dynamo: the footprint rule refuses torch.compile, torch.jit and every other
        # path it could trace (recordable.py).
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.count >= MAX_OPS:
            self.truncated = True
            return out
        at = self.index.get(func)  # an operator is one object: its name is made once
        if at is None:
            if len(self.names) >= MAX_NAMES:
                self.truncated = True
                return out
            at = self.index[func] = len(self.names)
            self.names.append(str(func))
        inputs = _shapes(args) + (_shapes(kwargs.values()) if kwargs else [])
        outputs = _shapes((out,))
        codes = self.codes
        codes += (at, len(inputs), len(outputs))
        for shape in inputs + outputs:
            codes.append(len(shape))
            codes += shape
        self.count += 1
        return out

    def record(self) -> dict[str, object]:
        """The footprint as plain data for the reply."""
        return {
            "names": list(self.names),
            "codes": numpy.asarray(self.codes, dtype=numpy.int64),
            "truncated": self.truncated,
        }


def _shapes(values):
    """Shapes of the tensors among ``values`` and in the lists or tuples among them."""
    shapes = []
    for value in values:
        if isinstance(value, torch.Tensor):
            shapes.append(tuple(value.shape))
        elif type(value) in (list, tuple):
            shapes += [tuple(v.shape) for v in value if isinstance(v, torch.Tensor)]
    return shapes
