"""A fork server for grading kernels: import torch once per grader, not once per student.

Starting a kernel for a course notebook costs about 2 s of CPU, nearly all of
it importing torch; the notebook's own compute is a few seconds more. With one
kernel per student, that import is a large share of the CPU a class needs.
This server imports those modules once (torch, numpy, ipykernel, pyplot; never the
course's grading code: every kernel holds a copy of what the server imported),
then forks a copy of itself for each kernel; the copy sets up the sandbox
exactly as the launcher in :mod:`attncourse.sandbox.launcher` does (same ``launch``:
cgroup, namespaces, mounts, fresh uid, rlimits) and, instead of exec'ing a new
Python that would import everything again, runs ``ipykernel`` in the process
it already is.

Nothing of the protocol is visible to jupyter_client: it still starts the
launcher ``python -m attncourse.sandbox.launcher SPEC -- CMD`` (a Python without torch,
some 30 ms), which asks this server over a Unix socket (mode 0600, in a
private directory the sandbox hides) to fork the kernel, forwards the signals
jupyter_client sends it (interrupt, terminate) to the kernel's process group,
and exits with the kernel's exit status. When the launcher is killed, the
server kills the kernel's group; the kernel's PID namespace dies with its
init. When the server cannot be reached, the launcher starts the kernel the
ordinary way, so a dead server costs time, never a grade.

The protocol is in :mod:`attncourse.sandbox.forkclient`; the grader starts a server with
:mod:`attncourse.sandbox.forkstart`.
"""

import gc
import importlib
import json
import os
import selectors
import signal
import socket
import sys
from typing import NoReturn, cast

from attncourse.sandbox import KERNEL_MODULES
from attncourse.sandbox.forkclient import read_line, send
from attncourse.sandbox.launcher import launch
from attncourse.sandbox.linux import PR_SET_PDEATHSIG, prctl

# The backend a kernel draws with where its environment names none (ipykernel's own default).
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def run_kernel(cmd: list[str], env: dict[str, str]) -> NoReturn:
    """Run the kernel ``cmd`` (``python -m ipykernel_launcher ...``) in this process.

    Called in the sandbox, after limits and the uid are set, where the launcher
    would exec ``cmd``; any other command is exec'd as usual.
    """
    if cmd[1:3] != ["-m", "ipykernel_launcher"] or os.path.realpath(cmd[0]) != os.path.realpath(
        sys.executable
    ):
        os.execvpe(cmd[0], cmd, env)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = ["ipykernel_launcher", *cmd[3:]]
    sys.path[0] = os.getcwd()  # as for ``python -m``: the working copy
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if "torch" in sys.modules and env.get("OMP_NUM_THREADS", "").isdigit():
        sys.modules["torch"].set_num_threads(int(env["OMP_NUM_THREADS"]))
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()  # a fresh process would draw its own seed
    if "matplotlib" in sys.modules:  # it read its backend from the server's environment, and
        # pyplot resolves it at the first figure, in the kernel, where ipykernel's inline backend
        # then hooks into the shell as when imported afresh
        sys.modules["matplotlib"].rcParams["backend"] = env.get("MPLBACKEND") or INLINE_BACKEND
    code = 0
    try:
        from ipykernel import kernelapp

        kernelapp.launch_new_instance()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported like a crashed kernel's traceback
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            import atexit

            atexit._run_exitfuncs()  # what a kernel's interpreter would run at exit
        except BaseException:  # noqa: BLE001, S110 - exiting anyway
            pass
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001, S110 - exiting anyway
                pass
        os._exit(code)


def _child(conn, listener, request):
    """In the forked copy: become the launcher of one sandboxed kernel."""
    code = 1
    try:
        listener.close()
        conn.close()
        os.setsid()  # the kernel's own process group, signalled as a whole
        os.environ.clear()
        os.environ.update(request["env"])
        code = launch(request["spec"], request["cmd"], start=run_kernel)
    finally:
        os._exit(code)


def kernel_safe(module: str) -> bool:
    """Whether ``module`` may be in a kernel's memory: anything but this package, of which
    only the kernel side (:data:`~attncourse.sandbox.KERNEL_MODULES`) is the kernel's."""
    return module.partition(".")[0] != "attncourse" or module in KERNEL_MODULES


def serve(path: str, preload: list[str]) -> None:
    """Import ``preload``, then fork a sandboxed kernel for each launcher that connects."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # dies with the grader
    # matplotlib reads its settings where it is imported: the server's own empty folder, as
    # each kernel's (MPLCONFIGDIR in its run folder), never the grader's home
    os.environ["MPLCONFIGDIR"] = os.path.join(os.path.dirname(path), "matplotlib")
    # pydevd (ipykernel's debugger) warns at import that frozen modules may hide breakpoints:
    # no one debugs a grading kernel, and the warning would reach the grader's log
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    for name in preload:
        if not kernel_safe(name):
            print(f"forkserver: will not preload {name}: kernels may not hold it", file=sys.stderr)
            continue
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - the kernel imports it again and reports
            print(f"forkserver: cannot preload {name}: {e}", file=sys.stderr)
    # Move everything imported so far out of the collector's reach: a kernel's collections
    # then scan only its own objects, not torch's, and leave the pages it shares with this
    # server unwritten (a collection writes to every object it scans, so without this each
    # forked kernel copied much of the server's heap, page by page, in system time).
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(16)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    kernels: dict[
        int, socket.socket
    ] = {}  # pid of the forked launcher -> its launcher's connection
    print("ready", flush=True)
    while True:
        for key, _ in selector.select(timeout=0.2):
            if key.fileobj is listener:
                conn, _ = listener.accept()
                try:
                    conn.settimeout(10)
                    request = json.loads(read_line(conn))
                    conn.settimeout(None)
                except (OSError, ValueError):
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    _child(conn, listener, request)
                kernels[pid] = conn
                selector.register(conn, selectors.EVENT_READ, pid)
                send(conn, {"pid": pid})
                continue
            conn, pid = cast(socket.socket, key.fileobj), key.data
            try:
                data = conn.recv(4096)
            except OSError:
                data = b""
            if not data:  # the launcher is gone: so is its kernel
                selector.unregister(conn)
                _signal_group(pid, signal.SIGKILL)
                continue
            for line in data.decode(errors="replace").splitlines():
                try:
                    _signal_group(pid, int(json.loads(line)["signal"]))
                except (ValueError, KeyError, TypeError):
                    pass
        _reap(kernels, selector)


def _reap(kernels: dict[int, socket.socket], selector: selectors.BaseSelector) -> None:
    """Report each copy that exited to its own launcher, and close that launcher's connection
    (never another's: a launcher connected meanwhile is the next kernel's)."""
    while kernels:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        launcher = kernels.pop(pid, None)
        if launcher is None:
            continue
        send(launcher, {"exit": os.waitstatus_to_exitcode(status) % 256})
        try:
            selector.unregister(launcher)
        except (KeyError, ValueError):
            pass
        launcher.close()


def _signal_group(pid, sig):
    try:
        os.killpg(pid, sig)
    except OSError:
        pass


if __name__ == "__main__":
    serve(sys.argv[1], json.loads(sys.argv[2]))
