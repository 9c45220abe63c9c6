"""The grader's fork servers (:mod:`attncourse.sandbox.forkserver`), started on first use.

A :class:`ForkServers` belongs to one grading process (or one ``nbgrader autograde`` run):
it keeps one server per list of preloaded modules for as long as it lives, and the servers
are killed when that process exits (and die with it if it is killed). The kernel manager
gets it passed in (``SandboxKernelManager.fork_servers``); nothing is kept in the module.

A process that starts many graders (the test suite: 26 ``nbgrader autograde`` runs and 57
grading processes in one ``make test``, each server about 7 s of CPU to start) may hand its
own server down: :meth:`ForkServers.handed_down` names it in the environment
(:data:`~attncourse.sandbox.forkclient.FORK_SERVER_ENV`), and the graders' :meth:`ForkServers.inherited`
use it, never start nor stop it, and start their own where it is not this user's alone or its
server is gone. A kernel forked from it is the same as one forked from a grader's own: the
launcher sends its sandbox, command and environment with each request.
"""

import atexit
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Sequence

from attncourse.sandbox.forkclient import FORK_SERVER_ENV
from attncourse.sandbox.tempdirs import FORKSERVER, alive, owned_tempdir

# How long a grader waits for a handed-down server still importing its modules, while that
# server lives (a server is ready in about 4 s on an idle core).
HANDED_DOWN_WAIT_S = 60.0


class ForkServers:
    """This process's fork servers, by preloaded modules."""

    def __init__(self) -> None:
        self._servers: dict[tuple[str, ...], tuple[subprocess.Popen, str]] = {}
        self._starting: dict[tuple[str, ...], tuple[subprocess.Popen, str]] = {}  # not yet ready
        self._handed: dict[tuple[str, ...], tuple[int, str]] = {}  # (pid, socket), not ours

    @classmethod
    def inherited(cls) -> "ForkServers":
        """A grader's servers: the one this process's parent handed down in the environment
        (:meth:`handed_down`), if any, and its own for any other list of modules."""
        servers = cls()
        try:
            handed = json.loads(os.environ.get(FORK_SERVER_ENV, "null"))
            key, pid, path = tuple(handed["preload"]), int(handed["pid"]), str(handed["socket"])
        except (ValueError, KeyError, TypeError):
            return servers
        if all(isinstance(name, str) for name in key) and _private(os.path.dirname(path)):
            servers._handed[key] = (pid, path)
        return servers

    def handed_down(self, preload: Sequence[str]) -> str:
        """Start the server for ``preload`` (without waiting) and return the value of
        ``FORK_SERVER_ENV`` that hands it to the graders this process starts."""
        key = tuple(preload)
        self.start(key)
        proc, path = self._servers.get(key) or self._starting[key]
        return json.dumps({"preload": list(key), "pid": proc.pid, "socket": path})

    def __deepcopy__(self, memo: dict) -> "ForkServers":
        return self  # one per process: traitlets copies config values, this one is shared

    def start(self, preload: Sequence[str]) -> None:
        """Launch the server for ``preload`` now, without waiting for it (its imports then run
        while this process does other work); :meth:`socket` waits for it."""
        key = tuple(preload)
        if key in self._servers or key in self._starting or key in self._handed:
            return
        home = str(owned_tempdir(FORKSERVER))  # 0700, hidden from kernels
        path = os.path.join(home, "socket")
        proc = subprocess.Popen(
            [sys.executable, "-m", "attncourse.sandbox.forkserver", path, json.dumps(list(key))],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        atexit.register(_stop, proc, home)
        self._starting[key] = (proc, path)

    def socket(self, preload: Sequence[str]) -> str | None:
        """The socket of the fork server for ``preload`` (started on first use), or None when
        it cannot start (kernels are then launched the ordinary way)."""
        key = tuple(preload)
        if key in self._handed:
            path = _ready(*self._handed[key])
            if path is not None:
                return path
            del self._handed[key]  # gone or not ours: this process starts its own
        server = self._servers.get(key)
        if server and server[0].poll() is None:
            return server[1]
        self._servers.pop(key, None)
        self.start(key)
        proc, path = self._starting.pop(key)
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != b"ready":
            _stop(proc, os.path.dirname(path))
            return None
        self._servers[key] = (proc, path)
        return path

    def close(self) -> None:
        """Kill every server now (a process that lives on after its grading, as a test's)."""
        for proc, path in [*self._servers.values(), *self._starting.values()]:
            _stop(proc, os.path.dirname(path))
        self._servers.clear()
        self._starting.clear()


def _private(home: str) -> bool:
    """Whether ``home`` is a folder of this user's that no one else may enter."""
    try:
        info = os.lstat(home)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077


def _ready(pid: int, path: str) -> str | None:
    """``path`` once the handed-down server ``pid`` listens there (a socket of this user's,
    0600, in its private folder), or None when it is gone, or is not this user's alone."""
    deadline = time.monotonic() + HANDED_DOWN_WAIT_S
    while True:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            info = None
        except OSError:
            return None
        if info is not None:
            mine = info.st_uid == os.geteuid() and not info.st_mode & 0o077
            ok = stat.S_ISSOCK(info.st_mode) and mine and _private(os.path.dirname(path))
            return path if ok and alive(pid) else None
        if not alive(pid) or time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def _stop(proc: subprocess.Popen, home: str) -> None:
    proc.kill()
    proc.wait()
    shutil.rmtree(home, ignore_errors=True)
