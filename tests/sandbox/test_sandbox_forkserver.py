"""The fork server's protocol with several launchers: each hears of its own kernel only.

Found by the fault corpus (``ignores_interrupt``): the grader killed a hung kernel and at once
started the next in a fresh launcher; when the server reaped the killed kernel's copy after
accepting the new launcher, it closed the new launcher's connection instead of the old one,
and that launcher exited as if its kernel had died ("died before replying to kernel_info").
"""

import ast
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from sandboxkit import kernel_output, sandboxed_kernel, tempfile_dir

from attncourse.course import ROOT, course_config
from attncourse.sandbox.forkclient import FORK_SERVER_ENV, read_line, send
from attncourse.sandbox.forkstart import ForkServers
from attncourse.sandbox.kernelmanager import SandboxKernelManager

pytestmark = pytest.mark.kernel  # the server's copies set up the launcher's sandbox

KILLED = signal.SIGKILL.value
SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def _launch(server: str, root: Path) -> tuple[socket.socket, int]:
    """Ask the server at ``server`` for a sandboxed sleeper in ``root``, as a launcher does:
    (the launcher's connection, the pid of the server's copy that runs it)."""
    (root / "work").mkdir()
    (root / "run").mkdir()
    km = SandboxKernelManager(cgroup_memory_mb=0)
    km.use_run_dir(root / "run")
    request = {"spec": km.spec(root / "work"), "cmd": SLEEPER, "env": dict(os.environ)}
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(30)
    conn.connect(server)
    conn.sendall((json.dumps(request) + "\n").encode())
    return conn, json.loads(read_line(conn))["pid"]


def _answer(conn: socket.socket) -> dict | None:
    """The server's next message on ``conn``, or None when it closed the connection."""
    line = read_line(conn)
    return json.loads(line) if line else None


def test_a_killed_kernel_is_reported_to_its_own_launcher_and_no_other():
    servers = ForkServers()
    server = servers.socket([])
    assert server, "the fork server did not start"
    roots = [Path(tempfile_dir()), Path(tempfile_dir())]
    (first, first_pid), (second, second_pid) = (_launch(server, root) for root in roots)
    try:
        os.killpg(first_pid, signal.SIGKILL)  # as the launcher's death makes the server do
        assert _answer(first) == {"exit": -KILLED % 256}
        # The second launcher's kernel lives on: the server still relays its signals and
        # reports its exit to it, not a closed connection.
        send(second, {"signal": KILLED})
        assert _answer(second) == {"exit": -KILLED % 256}, "the server closed the connection"
    finally:
        for pid in (first_pid, second_pid):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        first.close()
        second.close()
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)


def test_a_server_started_ahead_is_the_one_its_socket_gives():
    """``start`` launches the server without waiting (the grading process starts the course's
    server before importing nbgrader); ``socket`` then waits for that same server, and a
    second ``start`` launches nothing. Control: ``socket`` alone starts its server and waits,
    as before."""
    servers = ForkServers()
    servers.start([])
    servers.start([])
    assert len(servers._starting) == 1
    ((proc, path),) = servers._starting.values()
    assert servers.socket([]) == path
    assert servers._servers[()][0] is proc and proc.poll() is None
    servers.start([])
    assert not servers._starting, "a running server was launched again"
    alone = ForkServers()
    assert alone.socket([]) and not alone._starting and alone._servers[()][0].poll() is None


def _first_lines():
    """The lines every grading kernel runs before the notebook (``IPKernelApp.exec_lines`` in
    the course's ``nbgrader_config.py``)."""
    (arg,) = [
        a
        for a in course_config(ROOT).Execute.extra_arguments
        if a.startswith("--IPKernelApp.exec_lines=")
    ]
    return ast.literal_eval(arg.split("=", 1)[1])


