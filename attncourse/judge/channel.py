"""Ways for the judge to reach the kernel side (:mod:`attncourse.judge.agent`).

:class:`PipeChannel` reaches the agent in a sandboxed kernel over a Unix socket: the
agent is installed once per kernel (one execution) and listens in the kernel's run
directory; each check opens one connection, which one execution in the kernel serves
while the check runs in a thread of the grader (:meth:`PipeChannel.judge`), so a
request costs a round trip of two frames, not an execution. :class:`LocalChannel`
serves a namespace in this process, for the fast case tables. Both pass the same JSON
text both ways, so the fast tests exercise the same encoding as real grading.
"""

import contextlib
import itertools
import socket
import threading
import time
from pathlib import Path

from attncourse.judge.agent import HEADER, MAX_REQUEST_BYTES, make_server, write_frame
from attncourse.judge.remote import KernelFault

AGENT_SOURCE = (Path(__file__).parent / "agent.py").read_text()
AGENT_NAME = "__attncourse_judge__"
LOST = "no answer from the kernel (the notebook's code interfered with the grader's call)"
STOPPED = (
    "the kernel stopped answering while your code was being called (it died, or the "
    "notebook's code closed the grader's channel)"
)
TIMED_OUT = "the call did not finish within the time limit"


class LocalChannel:
    """The agent over a namespace of this process (tests; never for grading a student)."""

    def __init__(self, namespace):
        self.send = make_server(namespace)


class PipeChannel:
    """Requests to the agent in a kernel over the Unix socket at ``path``.

    ``execute(code)`` runs code in the kernel and waits for it (the agent's install,
    again after ``reset`` when the kernel was replaced). ``timeout()`` gives the seconds
    one call may take; when a call runs over, ``stop(served)`` is called (in the check's
    thread) to interrupt the kernel, and to kill it if ``served`` (an Event, set when the
    serving execution ended) is not set soon. A reply is read only up to
    ``max_reply_bytes``: a longer one, a closed connection or a late one is a
    :class:`KernelFault`, and so is every later request of that check.
    """

    def __init__(self, execute, path, max_reply_bytes, timeout, stop, grace):
        self._execute = execute
        self.path = str(path)
        self.max_reply_bytes = max_reply_bytes
        self._timeout = timeout
        self._stop = stop
        self._grace = grace
        self._installed = False
        self._tokens = itertools.count()
        self._conn = None
        self._why = LOST
        self._served = threading.Event()

    def reset(self):
        """The kernel was replaced: install the agent again before the next check."""
        self._installed = False

    def fail(self, why):
        """Every request of this check fails with ``why`` (the kernel cannot be reached)."""
        self._drop(why)

    def open(self):
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
            write_frame(conn, token.encode("ascii"))
        except OSError:
            conn.close()
            self._drop(LOST)
            return None
        self._conn, self._why = conn, LOST
        return f"{AGENT_NAME}({token!r})"

    def judge(self, work, serve):
        """``work()`` (a check whose requests come here) in a thread while ``serve(code)``
        runs the kernel's serving execution in this one; ``work``'s result. ``serve`` may
        raise (the kernel died): the check's pending request fails, then the error goes on."""
        code = self.open()
        if code is None:
            return work()
        served, box = threading.Event(), {}
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

    def send(self, text):
        conn = self._conn
        if conn is None:
            raise KernelFault(self._why)
        data = text.encode("utf-8")
        if len(data) > MAX_REQUEST_BYTES:
            raise KernelFault(f"a request of {len(data)} bytes is more than the channel carries")
        deadline = time.monotonic() + self._timeout()
        try:
            conn.settimeout(max(deadline - time.monotonic(), 0.001))
            write_frame(conn, data)
            (size,) = HEADER.unpack(_receive(conn, HEADER.size, deadline))
            if size > self.max_reply_bytes:
                self._drop(f"the kernel's answer ({size} bytes) is larger than allowed")
                raise KernelFault(self._why)
            reply = _receive(conn, size, deadline)
        except TimeoutError:
            self._drop(TIMED_OUT)
            self._stop(self._served)
            raise KernelFault(TIMED_OUT) from None
        except OSError:
            self._drop(STOPPED)
            raise KernelFault(STOPPED) from None
        try:
            return reply.decode("utf-8")
        except UnicodeDecodeError:
            self._drop("the kernel's answer was not readable (not UTF-8)")
            raise KernelFault(self._why) from None

    def close(self):
        """The check is done: tell the kernel (an empty frame) and close the connection."""
        conn = self._conn
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.settimeout(1.0)
                conn.sendall(HEADER.pack(0))
        self._drop(LOST)

    def abort(self):
        """The serving execution ended: a request still waiting for its reply fails now."""
        conn = self._conn
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def _drop(self, why):
        conn, self._conn, self._why = self._conn, None, why
        if conn is not None:
            conn.close()


def _receive(conn, size, deadline):
    """``size`` bytes of ``conn`` before ``deadline`` (TimeoutError), or OSError if it closed."""
    data = bytearray(size)
    view, got = memoryview(data), 0
    while got < size:
        conn.settimeout(max(deadline - time.monotonic(), 0.001))
        n = conn.recv_into(view[got:])
        if n == 0:
            raise ConnectionResetError("closed")
        got += n
    return bytes(data)
