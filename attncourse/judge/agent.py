"""The kernel side of the judge: the only grading code that ever runs in a student's kernel.

The judge sends this file's text to the kernel once (:func:`install`), which
listens on a Unix socket in the kernel's run directory; at each test cell one
execution serves the judge's requests over one connection, a length-prefixed
message each way per request, until the judge sends the empty message. A message is
a JSON text and the arrays it refers to, each as a typed header (its dtype's code in
:data:`DTYPES`, its shape, its byte count) and its raw bytes (:func:`write_message`).
It holds no reference, no threshold and no seed: a request names an operation on the
student's objects (look a name up, get an attribute, call), carries its
arguments as plain data, and the reply carries plain data back — numbers,
strings, tuples, lists and arrays — or an opaque handle for
any other object (a class, a model), which the judge may pass back in a later
request. Nothing in a reply is trusted: the student's code may rewrite this
agent, forge replies or lie about its objects, and the judge still believes
nothing but the data, which it checks against its own references.

A call may ask for its footprint: :class:`Recorder`, a ``TorchDispatchMode``
entered around that call only, keeps the name and the shapes of every tensor
operation it dispatches (names and shapes only, at most ``MAX_OPS``) and the reply
carries them as plain data (``attncourse.judge.footprint`` reads them). The record
is trusted only where the judge has proved from the source that the answer cannot
reach it or compute outside it (the footprint rule, see ``attncourse.judge.footprint``).

The module has no imports from ``attncourse`` so that it can run as text in
the kernel; :func:`make_server` is also used in-process by the fast tests.
"""

import contextlib
import io
import json
import os
import socket
import struct
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy
import torch
from torch.utils._python_dispatch import TorchDispatchMode

HEADER = struct.Struct("!II")  # a message: its JSON's length, then how many arrays follow it
ARRAY = struct.Struct("!BBQ")  # an array: its dtype's code, its dimensions, its byte count
DIM = struct.Struct("!Q")  # each dimension's length, after the array's header
# The dtypes an array may travel as (its code: the index here), little-endian, C order.
DTYPES = (
    "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "float16", "float32", "float64",
)  # fmt: skip
MAX_NDIM = 32
MAX_REQUEST_BYTES = 256 * 2**20  # a longer request message ends the connection
MAX_ITEMS = 10_000  # items in one returned tuple, list or dict
MAX_DEPTH = 8
MAX_TEXT = 100_000  # characters of a returned string or of captured output
DATA_TYPES = (bool, int, float, str, type(None))
MAX_OPS = 100_000  # operations one footprint keeps (then it is marked truncated)
MAX_NAMES = 2_000
# ``type`` itself and the real method resolution order of a class, reached through objects a
# notebook cannot replace (whatever ``builtins.type`` or ``__class__`` say now).
_TYPE = (0).__class__.__class__
_MRO = _TYPE.__dict__["__mro__"].__get__


def is_instance(obj: object, cls: type) -> bool:
    """``obj`` is an instance of ``cls`` by its real type, asking no ``__instancecheck__``,
    ``__class__`` or ``mro()`` of the notebook's: every class on the way has the plain
    metaclass ``type`` (a metaclass of one's own could answer for itself)."""
    mro = _MRO(_TYPE(obj))
    if cls is _TYPE:
        return any(c is _TYPE for c in _MRO(_TYPE(obj)))
    return any(c is cls for c in mro) and all(_TYPE(c) is _TYPE for c in mro)


TENSORS = (torch.Tensor, torch.nn.Parameter)
FLOAT_LIKE = (torch.bfloat16, torch.float16)


def _array(value, lib, frames):
    """An array as {"t": "array", "frame": k, ...}, its data put in ``frames`` as the k-th
    array of the message, or a refusal that says why."""
    cls = f"{type(value).__module__}.{type(value).__qualname__}"
    if lib == "torch":
        if type(value) not in TENSORS:
            return {"t": "refused", "cls": cls, "why": "a subclass of torch.Tensor"}
        with torch._C.DisableTorchFunctionSubclass():
            detached = value.detach()
            dtype, device = str(detached.dtype).removeprefix("torch."), str(detached.device)
            if detached.is_complex() or detached.is_quantized or detached.is_sparse:
                return {"t": "refused", "cls": cls, "why": f"a {dtype} tensor", "dtype": dtype}
            if detached.dtype in FLOAT_LIKE:
                detached = detached.float()
            data = detached.cpu().contiguous().numpy()
    else:
        if type(value) is not numpy.ndarray:
            return {"t": "refused", "cls": cls, "why": "a subclass of numpy.ndarray"}
        dtype, device, data = str(value.dtype), "cpu", value
        if data.dtype.kind not in "biuf" or data.dtype.name not in DTYPES:
            return {"t": "refused", "cls": cls, "why": f"an array of dtype {dtype}"}
    frames.append(data)
    return {
        "t": "array",
        "lib": lib,
        "cls": cls,
        "dtype": dtype,
        "device": device,
        "frame": len(frames) - 1,
    }


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