def _after_preload(preload, lines):
    """What ``lines`` leave in ``result`` (as JSON) in a fresh process that imported the fork
    server's own modules and ``preload``, as a server does before it forks."""
    code = (
        "import importlib, json, sys\n"
        "import attncourse.sandbox.forkserver\n"
        f"for name in {list(preload)!r}:\n    importlib.import_module(name)\n"
        f"{lines}\n"
        "print(json.dumps(result))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def _imported_by_first_lines(preload):
    """The modules the kernel's first lines import in a process that imported ``preload``."""
    return _after_preload(
        preload,
        "before = set(sys.modules)\n"
        f"for line in {_first_lines()!r}:\n    exec(line, {{}})\n"
        "result = sorted(set(sys.modules) - before)",
    )


def test_the_kernels_first_lines_import_nothing_the_fork_server_did_not():
    """A forked kernel's first lines (torch.use_deterministic_algorithms) import nothing new:
    the server imported it. Without ``torch._inductor.config`` in the preload, the control,
    they import torch._dynamo and sympy in every kernel (2.3 s of its CPU, stop 45)."""
    preload = SandboxKernelManager(config=course_config(ROOT)).preload
    assert _imported_by_first_lines(preload) == []
    without = [name for name in preload if name != "torch._inductor.config"]
    assert len(without) == len(preload) - 1
    assert "torch._dynamo" in _imported_by_first_lines(without)


def _server_modules(preload):
    """The modules a fork server for ``preload`` holds when it forks a kernel."""
    return set(_after_preload(preload, "result = sorted(sys.modules)"))


def _imported_by_kernel_start(preload):
    """The modules a kernel forked from a server that imported ``preload`` imports itself
    while it starts (ipykernel's application, kernel and shell), before any cell."""
    servers = ForkServers()
    try:
        with sandboxed_kernel(preload=list(preload), fork_servers=servers, cgroup_memory_mb=0) as (
            _,
            _,
            kc,
        ):
            reply, text = kernel_output(
                kc, "import json, sys; print(json.dumps(sorted(sys.modules)))"
            )
    finally:
        servers.close()
    assert reply["status"] == "ok", reply
    return sorted(set(json.loads(text.splitlines()[-1])) - _server_modules(preload))


# Measured (stop 46): with the course's preload a kernel's start imports 18 modules of its own
# (IPython's debugger, logger and storemagic, sqlite3 for the history, tornado's platform:
# 0.02 s of CPU); without ipykernel.debugger, the control, 147, debugpy and pydevd among them
# (0.1-0.4 s of CPU in every kernel).
OWN_IMPORTS = 40


def test_a_forked_kernel_imports_at_its_start_only_what_the_server_could_not_spare():
    """ipykernel's kernel imports its debugger (debugpy, pydevd: 130 modules) as it starts;
    the server imported it, so no kernel pays it again."""
    preload = SandboxKernelManager(config=course_config(ROOT)).preload
    own = _imported_by_kernel_start(preload)
    assert len(own) < OWN_IMPORTS and not [m for m in own if "pydev" in m or "debugpy" in m], own
    without = [name for name in preload if name != "ipykernel.debugger"]
    assert len(without) == len(preload) - 1
    control = _imported_by_kernel_start(without)
    assert "debugpy" in control and len(control) > OWN_IMPORTS, control


# A grader started by this process (nbgrader autograde, a grading process): which server its
# ForkServers.inherited() forks kernels from for the preload [] (printed), and whether it started
# one of its own (the socket is then in a folder of its own).
_GRADER = (
    "from attncourse.sandbox.forkstart import ForkServers\n"
    "servers = ForkServers.inherited()\n"
    "print(servers.socket([]), () in servers._servers)\n"
    "servers.close()\n"
)


def _grader_socket(handed: str | None) -> tuple[str, bool]:
    env = {k: v for k, v in os.environ.items() if k != FORK_SERVER_ENV}
    if handed is not None:
        env[FORK_SERVER_ENV] = handed
    out = subprocess.run(
        [sys.executable, "-c", _GRADER], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    path, own = out.stdout.split()
    return path, own == "True"


def test_a_grader_forks_from_the_server_handed_down_and_starts_none_of_its_own():
    """The test suite hands its server down to the graders it starts (tests/conftest.py); a
    grader uses it while it is this user's alone and alive, and otherwise starts its own.
    Controls: no server handed down, one whose folder others may enter, one that is gone, one
    for other modules, and a value that is not the hand-down's."""
    servers = ForkServers()
    try:
        handed = servers.handed_down([])
        path = json.loads(handed)["socket"]
        assert _grader_socket(handed) == (path, False)
        assert servers.socket([]) == path  # the same server, ready, in this process too
        assert _grader_socket(None)[1], "no server handed down: the grader starts its own"
        other = json.dumps({**json.loads(handed), "preload": ["json"]})
        got, own = _grader_socket(other)  # the grader's preload is []: not the one handed down
        assert own and got != path
        os.chmod(os.path.dirname(path), 0o711)
        try:
            got, own = _grader_socket(handed)
            assert own and got != path, "a folder others may enter was trusted"
        finally:
            os.chmod(os.path.dirname(path), 0o700)
        assert _grader_socket("not json")[1]
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        got, own = _grader_socket(json.dumps({**json.loads(handed), "pid": gone.pid}))
        assert own and got != path, "a server that is gone was used"
    finally:
        servers.close()


def test_a_kernel_forked_from_a_handed_down_server_does_not_see_the_hand_down():
    """The launcher drops FORK_SERVER_ENV from the kernel's environment (it names a socket in
    a folder the sandbox hides); the control: another variable of the grader's arrives."""
    servers = ForkServers()
    os.environ[FORK_SERVER_ENV], before = servers.handed_down([]), os.environ.get(FORK_SERVER_ENV)
    os.environ["ATTNCOURSE_PROBE"] = "seen"
    try:
        with sandboxed_kernel(preload=[], fork_servers=servers, cgroup_memory_mb=0) as (_, _, kc):
            reply, text = kernel_output(
                kc, "import os; print(sorted(k for k in os.environ if 'ATTNCOURSE' in k))"
            )
    finally:
        del os.environ["ATTNCOURSE_PROBE"]
        if before is None:
            del os.environ[FORK_SERVER_ENV]
        else:
            os.environ[FORK_SERVER_ENV] = before
        servers.close()
    assert reply["status"] == "ok", reply
    seen = ast.literal_eval(text.splitlines()[-1])
    assert "ATTNCOURSE_PROBE" in seen and FORK_SERVER_ENV not in seen, seen
