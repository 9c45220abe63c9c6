"""What crosses between the judge and a kernel: plain data only, checked on arrival.

:func:`encode` turns the judge's arguments (numbers, strings, tuples, tensors,
handles the kernel gave earlier) into JSON for :mod:`attncourse.judge.agent`, the
arrays apart (raw bytes after the JSON, :func:`~attncourse.judge.agent.write_message`).
:func:`read_arrays` reads a reply's arrays: each typed header (a dtype of the allowlist,
a shape, a byte count) is checked against the reply's bound before anything is allocated
or read, then exactly that many bytes are read into a buffer of their own; nothing is
unpickled. :func:`decode` turns a reply back into plain judge-side values and refuses
anything else: nothing in a reply becomes an object with behaviour of the student's
choosing, and sizes are bounded.
"""

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from attncourse.judge.agent import ARRAY, DIM, DTYPES, MAX_NDIM

MAX_ARRAY_BYTES = 256 * 2**20
MAX_ARRAYS = 10_000  # arrays in one reply (a flood of tiny ones costs objects, not bytes)
MAX_ITEMS = 10_000
MAX_DEPTH = 8
MAX_TEXT = 100_000
# A reply's skeleton, counted on its text before it is parsed: every ``{`` or ``[`` may become
# a container and every ``,`` an item, so these bound what ``json.loads`` builds (arrays travel
# as bytes after the text). The largest plain reply the agent sends, a sequence of
# MAX_ITEMS arrays with their five keys each, has 10,001 containers and about 60,000 commas.
MAX_CONTAINERS = 30_000
MAX_COMMAS = 200_000


class ReplyError(Exception):
    """A reply that is not well-formed plain data (the kernel, or the student's code, sent junk)."""


@dataclass(frozen=True)
class Refused:
    """A value the kernel returned that is not plain data (a tensor subclass, a complex array...)."""

    cls: str
    why: str

    def describe(self) -> str:
        return f"{self.cls} ({self.why})"


@dataclass(frozen=True)
class Grading:
    """An argument to put on the kernel's grading device (CUDA when it has one, else the CPU)."""

    tensor: torch.Tensor


@dataclass(frozen=True)
class DeviceMarker:
    """Stands for the kernel's grading device as an argument (``model.to(ns.device)``)."""


def encode(value: Any, handle_id: Callable | None = None, frames: list | None = None) -> dict:
    """JSON-able form of a judge-side argument. ``handle_id(value)`` gives a Remote's id; an
    array goes into ``frames``, the arrays sent after the request's text."""
    frames = [] if frames is None else frames
    if value is None:
        return {"t": "none"}
    if type(value) is bool:
        return {"t": "bool", "v": value}
    if type(value) is int:
        return {"t": "int", "v": value}
    if type(value) is float:
        return {"t": "float", "v": repr(value)}
    if type(value) is str:
        return {"t": "str", "v": value}
    if isinstance(value, DeviceMarker):
        return {"t": "device"}
    if isinstance(value, Grading):
        return {**encode(value.tensor, handle_id, frames), "device": "grading"}
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu()
        dtype = str(tensor.dtype).removeprefix("torch.")
        if tensor.dtype == torch.bfloat16:  # no numpy dtype: sent as float32, restored there
            tensor = tensor.float()
        return {
            "t": "array",
            "lib": "torch",
            "dtype": dtype,
            "frame": _frame(tensor.numpy(), frames),
        }
    if isinstance(value, np.ndarray):
        return {"t": "array", "lib": "numpy", "frame": _frame(value, frames)}
    if type(value) in (tuple, list):
        return {"t": type(value).__name__, "items": [encode(v, handle_id, frames) for v in value]}
    if type(value) is dict:
        return {
            "t": "dict",
            "items": {str(k): encode(v, handle_id, frames) for k, v in value.items()},
        }
    if handle_id is not None:
        found = handle_id(value)
        if found is not None:
            return {"t": "handle", "id": found}
    raise TypeError(f"cannot send a {type(value).__name__} to the kernel")


def _frame(array, frames):
    if array.dtype.name not in DTYPES:
        raise TypeError(f"cannot send an array of dtype {array.dtype} to the kernel")
    frames.append(array)
    return len(frames) - 1


