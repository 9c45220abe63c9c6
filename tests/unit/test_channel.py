"""The judge's channel to a kernel: one serving execution per check, a frame each way per request.

A :class:`FakeKernel` runs the agent's install and its serving execution in this
process (the check runs in the channel's thread, as in grading), so every test is
a real Unix socket and the real agent, without a kernel. Each hostile behaviour
(an answer over the bound, junk or forged frames written beside the agent, a call
that hangs, a kernel that dies mid-request, a kernel that goes on serving) sits
beside its honest control.
"""

import contextlib
import json
import os
import socket
import subprocess
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from jupyter_client.manager import AsyncKernelManager
from sandboxkit import kernel_execute, kernel_judge, sandboxed_kernel, started

from attncourse.judge import agent, channel
from attncourse.judge.channel import AGENT_NAME, PipeChannel
from attncourse.judge.remote import KernelFault, Session, StudentNamespace


class FakeKernel:
    """``execute(code)`` and the serving execution of a kernel whose globals are ``names``."""

    def __init__(self, **names):
        self.ns = dict(names)
        self.installs = 0

    def execute(self, code):
        self.installs += 1
        exec(code, {"get_ipython": lambda: SimpleNamespace(user_ns=self.ns)})
        return []

    def serve(self, code):
        assert code.startswith(f"{AGENT_NAME}('")
        exec(code, self.ns)


def judged(tmp_path, kernel, work, serve=None, timeout=5.0, max_reply_bytes=2**20, grace=5.0):
    """``work(ns)`` through a PipeChannel to ``kernel``; (its result, the stops asked for)."""
    stops = []

    def stop(served):
        stops.append(served)
        kernel.ns.get("interrupt", threading.Event()).set()

    pipe = PipeChannel(
        kernel.execute,
        tmp_path / "judge.sock",
        max_reply_bytes,
        timeout=lambda: timeout,
        stop=stop,
        grace=grace,
    )
    ns = StudentNamespace(Session(pipe))
    return pipe.judge(lambda: work(ns), serve or kernel.serve), stops, pipe, ns


def test_requests_of_a_check_share_one_serving_execution(tmp_path):
    kernel = FakeKernel(x=torch.arange(3), f=lambda a, b=1: a * 10 + b)
    served = []
    kernel_serve = kernel.serve

    def serve(code):
        served.append(code)
        kernel_serve(code)

    got, stops, pipe, ns = judged(
        tmp_path, kernel, lambda ns: [ns["f"](k) for k in range(50)] + [ns["x"]], serve
    )
    assert got[:50] == [k * 10 + 1 for k in range(50)] and torch.equal(got[50], torch.arange(3))
    assert served == [f"{AGENT_NAME}('0')"] and kernel.installs == 1 and not stops
    # The next check opens a new connection to the same agent; a new kernel gets it again.
    assert pipe.judge(lambda: ns["f"](2, b=3), kernel.serve) == 23 and kernel.installs == 1
    pipe.reset()
    assert pipe.judge(lambda: ns["f"](4), kernel.serve) == 41 and kernel.installs == 2


def test_an_answer_larger_than_the_bound_fails_the_check(tmp_path):
    kernel = FakeKernel(small="x" * 100, large="x" * 3000)
    got, _, _, _ = judged(tmp_path, kernel, lambda ns: ns["small"], max_reply_bytes=1000)
    assert got == "x" * 100  # the control

    def work(ns):
        with pytest.raises(KernelFault, match="larger than allowed"):
            ns["large"]
        with pytest.raises(KernelFault, match="larger than allowed"):
            ns["small"]  # the connection is not read again in this check
        return "done"

    assert judged(tmp_path, kernel, work, max_reply_bytes=1000)[0] == "done"


def test_a_request_larger_than_the_bound_is_never_sent(tmp_path, monkeypatch):
    monkeypatch.setattr(channel, "MAX_REQUEST_BYTES", 2000)
    kernel = FakeKernel(f=len)
    got, _, _, _ = judged(tmp_path, kernel, lambda ns: ns["f"]("x" * 100))
    assert got == 100  # the control

    def work(ns):
        with pytest.raises(KernelFault, match="more than the channel carries"):
            ns["f"]("x" * 5000)
        return ns["f"]("x" * 100)  # nothing was sent: the channel still answers

    assert judged(tmp_path, kernel, work)[0] == 100


def test_the_agent_ends_a_connection_on_a_request_frame_over_its_bound():
    def serve(text, arrays):
        return text.upper(), arrays

    for size, answered in ((10, True), (11, False)):
        judge, kernel = socket.socketpair()
        with judge:
            with kernel:
                agent.write_message(judge, b"a" * size)
                judge.shutdown(socket.SHUT_WR)
                agent.serve_connection(kernel, serve, limit=10)
            try:
                reply = agent.read_exact(judge, agent.HEADER.size)
            except ConnectionResetError:  # closed with the request unread
                reply = None
            assert (reply is not None) == answered, size


def frame(data):
    return agent.HEADER.pack(len(data), 0) + data


