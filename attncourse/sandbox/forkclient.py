"""The launcher's side of the fork server: ask it for a kernel, relay signals, return its exit.

Protocol, one JSON object per line: the launcher sends ``{"spec": ..., "cmd": [...],
"env": {...}}`` then zero or more ``{"signal": N}``; the server answers ``{"pid": N}``
once forked and ``{"exit": code}`` when the kernel's launcher process ends.
"""

import json
import os
import signal
import socket

# The environment variable through which a process hands its fork server down to the graders it
# starts (:meth:`attncourse.sandbox.forkstart.ForkServers.handed_down`; the test suite does): a
# JSON object of the server's preload list, pid and socket. No kernel gets it (the launcher
# drops it from the kernel's environment).
FORK_SERVER_ENV = "ATTNCOURSE_FORK_SERVER"


def send(conn: socket.socket, message: dict) -> None:
    """Send one message; a peer that is gone is no error (the other side notices)."""
    try:
        conn.sendall((json.dumps(message) + "\n").encode())
    except OSError:
        pass


def read_line(conn: socket.socket, limit: int = 1 << 20) -> bytes:
    """One message's bytes (up to its newline, or what came before the peer closed)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > limit:
            raise ValueError("request too long")
    return data


def launcher_pid_file(run: str | os.PathLike) -> str:
    """Where the launcher notes the pid of the fork server's copy that set up its sandbox:
    beside ``run``, in the kernel's private workspace, which the sandbox does not mount
    (so the kernel cannot rewrite it)."""
    return str(run).rstrip("/") + ".launcher-pid"


def launch_via(path: str, spec: dict, cmd: list[str]) -> int | None:
    """In the launcher: have the server at ``path`` start the kernel; return its exit status,
    or None when the server cannot be reached (the caller then starts it itself)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        conn.sendall(
            (json.dumps({"spec": spec, "cmd": cmd, "env": dict(os.environ)}) + "\n").encode()
        )
        first = json.loads(read_line(conn) or b"null")
    except (OSError, ValueError):
        conn.close()
        return None
    if not isinstance(first, dict) or "pid" not in first:
        conn.close()
        return None
    try:
        with open(launcher_pid_file(spec["run"]), "w") as f:
            f.write(str(int(first["pid"])))
    except OSError:
        pass

    def forward(sig, _frame):
        send(conn, {"signal": sig})

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, forward)
    buffer = b""
    while True:
        try:
            chunk = conn.recv(4096)
        except InterruptedError:
            continue
        except OSError:
            return 1
        if not chunk:
            return 1  # the server died: the kernel with it
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and "exit" in message:
                return int(message["exit"])