def read_arrays(fill: Callable[[memoryview], None], count: int, room: int) -> list[np.ndarray]:
    """The ``count`` arrays that follow a reply's text, each read by ``fill(view)`` (which
    fills all of ``view`` from the kernel, or raises), within ``room`` bytes in all. Each
    header is checked (its dtype on the allowlist, its shape's product times the item size
    equal to its byte count, the bytes within ``room``) before its bytes are allocated or
    read: :class:`ReplyError` otherwise."""
    _need(0 <= count <= MAX_ARRAYS, f"{count} arrays in one reply")
    arrays = []
    for _ in range(count):
        room -= ARRAY.size
        _need(room >= 0, "the kernel's answer is larger than allowed")
        head = bytearray(ARRAY.size)
        fill(memoryview(head))
        code, ndim, nbytes = ARRAY.unpack(head)
        _need(code < len(DTYPES), f"an array of unknown dtype code {code}")
        _need(ndim <= MAX_NDIM, f"an array of {ndim} dimensions")
        room -= DIM.size * ndim
        _need(room >= 0, "the kernel's answer is larger than allowed")
        dims = bytearray(DIM.size * ndim)
        fill(memoryview(dims))
        shape = tuple(DIM.unpack_from(dims, DIM.size * i)[0] for i in range(ndim))
        dtype = np.dtype(DTYPES[code])
        _need(
            math.prod(shape) * dtype.itemsize == nbytes,
            f"an array whose shape {shape[:8]} and dtype {dtype} do not make {nbytes} bytes",
        )
        room -= nbytes
        _need(room >= 0 and nbytes <= MAX_ARRAY_BYTES, "the kernel's answer is larger than allowed")
        buffer = np.empty(nbytes, np.uint8)
        fill(buffer.data)
        array = buffer.view(dtype).reshape(shape)
        # a bool is its byte's truth (np.asarray: a 0-d comparison is a scalar, not an array)
        arrays.append(np.asarray(array != 0) if dtype == np.bool_ else array)
    return arrays


def parse_reply(text: str) -> Any:
    """A reply's JSON, refused (:class:`ReplyError`) before it is parsed when its skeleton is
    larger than any plain reply: a reply of many tiny items would cost the grader hundreds of
    bytes of objects for each byte of text."""
    _need(type(text) is str, "malformed reply")
    containers = text.count("{") + text.count("[")
    _need(containers <= MAX_CONTAINERS, f"{containers} containers in one reply")
    commas = text.count(",")
    _need(commas <= MAX_COMMAS, f"{commas} items in one reply")
    _need(_depth(text) <= 2 * MAX_DEPTH + 6, "nested too deeply")  # a level: { and [
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError):
        raise ReplyError("not JSON") from None


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_CHUNK = 2**20  # characters of the reply scanned at a time (bounds the scan's memory: ~10 MiB)


def _depth(text):
    """Greatest nesting of brackets in ``text`` (brackets inside strings counted too: that only
    refuses junk, as no reply of the agent nests strings of brackets). The brackets are picked
    out by ``bytes.translate`` a chunk at a time (a 130 MB array reply: 0.2 s, where a regular
    expression's scan took 1.0 s); in UTF-8 no byte of another character is an ASCII one."""
    depth = deepest = 0
    for start in range(0, len(text), _CHUNK):
        chunk = text[start : start + _CHUNK].encode("utf-8", "surrogatepass")
        brackets = np.frombuffer(chunk.translate(None, _NOT_BRACKETS), np.uint8)
        if brackets.size:
            steps = ((brackets | 0x20) == ord("{")).astype(np.int8) * 2 - 1  # { [: +1, } ]: -1
            levels = np.cumsum(steps, dtype=np.int64) + depth
            deepest = max(deepest, int(levels.max()))
            depth = int(levels[-1])
    return deepest


def _need(cond, what):
    if not cond:
        raise ReplyError(what)


def _array(item, frames):
    k = item.get("frame")
    _need(type(k) is int and 0 <= k < len(frames) and frames[k] is not None, "malformed array")
    data, frames[k] = frames[k], None  # each array of a reply is one value, once
    if item.get("lib") == "numpy":
        return data
    _need(item.get("lib") == "torch", "array of unknown kind")
    tensor = torch.from_numpy(data)
    dtype = item.get("dtype")
    if dtype in ("bfloat16", "float16"):
        tensor = tensor.to(getattr(torch, dtype))
    return tensor


def decode(item: Any, make_remote: Callable, depth: int = 0, frames: list | None = None) -> Any:
    """Plain judge-side value of a reply item; ``make_remote(item)`` builds a handle's proxy,
    ``frames`` are the reply's arrays."""
    frames = [] if frames is None else frames
    _need(type(item) is dict and depth <= MAX_DEPTH, "malformed reply")
    t = item.get("t")
    v = item.get("v")
    if t == "none":
        return None
    if t == "bool":
        _need(type(v) is bool, "malformed bool")
        return v
    if t == "int":
        _need(type(v) is int and abs(v) < 2**63, "malformed int")
        return v
    if t == "float":
        _need(type(v) in (str, int, float), "malformed float")
        try:
            return float(v)
        except (ValueError, OverflowError):
            raise ReplyError("malformed float") from None
    if t == "str":
        _need(type(v) is str and len(v) <= MAX_TEXT, "malformed string")
        return v
    if t in ("tuple", "list"):
        items = item.get("items")
        _need(type(items) is list and len(items) <= MAX_ITEMS, "malformed sequence")
        out = [decode(x, make_remote, depth + 1, frames) for x in items]
        return tuple(out) if t == "tuple" else out
    if t == "dict":
        items = item.get("items")
        _need(type(items) is dict and len(items) <= MAX_ITEMS, "malformed dict")
        return {str(k): decode(x, make_remote, depth + 1, frames) for k, x in items.items()}
    if t == "array":
        return _array(item, frames)
    if t == "refused":
        return Refused(str(item.get("cls"))[:200], str(item.get("why"))[:200])
    if t == "handle":
        _need(type(item.get("id")) is int, "malformed handle")
        return make_remote(item)
    raise ReplyError(f"unknown reply item {str(t)[:40]!r}")
