"""Ways for the judge to reach the kernel side (:mod:`attncourse.judge.agent`).

:class:`PipeChannel` reaches the agent in a sandboxed kernel over a Unix socket: the
agent is installed once per kernel (one execution) and listens in the kernel's run
directory; each check opens one connection, which one execution in the kernel serves
while the check runs in a thread of the grader (:meth:`PipeChannel.judge`), so a
request costs a round trip of two messages, not an execution. :class:`LocalChannel`
serves a namespace in this process, for the fast case tables. Both carry a request's and
a reply's JSON text and arrays through the same bytes (:func:`agent.write_message`, read
back by :func:`wire.read_arrays`), so the fast tests exercise the same encoding as real
grading.
"""

import contextlib
import itertools
import socket
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from attncourse.judge import wire
from attncourse.judge.agent import (
    HEADER,
    MAX_REQUEST_BYTES,
    make_server,
    read_message,
    write_message,
)
from attncourse.judge.remote import KernelFault

AGENT_SOURCE = (Path(__file__).parent / "agent.py").read_text()
AGENT_NAME = "__attncourse_judge__"
LOST = "no answer from the kernel (the notebook's code interfered with the grader's call)"
STOPPED = (
    "the kernel stopped answering while your code was being called (it died, or the "
    "notebook's code closed the grader's channel)"
)
TIMED_OUT = "the call did not finish within the time limit"
T = TypeVar("T")


class LocalChannel:
    """The agent over a namespace of this process (tests; never for grading a student)."""

    def __init__(self, namespace: dict, max_reply_bytes: int = 256 * 2**20) -> None:
        self._serve = make_server(namespace)
        self.max_reply_bytes = max_reply_bytes  # a test's bound (grading: ResilientExecute's)

    def send(self, text: str, arrays: Sequence[np.ndarray] = ()) -> tuple[str, list[np.ndarray]]:
        """The reply (its text and arrays) to a request, both carried as bytes."""
        kernel = _Bytes()
        write_message(kernel, text.encode("utf-8"), arrays)
        request = read_message(kernel, MAX_REQUEST_BYTES)
        if request is None:  # as PipeChannel.send: over the limit, not a TypeError
            raise KernelFault("a request of more bytes than the channel carries")
        text, arrays = self._serve(request[0].decode("utf-8"), request[1])
        judge = _Bytes()
        write_message(judge, text.encode("utf-8"), arrays)
        return _read_reply(judge.recv_exactly, self.max_reply_bytes)


class _Bytes:
    """A connection that keeps what is sent, to be received in turn."""

    def __init__(self) -> None:
        self._data, self._at = bytearray(), 0

    def sendall(self, data: bytes | memoryview, /) -> None:
        self._data += data

    def recv_into(self, view: memoryview, /) -> int:
        n = min(len(view), len(self._data) - self._at)
        view[:n] = self._data[self._at : self._at + n]
        self._at += n
        return n

    def recv_exactly(self, view: memoryview) -> None:
        if self.recv_into(view) < len(view):
            raise ConnectionResetError("closed")


def _read_reply(fill: Callable[[memoryview], None], limit: int) -> tuple[str, list[np.ndarray]]:
    """A reply's (text, arrays), read by ``fill(view)`` within ``limit`` bytes in all."""
    header = bytearray(HEADER.size)
    fill(memoryview(header))
    size, count = HEADER.unpack(header)
    if size > limit:
        raise wire.ReplyError(f"the kernel's answer ({size} bytes) is larger than allowed")
    data = bytearray(size)
    fill(memoryview(data))
    arrays = wire.read_arrays(fill, count, limit - size)
    try:
        return data.decode("utf-8"), arrays
    except UnicodeDecodeError:
        raise wire.ReplyError("not UTF-8") from None


