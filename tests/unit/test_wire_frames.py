"""Arrays cross the judge's channel as a typed header and raw bytes (``wire.read_arrays``).

Each attack on the frame sits beside its honest control: a header that lies about its
shape or dtype, a dtype off the allowlist, a shape whose product overflows, a byte count
over the reply's bound, a truncated payload, a flood of tiny arrays, a pickled object sent
as bytes. The assertion is that the judge refuses it before it allocates or reads the
bytes the header claims (or reads only what the bytes say), and never unpickles anything.
"""

import io
import pickle
import time
import tracemalloc

import numpy as np
import pytest
import torch

from attncourse.judge import agent, checks, wire
from attncourse.judge.channel import LocalChannel
from attncourse.judge.remote import Session, StudentNamespace

MiB = 2**20
F4, F8, U1 = (agent.DTYPES.index(n) for n in ("float32", "float64", "uint8"))


def frame(code, shape, payload, nbytes=None):
    """One array's bytes as the agent writes them, with any header one likes."""
    nbytes = len(payload) if nbytes is None else nbytes
    dims = b"".join(agent.DIM.pack(n) for n in shape)
    return agent.ARRAY.pack(code, len(shape), nbytes) + dims + payload


def read(data, count=1, room=64 * MiB):
    """``wire.read_arrays`` over ``data``; (arrays or the refusal, peak bytes allocated)."""
    stream = io.BytesIO(data)

    def fill(view):
        if stream.readinto(view) < len(view):
            raise ConnectionResetError("closed")

    tracemalloc.start()
    try:
        try:
            out = wire.read_arrays(fill, count, room)
        except (wire.ReplyError, ConnectionResetError) as error:
            out = error
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_an_honest_frame_is_read_into_a_buffer_of_exactly_its_size():
    (got,), peak = read(frame(F4, (2, 3), np.arange(6, dtype="<f4").tobytes()))
    assert got.dtype == np.float32 and got.shape == (2, 3) and got.flags.writeable
    assert got.tolist() == [[0, 1, 2], [3, 4, 5]] and peak < MiB


@pytest.mark.parametrize(
    "data, refusal",
    [
        (frame(F4, (1000, 1000), b"\0" * 16), "do not make 16 bytes"),
        (frame(F8, (4,), b"\0" * 16), "do not make 16 bytes"),
        (frame(F4, (4,), b"\0" * 16, nbytes=4 * 10**9), "do not make"),
        (frame(len(agent.DTYPES), (2,), b"\0" * 16), "unknown dtype code"),
        (frame(255, (2,), b"\0" * 16), "unknown dtype code"),
        (agent.ARRAY.pack(F4, 255, 16), "255 dimensions"),
        (frame(F4, (2**63, 2**63), b""), "do not make 0 bytes"),
        (frame(F4, (2**64 - 1,) * 32, b"", nbytes=2**64 - 1), "do not make"),
        (frame(U1, (2**40,), b"", nbytes=2**40), "larger than allowed"),
    ],
    ids=[
        "shape_lies",
        "dtype_lies",
        "byte_count_lies",
        "dtype_off_the_allowlist",
        "dtype_code_255",
        "too_many_dimensions",
        "product_overflows_int64",
        "product_overflows_everything",
        "over_the_bound",
    ],
)
def test_a_lying_header_is_refused_before_its_bytes_are_allocated_or_read(data, refusal):
    started = time.perf_counter()
    out, peak = read(data)
    assert isinstance(out, wire.ReplyError) and refusal in str(out), out
    assert peak < MiB and time.perf_counter() - started < 1


def test_the_bound_counts_every_array_of_a_reply_and_its_headers():
    one = frame(U1, (1000,), b"\0" * 1000)
    room = 2 * len(one)
    assert len(read(one * 2, count=2, room=room)[0]) == 2  # the control: exactly the bound
    out, _ = read(one * 2, count=2, room=room - 1)
    assert isinstance(out, wire.ReplyError) and "larger than allowed" in str(out)


def test_a_truncated_payload_fails_and_an_over_long_one_leaves_the_rest_unread():
    data = frame(F4, (1000,), np.ones(1000, "<f4").tobytes())
    out, _ = read(data[:-1])
    assert isinstance(out, ConnectionResetError)  # the channel: the kernel stopped answering
    (got,), _ = read(data + b"more bytes")  # what follows is the next message's business
    assert got.shape == (1000,) and float(got.sum()) == 1000.0