class Connection(Protocol):
    """What a message travels over: a socket, or the fast tests' bytes (``channel._Bytes``)."""

    def sendall(self, data: bytes | memoryview, /) -> None: ...

    def recv_into(self, view: memoryview, /) -> int: ...


Serve = Callable[[str, list[numpy.ndarray]], tuple[str, list[numpy.ndarray]]]


class _Server:
    """Answers the judge's requests about the objects in ``namespace``."""

    def __init__(self, namespace):
        self.namespace = namespace
        self.handles = []
        self.frames = []  # the arrays of the reply being built
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    # ------------------------------------------------------------- plain data out

    def encode(self, value, depth=0):
        if value is None:
            return {"t": "none"}
        if type(value) is float:
            return {"t": "float", "v": repr(value)}
        if type(value) in DATA_TYPES:
            return {
                "t": type(value).__name__,
                "v": value[:MAX_TEXT] if type(value) is str else value,
            }
        if isinstance(value, numpy.generic) and type(value).__module__ == "numpy":
            kind = value.dtype.kind
            if kind in "iu":
                return {"t": "int", "v": int(value), "cls": f"numpy.{type(value).__name__}"}
            if kind == "f":
                return {
                    "t": "float",
                    "v": repr(float(value)),
                    "cls": f"numpy.{type(value).__name__}",
                }
            if kind == "b":
                return {"t": "bool", "v": bool(value), "cls": "numpy.bool"}
        if type(value) is torch.Size:
            return {
                "t": "tuple",
                "items": [{"t": "int", "v": int(n)} for n in value],
                "cls": "torch.Size",
            }
        if isinstance(value, torch.Tensor):
            return _array(value, "torch", self.frames)
        if isinstance(value, numpy.ndarray):
            return _array(value, "numpy", self.frames)
        if type(value) in (tuple, list) and depth < MAX_DEPTH and len(value) <= MAX_ITEMS:
            return {"t": type(value).__name__, "items": [self.encode(v, depth + 1) for v in value]}
        if type(value) is dict and depth < MAX_DEPTH and len(value) <= MAX_ITEMS:
            if all(type(k) is str for k in value):
                return {
                    "t": "dict",
                    "items": {k: self.encode(v, depth + 1) for k, v in value.items()},
                }
        return self.handle(value)

    def handle(self, value):
        self.handles.append(value)
        kind = type(value)
        return {
            "t": "handle",
            "id": len(self.handles) - 1,
            "cls": f"{kind.__module__}.{kind.__qualname__}",
            "name": str(getattr(value, "__name__", ""))[:200]
            if isinstance(value, type) or callable(value)
            else "",
            "callable": callable(value),
        }

    # ---------------------------------------------------------------- plain data in

    def decode(self, item, arrays):
        t = item["t"]
        if t in ("none", "bool", "int", "str"):
            return item.get("v")
        if t == "float":
            return float(item["v"])
        if t in ("tuple", "list"):
            items = [self.decode(v, arrays) for v in item["items"]]
            return tuple(items) if t == "tuple" else items
        if t == "dict":
            return {k: self.decode(v, arrays) for k, v in item["items"].items()}
        if t == "handle":
            return self.handles[item["id"]]
        if t == "array":
            data = arrays[item["frame"]]
            if item["lib"] == "numpy":
                return data
            tensor = torch.from_numpy(data.copy())
            if item.get("dtype") == "bfloat16":
                tensor = tensor.to(torch.bfloat16)
            return tensor.to(self.device) if item.get("device") == "grading" else tensor
        if t == "device":
            return self.device
        raise ValueError(f"unknown item {t!r}")

    # ------------------------------------------------------------------ operations

    def run(self, request, arrays):
        op = request["op"]
        if op == "hello":
            return {"device": str(self.device)}
        if op == "get":
            name = request["name"]
            if name not in self.namespace:
                return {"missing": True}
            return {"value": self.encode(self.namespace[name])}
        if op == "getattr":
            obj = self.decode(request["obj"], arrays)
            try:
                value = getattr(obj, request["name"])
            except AttributeError:
                return {"missing": True}
            return {"value": self.handle(value) if request.get("ref") else self.encode(value)}
        if op == "isinstance":
            obj = self.decode(request["obj"], arrays)
            kinds = {"module": torch.nn.Module, "linear": torch.nn.Linear, "type": type}
            kind = request["kind"]
            other = kinds[kind] if type(kind) is str else self.decode(kind, arrays)
            return {"value": {"t": "bool", "v": is_instance(obj, other)}}
        if op == "call":
            func = self.decode(request["func"], arrays)
            args = [self.decode(a, arrays) for a in request["args"]]
            kwargs = {k: self.decode(v, arrays) for k, v in request.get("kwargs", {}).items()}
            out = io.StringIO()
            grad = torch.no_grad() if request.get("no_grad") else contextlib.nullcontext()
            recorder = Recorder() if request.get("footprint") else None
            with contextlib.redirect_stdout(out), grad, recorder or contextlib.nullcontext():
                value = func(*args, **kwargs)
            reply = {"value": self.handle(value) if request.get("ref") else self.encode(value)}
            if recorder is not None:
                reply["footprint"] = self.encode(recorder.record())
            if request.get("stdout"):
                reply["stdout"] = out.getvalue()[:MAX_TEXT]
            return reply
        raise ValueError(f"unknown operation {op!r}")

    def serve(self, text, arrays=()):
        """Answer one JSON request (and its arrays): the reply's text and arrays. Any
        exception of the student's code is reported as data."""
        request = json.loads(text)
        self.frames = []
        try:
            return json.dumps({**self.run(request, arrays), "seq": request.get("seq")}), self.frames
        except BaseException as error:  # noqa: BLE001 - the student's error is the answer
            if isinstance(error, KeyboardInterrupt):
                raise
            reply = {
                "raised": {"type": _text(type(error), "__name__", 100), "message": _text(error)}
            }
        reply["seq"] = request.get("seq")
        return json.dumps(reply), []