def _agent_with(kernel, write):
    """A serving execution in which ``write(conn)`` (a student's thread) writes into the
    agent's connection before each answer."""

    def serve(code):
        real_accept = socket.socket.accept

        def accept(self):
            conn, addr = real_accept(self)
            write(conn)
            return conn, addr

        socket.socket.accept = accept
        try:
            kernel.serve(code)
        finally:
            socket.socket.accept = real_accept

    return serve


@pytest.mark.parametrize(
    "junk, message",
    [
        (frame(b"junk!"), "not readable"),
        (frame(b"\xff\xfe"), "not UTF-8"),
        (frame(b'{"seq": 99, "value": {"t": "int", "v": 1}}'), "different"),
        (agent.HEADER.pack(2**31, 0), "larger than allowed"),
    ],
    ids=["junk", "not_utf8", "forged_seq", "huge_header"],
)
def test_frames_written_beside_the_agent_cost_only_that_check(tmp_path, junk, message):
    kernel = FakeKernel(f=lambda: 7)
    assert judged(tmp_path, kernel, lambda ns: ns["f"]())[0] == 7  # the control

    def work(ns):
        with pytest.raises(KernelFault, match=message):
            ns["f"]()
        return "failed"

    serve = _agent_with(kernel, lambda conn: conn.sendall(junk))
    assert judged(tmp_path, kernel, work, serve)[0] == "failed"


def test_a_hung_call_times_out_and_the_kernel_is_stopped(tmp_path):
    interrupt = threading.Event()

    def hangs():
        interrupt.wait(30)  # until "interrupted" by the judge's stop
        raise KeyboardInterrupt

    kernel = FakeKernel(interrupt=interrupt, quick=lambda: 1, hangs=hangs)
    got, stops, _, _ = judged(tmp_path, kernel, lambda ns: ns["quick"](), timeout=0.5)
    assert got == 1 and not stops  # the control

    def work(ns):
        with pytest.raises(KernelFault, match="did not finish within the time limit"):
            ns["hangs"]()
        with pytest.raises(KernelFault, match="time limit"):
            ns["quick"]()
        return "failed"

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):  # the serving execution was interrupted
        judged(tmp_path, kernel, work, timeout=0.5)
    assert time.monotonic() - started < 10


def test_a_kernel_that_dies_mid_request_fails_the_pending_call(tmp_path):
    kernel = FakeKernel(f=lambda: 7)

    class Died(Exception):
        pass

    def dies(code):
        conn, _ = _listener(kernel).accept()
        with conn:
            agent.read_exact(conn, agent.HEADER.size)  # the request arrives, then the kernel dies
        raise Died

    def work(ns):
        with pytest.raises(KernelFault, match="stopped answering"):
            ns["f"]()
        return "failed"

    assert judged(tmp_path, kernel, lambda ns: ns["f"]())[0] == 7  # the control (installs)
    with pytest.raises(Died):
        judged(tmp_path, kernel, work, dies)


def _listener(kernel):
    """The agent's listening socket, from the closure of the function it installed."""
    answer = kernel.ns[AGENT_NAME]
    cells = dict(zip(answer.__code__.co_freevars, answer.__closure__, strict=True))
    return cells["listener"].cell_contents


def test_a_kernel_that_goes_on_serving_after_the_check_is_stopped(tmp_path):
    interrupt = threading.Event()
    kernel = FakeKernel(interrupt=interrupt, f=lambda: 7)

    def hijacked(code):  # the notebook replaced the agent with a loop of its own
        interrupt.wait(30)

    got, stops, _, _ = judged(tmp_path, kernel, lambda ns: "no request", hijacked, grace=0.3)
    assert got == "no request" and len(stops) == 1
    got, stops, _, _ = judged(tmp_path, kernel, lambda ns: ns["f"](), grace=0.3)
    assert got == 7 and not stops  # the control


# ------------------------------------------------------- arrays as typed header and bytes


def array_reply(seq, header, payload, after=b""):
    """A reply to request ``seq`` whose value is one array, with any header one likes."""
    text = json.dumps({"seq": seq, "value": {"t": "array", "lib": "torch", "frame": 0}}).encode()
    return agent.HEADER.pack(len(text), 1) + text + header + payload + after


def honest_header(array):
    dims = b"".join(agent.DIM.pack(n) for n in array.shape)
    return agent.ARRAY.pack(agent.DTYPES.index(array.dtype.name), array.ndim, array.nbytes) + dims


def forged_agent(kernel, replies):
    """A serving execution that answers the check's requests with ``replies[i](seq)`` bytes
    (the notebook replaced the agent), then hangs up."""

    def serve(code):
        token = code.split("'")[1].encode()
        while True:
            conn, _ = _listener(kernel).accept()
            if agent.read_message(conn, len(token)) == (token, []):
                break
        with conn:
            for reply in replies:
                request = agent.read_message(conn, agent.MAX_REQUEST_BYTES)
                if request is None:
                    return
                with contextlib.suppress(OSError):  # the judge hung up
                    conn.sendall(reply(json.loads(request[0])["seq"]))

    return serve


ONES = np.ones(1000, dtype="<f4")


