"""The kernel side of the judge: the only grading code that ever runs in a student's kernel.

The judge sends this file's text to the kernel once (:func:`install`), which
listens on a Unix socket in the kernel's run directory; at each test cell one
execution serves the judge's requests over one connection, a length-prefixed
frame each way per request, until the judge sends the empty frame. It holds no
reference, no threshold and no seed: a request names an operation on the
student's objects (look a name up, get an attribute, call), carries its
arguments as plain data, and the reply carries plain data back — numbers,
strings, tuples, lists and arrays as ``.npy`` bytes — or an opaque handle for
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

import base64
import contextlib
import io
import json
import os
import socket
import struct

import numpy
import torch
from torch.utils._python_dispatch import TorchDispatchMode

HEADER = struct.Struct("!I")  # a frame's length, before its bytes
MAX_REQUEST_BYTES = 256 * 2**20  # a longer request frame ends the connection
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


def is_instance(obj, cls):
    """``obj`` is an instance of ``cls`` by its real type, asking no ``__instancecheck__``,
    ``__class__`` or ``mro()`` of the notebook's: every class on the way has the plain
    metaclass ``type`` (a metaclass of one's own could answer for itself)."""
    mro = _MRO(_TYPE(obj))
    if cls is _TYPE:
        return any(c is _TYPE for c in _MRO(_TYPE(obj)))
    return any(c is cls for c in mro) and all(_TYPE(c) is _TYPE for c in mro)


TENSORS = (torch.Tensor, torch.nn.Parameter)
FLOAT_LIKE = (torch.bfloat16, torch.float16)


def _array(value, lib):
    """An array as {"t": "array", ...} with its .npy bytes, or a refusal that says why."""
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
        if data.dtype.kind not in "biuf":
            return {"t": "refused", "cls": cls, "why": f"an array of dtype {dtype}"}
    buffer = io.BytesIO()
    numpy.save(buffer, numpy.ascontiguousarray(data), allow_pickle=False)
    return {
        "t": "array",
        "lib": lib,
        "cls": cls,
        "dtype": dtype,
        "device": device,
        "npy": base64.b64encode(buffer.getvalue()).decode("ascii"),
    }


class Recorder(TorchDispatchMode):
    """Names and shapes of the tensor operations dispatched while it is entered: per
    operation its name's index in ``names``, its input and output counts, then each shape's
    ndim and dims, in the flat list ``codes`` (read by ``footprint.from_wire`` in the judge)."""

    def __init__(self):
        super().__init__()
        self.names, self.index, self.codes = [], {}, []
        self.count, self.truncated = 0, False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.count >= MAX_OPS:
            self.truncated = True
            return out
        name = str(func)
        at = self.index.get(name)
        if at is None:
            if len(self.names) >= MAX_NAMES:
                self.truncated = True
                return out
            at = self.index[name] = len(self.names)
            self.names.append(name)
        inputs = _shapes(args) + (_shapes(kwargs.values()) if kwargs else [])
        outputs = _shapes((out,))
        codes = self.codes
        codes += (at, len(inputs), len(outputs))
        for shape in inputs + outputs:
            codes.append(len(shape))
            codes += shape
        self.count += 1
        return out

    def record(self):
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


class _Server:
    """Answers the judge's requests about the objects in ``namespace``."""

    def __init__(self, namespace):
        self.namespace = namespace
        self.handles = []
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
            return _array(value, "torch")
        if isinstance(value, numpy.ndarray):
            return _array(value, "numpy")
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

    def decode(self, item):
        t = item["t"]
        if t in ("none", "bool", "int", "str"):
            return item.get("v")
        if t == "float":
            return float(item["v"])
        if t in ("tuple", "list"):
            items = [self.decode(v) for v in item["items"]]
            return tuple(items) if t == "tuple" else items
        if t == "dict":
            return {k: self.decode(v) for k, v in item["items"].items()}
        if t == "handle":
            return self.handles[item["id"]]
        if t == "array":
            data = numpy.load(io.BytesIO(base64.b64decode(item["npy"])), allow_pickle=False)
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

    def run(self, request):
        op = request["op"]
        if op == "hello":
            return {"device": str(self.device)}
        if op == "get":
            name = request["name"]
            if name not in self.namespace:
                return {"missing": True}
            return {"value": self.encode(self.namespace[name])}
        if op == "getattr":
            obj = self.decode(request["obj"])
            try:
                value = getattr(obj, request["name"])
            except AttributeError:
                return {"missing": True}
            return {"value": self.handle(value) if request.get("ref") else self.encode(value)}
        if op == "isinstance":
            obj = self.decode(request["obj"])
            kinds = {"module": torch.nn.Module, "linear": torch.nn.Linear, "type": type}
            kind = request["kind"]
            other = kinds[kind] if type(kind) is str else self.decode(kind)
            return {"value": {"t": "bool", "v": is_instance(obj, other)}}
        if op == "call":
            func = self.decode(request["func"])
            args = [self.decode(a) for a in request["args"]]
            kwargs = {k: self.decode(v) for k, v in request.get("kwargs", {}).items()}
            out = io.StringIO()
            grad = torch.no_grad() if request.get("no_grad") else contextlib.nullcontext()
            recorder = Recorder() if request.get("footprint") else contextlib.nullcontext()
            with contextlib.redirect_stdout(out), grad, recorder:
                value = func(*args, **kwargs)
            reply = {"value": self.handle(value) if request.get("ref") else self.encode(value)}
            if request.get("footprint"):
                reply["footprint"] = self.encode(recorder.record())
            if request.get("stdout"):
                reply["stdout"] = out.getvalue()[:MAX_TEXT]
            return reply
        raise ValueError(f"unknown operation {op!r}")

    def serve(self, text):
        """Answer one JSON request; any exception of the student's code is reported as data."""
        request = json.loads(text)
        try:
            return json.dumps({**self.run(request), "seq": request.get("seq")})
        except BaseException as error:  # noqa: BLE001 - the student's error is the answer
            if isinstance(error, KeyboardInterrupt):
                raise
            reply = {
                "raised": {"type": _text(type(error), "__name__", 100), "message": _text(error)}
            }
        reply["seq"] = request.get("seq")
        return json.dumps(reply)


def _text(obj, attr=None, limit=2000):
    """``str(obj)`` (or of its ``attr``), even when the student's ``__str__`` raises."""
    try:
        return str(getattr(obj, attr) if attr else obj)[:limit]
    except Exception:  # noqa: BLE001 - an unprintable exception is still reported
        return "<unprintable>"


def make_server(namespace):
    """A request handler over ``namespace`` (the notebook's globals): text in, text out."""
    return _Server(namespace).serve


def read_exact(conn, size):
    """``size`` bytes from the socket ``conn``, or None when the peer closed it first."""
    data = bytearray(size)
    view, got = memoryview(data), 0
    while got < size:
        n = conn.recv_into(view[got:])
        if n == 0:
            return None
        got += n
    return bytes(data)


def write_frame(conn, data):
    """Send ``data`` as one frame: its length, then its bytes."""
    conn.sendall(HEADER.pack(len(data)))
    conn.sendall(data)


def read_frame(conn, limit):
    """The next frame's bytes; None at the peer's close, at an empty frame (the judge is done)
    or at a frame longer than ``limit``."""
    header = read_exact(conn, HEADER.size)
    if header is None:
        return None
    (size,) = HEADER.unpack(header)
    return read_exact(conn, size) if 0 < size <= limit else None


def serve_connection(conn, serve, limit=MAX_REQUEST_BYTES):
    """Answer the request frames of ``conn`` with ``serve`` until ``read_frame`` says stop."""
    while (request := read_frame(conn, limit)) is not None:
        write_frame(conn, serve(request.decode("utf-8")).encode("utf-8"))


def install(namespace, name, path):
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
                    if read_frame(conn, len(token)) != token.encode("ascii"):
                        continue
                except OSError:
                    continue
                with contextlib.suppress(OSError):  # the judge hung up: this check is over
                    serve_connection(conn, serve)
                return

    namespace[name] = answer