def test_a_flood_of_tiny_arrays_is_bounded_by_count_and_cost():
    tiny = frame(U1, (1,), b"\x07")
    out, _ = read(tiny * 3, count=wire.MAX_ARRAYS + 1)
    assert isinstance(out, wire.ReplyError) and "arrays in one reply" in str(out)
    out, peak = read(tiny * wire.MAX_ARRAYS, count=wire.MAX_ARRAYS)
    assert len(out) == wire.MAX_ARRAYS and peak < 16 * MiB, f"{peak / MiB:.1f} MiB"


UNPICKLED = []


def _record_unpickling(*args):
    UNPICKLED.append(args)


class Payload:
    def __reduce__(self):
        return (_record_unpickling, ("ran",))


def test_a_pickled_object_travels_as_the_bytes_it_is_and_is_never_unpickled():
    blob = pickle.dumps(np.array([Payload(), 1], dtype=object))
    (got,), _ = read(frame(U1, (len(blob),), blob))
    assert got.dtype == np.uint8 and got.tobytes() == blob and UNPICKLED == []
    pickle.loads(blob)
    assert UNPICKLED == [("ran",)]  # the control: the payload does run when unpickled
    UNPICKLED.clear()


def test_a_bool_is_the_truth_of_its_byte():
    (got,), _ = read(frame(agent.DTYPES.index("bool"), (3,), b"\x00\x01\x07"))
    assert got.dtype == np.bool_ and got.tolist() == [False, True, True]
    assert got.view(np.uint8).tolist() == [0, 1, 1]
    (scalar,), _ = read(frame(agent.DTYPES.index("bool"), (), b"\x05"))
    assert type(scalar) is np.ndarray and scalar.shape == () and bool(scalar)  # not np.bool_


def back(value):
    """``value`` returned by the student's function, as the judge receives it."""
    return StudentNamespace(Session(LocalChannel({"f": lambda: value})))["f"]()


@pytest.mark.parametrize(
    "value",
    [
        torch.arange(12.0).reshape(3, 4).t(),
        torch.arange(24.0).reshape(2, 3, 4)[:, ::2, 1:],
        np.asfortranarray(np.arange(6.0).reshape(2, 3)),
        np.arange(10)[::3],
        torch.zeros(0, 3),
        np.zeros((2, 0, 4), dtype=np.float32),
        torch.tensor(2.5),
        np.array(7),
        torch.tensor(True),
        np.array(False),
    ],
    ids=[
        "transposed",
        "strided",
        "fortran",
        "step",
        "zero_rows",
        "zero_middle",
        "zero_dim_tensor",
        "zero_dim_array",
        "zero_dim_bool_tensor",
        "zero_dim_bool_array",
    ],
)
def test_non_contiguous_and_zero_size_arrays_arrive_with_their_shape_and_values(value):
    got = back(value)
    assert type(got) is type(value) and tuple(got.shape) == tuple(value.shape)
    assert np.array_equal(np.asarray(got), np.asarray(value))


def test_a_nan_laden_array_arrives_as_it_is_and_never_passes():
    ref = torch.arange(6.0).reshape(2, 3)
    laden = ref.clone()
    laden[0, 1] = float("nan")
    got = back(laden)
    assert torch.equal(torch.isnan(got), torch.isnan(laden))
    assert checks.check_close("Part 1", back(ref.clone()), ref, 1e-6) == 0.0  # the control
    with pytest.raises(checks.GradingError, match="NaN or inf"):
        checks.check_close("Part 1", got, ref, 1e-6)


def test_arrays_of_a_reply_are_each_one_value_once():
    frames = [np.zeros(2), np.ones(2)]
    item = {"t": "list", "items": [{"t": "array", "lib": "numpy", "frame": k} for k in (0, 1)]}
    got = wire.decode(item, None, frames=list(frames))
    assert [a.tolist() for a in got] == [[0, 0], [1, 1]]  # the control
    for bad in ([0, 0], [2], [-1], ["0"]):
        item = {"t": "list", "items": [{"t": "array", "lib": "numpy", "frame": k} for k in bad]}
        with pytest.raises(wire.ReplyError, match="malformed array"):
            wire.decode(item, None, frames=list(frames))