def _text(obj, attr=None, limit=2000):
    """``str(obj)`` (or of its ``attr``), even when the student's ``__str__`` raises."""
    try:
        return str(getattr(obj, attr) if attr else obj)[:limit]
    except Exception:  # noqa: BLE001 - an unprintable exception is still reported
        return "<unprintable>"


def make_server(namespace: dict) -> Serve:
    """A request handler over ``namespace`` (the notebook's globals): (text, arrays) in,
    (text, arrays) out."""
    return _Server(namespace).serve


def read_exact(conn: Connection, size: int) -> bytearray | None:
    """``size`` bytes from the socket ``conn``, or None when the peer closed it first."""
    data = bytearray(size)
    return data if _fill(conn, memoryview(data)) else None


def _fill(conn, view):
    got = 0
    while got < len(view):
        n = conn.recv_into(view[got:])
        if n == 0:
            return False
        got += n
    return True


def write_message(conn: Connection, data: bytes, arrays: Sequence[numpy.ndarray] = ()) -> None:
    """Send ``data`` (bytes) and ``arrays`` as one message: its header, its bytes, then each
    array's header, shape and raw bytes (C order, little-endian: as numpy keeps them here)."""
    conn.sendall(HEADER.pack(len(data), len(arrays)) + data)
    for array in arrays:
        array = numpy.asarray(array, dtype=array.dtype.newbyteorder("<"), order="C")
        code = DTYPES.index(array.dtype.name)
        dims = b"".join(DIM.pack(n) for n in array.shape)
        conn.sendall(ARRAY.pack(code, array.ndim, array.nbytes) + dims)
        if array.nbytes:
            conn.sendall(array.reshape(-1).data.cast("B"))


def read_message(conn: Connection, limit: int) -> tuple[bytes, list[numpy.ndarray]] | None:
    """The next message's (bytes, arrays); None at the peer's close, at an empty message
    (the judge is done) or at a message longer than ``limit`` in all."""
    header = read_exact(conn, HEADER.size)
    if header is None:
        return None
    size, count = HEADER.unpack(header)
    if not 0 < size <= limit:
        return None
    data = read_exact(conn, size)
    arrays, used = [], size
    for _ in range(count if data is not None else 0):
        head = read_exact(conn, ARRAY.size)
        if head is None:
            return None
        code, ndim, nbytes = ARRAY.unpack(head)
        dims = read_exact(conn, DIM.size * ndim) if ndim <= MAX_NDIM else None
        used += nbytes
        if dims is None or code >= len(DTYPES) or used > limit:
            return None
        shape = tuple(DIM.unpack_from(dims, DIM.size * i)[0] for i in range(ndim))
        dtype = numpy.dtype(DTYPES[code])
        if _product(shape) * dtype.itemsize != nbytes:
            return None
        buffer = numpy.empty(nbytes, numpy.uint8)
        if not _fill(conn, buffer.data):
            return None
        arrays.append(buffer.view(dtype).reshape(shape))
    return (bytes(data), arrays) if data is not None else None


def _product(shape):
    total = 1
    for n in shape:
        total *= n
    return total


def serve_connection(conn: Connection, serve: Serve, limit: int = MAX_REQUEST_BYTES) -> None:
    """Answer the request messages of ``conn`` with ``serve`` until ``read_message`` says stop."""
    while (request := read_message(conn, limit)) is not None:
        text, arrays = serve(request[0].decode("utf-8"), request[1])
        write_message(conn, text.encode("utf-8"), arrays)


def install(namespace: dict[str, object], name: str, path: str) -> None:
    """Kernel bootstrap: listen at ``path`` and bind ``name`` to a function that serves one
    connection of the judge (one check's requests, named by a token) until it is done."""
    serve = make_server(namespace)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)

    def answer(token):
        """Serve the connection whose first frame is ``token`` (older ones were left behind)."""
        while True:
            conn, _ = listener.accept()
            with conn:
                try:
                    if read_message(conn, len(token)) != (token.encode("ascii"), []):
                        continue
                except OSError:
                    continue
                with contextlib.suppress(OSError):  # the judge hung up: this check is over
                    serve_connection(conn, serve)
                return

    namespace[name] = answer