class PipeChannel:
    """Requests to the agent in a kernel over the Unix socket at ``path``.

    ``execute(code)`` runs code in the kernel and waits for it (the agent's install,
    again after ``reset`` when the kernel was replaced). ``timeout()`` gives the seconds
    one call may take; when a call runs over, ``stop(served)`` is called (in the check's
    thread) to interrupt the kernel, and to kill it if ``served`` (an Event, set when the
    serving execution ended) is not set soon. A reply is read only up to
    ``max_reply_bytes`` (its text and arrays together): a longer one, a malformed one, a
    closed connection or a late one is a :class:`KernelFault`, and so is every later
    request of that check.
    """

    def __init__(
        self,
        execute: Callable[[str], object],
        path: str | Path,
        max_reply_bytes: int,
        timeout: Callable[[], float],
        stop: Callable[[threading.Event], None],
        grace: float,
    ) -> None:
        self._execute = execute
        self.path = str(path)
        self.max_reply_bytes = max_reply_bytes
        self._timeout = timeout
        self._stop = stop
        self._grace = grace
        self._installed = False
        self._tokens = itertools.count()
        self._conn: socket.socket | None = None
        self._why = LOST
        self._served = threading.Event()

    def reset(self) -> None:
        """The kernel was replaced: install the agent again before the next check."""
        self._installed = False

    def fail(self, why: str) -> None:
        """Every request of this check fails with ``why`` (the kernel cannot be reached)."""
        self._drop(why)

    def open(self) -> str | None:
        """Connect for one check; the code whose execution serves it, or None (then every
        request fails). Installs the agent first in a kernel that lacks it."""
        if not self._installed:
            self._execute(
                f"(lambda d: (exec(compile({AGENT_SOURCE!r}, '<judge agent>', 'exec'), d), "
                f"d['install'](get_ipython().user_ns, {AGENT_NAME!r}, {self.path!r})))"
                "({'__name__': 'attncourse_judge_agent'})"
            )
            self._installed = True
        token = str(next(self._tokens))
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.settimeout(max(self._timeout(), 0.001))
            conn.connect(self.path)
            write_message(conn, token.encode("ascii"))
        except OSError:
            conn.close()
            self._drop(LOST)
            return None
        self._conn, self._why = conn, LOST
        return f"{AGENT_NAME}({token!r})"

    def judge(self, work: Callable[[], T], serve: Callable[[str], object]) -> T:
        """``work()`` (a check whose requests come here) in a thread while ``serve(code)``
        runs the kernel's serving execution in this one; ``work``'s result. ``serve`` may
        raise (the kernel died): the check's pending request fails, then the error goes on."""
        code = self.open()
        if code is None:
            return work()
        served = threading.Event()
        box: dict[str, Any] = {}
        self._served = served

        def run():
            try:
                box["result"] = work()
            except BaseException as error:  # noqa: BLE001 - raised again in the caller
                box["error"] = error
            finally:
                self.close()
                if not served.wait(self._grace):  # the kernel went on serving: stuck
                    self._stop(served)

        thread = threading.Thread(target=run, name="attncourse-judge", daemon=True)
        thread.start()
        try:
            serve(code)
        finally:
            served.set()
            self.abort()
            thread.join()
        if "error" in box:
            raise box["error"]
        return box["result"]

    def send(self, text: str, arrays: Sequence[np.ndarray] = ()) -> tuple[str, list[np.ndarray]]:
        """The kernel's reply (its text and arrays) to the request ``text`` with ``arrays``."""
        conn = self._conn
        if conn is None:
            raise KernelFault(self._why)
        data = text.encode("utf-8")
        size = len(data) + sum(a.nbytes for a in arrays)
        if size > MAX_REQUEST_BYTES:
            raise KernelFault(f"a request of {size} bytes is more than the channel carries")
        deadline = time.monotonic() + self._timeout()

        def fill(view: memoryview) -> None:
            _receive_into(conn, view, deadline)

        try:
            conn.settimeout(max(deadline - time.monotonic(), 0.001))
            write_message(conn, data, arrays)
            return _read_reply(fill, self.max_reply_bytes)
        except wire.ReplyError as error:
            why = str(error)
            self._drop(
                why
                if why.startswith("the kernel")
                else f"the kernel's answer was not readable ({why})"
            )
            raise KernelFault(self._why) from None
        except TimeoutError:
            self._drop(TIMED_OUT)
            self._stop(self._served)
            raise KernelFault(TIMED_OUT) from None
        except OSError:
            self._drop(STOPPED)
            raise KernelFault(STOPPED) from None

    def close(self) -> None:
        """The check is done: tell the kernel (an empty frame) and close the connection."""
        conn = self._conn
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.settimeout(1.0)
                conn.sendall(HEADER.pack(0, 0))
        self._drop(LOST)

    def abort(self) -> None:
        """The serving execution ended: a request still waiting for its reply fails now."""
        conn = self._conn
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def _drop(self, why: str) -> None:
        conn, self._conn, self._why = self._conn, None, why
        if conn is not None:
            conn.close()


def _receive_into(conn: socket.socket, view: memoryview, deadline: float) -> None:
    """Fill ``view`` from ``conn`` before ``deadline`` (TimeoutError), or OSError if it closed."""
    got, size = 0, len(view)
    while got < size:
        conn.settimeout(max(deadline - time.monotonic(), 0.001))
        n = conn.recv_into(view[got:])
        if n == 0:
            raise ConnectionResetError("closed")
        got += n