@pytest.mark.parametrize(
    "reply, message",
    [
        (lambda seq: array_reply(seq, honest_header(ONES), ONES.tobytes()[:100]), "stopped"),
        (
            lambda seq: array_reply(seq, agent.ARRAY.pack(10, 2, 4000) + b"\0" * 16, b""),
            "do not make 4000 bytes",
        ),
        (lambda seq: array_reply(seq, agent.ARRAY.pack(99, 1, 8) + b"\0" * 8, b""), "dtype code"),
        (
            lambda seq: array_reply(
                seq, agent.ARRAY.pack(2, 1, 2**33) + agent.DIM.pack(2**33), b""
            ),
            "larger than allowed",
        ),
    ],
    ids=["truncated_payload", "shape_lies", "dtype_off_the_allowlist", "over_the_bound"],
)
def test_a_forged_array_frame_fails_only_its_check(tmp_path, reply, message):
    kernel = FakeKernel(x=torch.ones(1000))
    honest = forged_agent(
        kernel, [lambda seq: array_reply(seq, honest_header(ONES), ONES.tobytes())]
    )
    got, _, _, _ = judged(tmp_path, kernel, lambda ns: ns["x"].sum().item(), honest)
    assert got == 1000.0  # the control: the same reply, honest

    def work(ns):
        with pytest.raises(KernelFault, match=message):
            ns["x"]
        return "failed"

    assert judged(tmp_path, kernel, work, forged_agent(kernel, [reply]))[0] == "failed"
    assert judged(tmp_path, kernel, lambda ns: ns["x"].sum().item())[0] == 1000.0


def test_an_over_long_payload_is_not_read_as_its_array_and_costs_the_rest_of_the_check(tmp_path):
    kernel = FakeKernel(x=torch.ones(1000))
    after = b"\xff" * 64  # read as the next reply's header: larger than allowed

    def reply(seq):
        return array_reply(seq, honest_header(ONES), ONES.tobytes(), after)

    def work(ns):
        first = ns["x"]
        with pytest.raises(KernelFault, match="larger than allowed"):
            ns["x"]
        return first

    got = judged(tmp_path, kernel, work, forged_agent(kernel, [reply, reply]))[0]
    assert got.shape == (1000,) and got.sum().item() == 1000.0  # exactly its own bytes


def test_a_frame_written_after_its_check_ended_reaches_no_later_check(tmp_path):
    kernel = FakeKernel(f=lambda: torch.arange(4.0))
    kept = []

    def keep(conn):  # a student's thread keeps a copy of the agent's connection
        kept.append(socket.socket(fileno=os.dup(conn.fileno())))

    judged(tmp_path, kernel, lambda ns: ns["f"](), _agent_with(kernel, keep))
    late = array_reply(1, honest_header(np.full(4, 9.0, "<f4")), np.full(4, 9.0, "<f4").tobytes())
    with contextlib.suppress(OSError):  # the judge hung up: nobody reads it
        kept[0].sendall(late)
    kept[0].close()
    got, _, _, _ = judged(tmp_path, kernel, lambda ns: [ns["f"]() for _ in range(3)])
    assert [g.tolist() for g in got] == [[0.0, 1.0, 2.0, 3.0]] * 3


def test_an_agent_that_was_never_installed_fails_every_request(tmp_path):
    kernel = FakeKernel(f=lambda: 7)
    kernel.execute = lambda code: []  # the notebook turned every later execution into nothing

    def work(ns):
        for _ in range(2):
            with pytest.raises(KernelFault, match="no answer from the kernel"):
                ns["f"]()
        return "failed"

    assert judged(tmp_path, kernel, work, serve=lambda code: pytest.fail("served"))[0] == "failed"


# ================================================================ real kernels

KERNEL_CELL = """
import time
def f(a):
    return a * 2
def hangs():
    time.sleep(60)
"""


@contextlib.contextmanager
def plain_kernel(tmp_path):
    """An unsandboxed kernel (as a course without the sandbox runs it): (run dir, km, kc)."""
    km = AsyncKernelManager()
    with started(km, tmp_path, stderr=subprocess.DEVNULL) as kc:  # its TCP warning
        yield tmp_path, km, kc


@contextlib.contextmanager
def sandboxed(tmp_path):
    with sandboxed_kernel(fork_server=True) as (root, km, kc):
        yield root / "run", km, kc


@pytest.mark.kernel
@pytest.mark.parametrize("kernel", [sandboxed, plain_kernel], ids=["sandboxed", "plain"])
def test_a_real_kernel_serves_checks_and_a_hung_call_is_interrupted(kernel, tmp_path):
    with kernel(tmp_path) as (run, km, kc):
        kernel_execute(kc)(KERNEL_CELL)
        judged = kernel_judge(run, km, kc, timeout=3)
        assert judged(lambda ns: [ns["f"](k) for k in range(100)]) == [2 * k for k in range(100)]

        def hung(ns):
            with pytest.raises(KernelFault, match="time limit"):
                ns["hangs"]()
            return "failed"

        assert judged(hung) == "failed"
        assert judged(lambda ns: ns["f"](21)) == 42  # the kernel lives on and serves the next
