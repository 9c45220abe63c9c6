"""The grader's fork servers (:mod:`attncourse.sandbox.forkserver`), started on first use.

A :class:`ForkServers` belongs to one grading process (or one ``nbgrader autograde`` run):
it keeps one server per list of preloaded modules for as long as it lives, and the servers
are killed when that process exits (and die with it if it is killed). The kernel manager
gets it passed in (``SandboxKernelManager.fork_servers``); nothing is kept in the module.
"""

import atexit
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence

from attncourse.sandbox.tempdirs import FORKSERVER, owned_tempdir


class ForkServers:
    """This process's fork servers, by preloaded modules."""

    def __init__(self) -> None:
        self._servers: dict[tuple[str, ...], tuple[subprocess.Popen, str]] = {}
        self._starting: dict[tuple[str, ...], tuple[subprocess.Popen, str]] = {}  # not yet ready

    def __deepcopy__(self, memo: dict) -> "ForkServers":
        return self  # one per process: traitlets copies config values, this one is shared

    def start(self, preload: Sequence[str]) -> None:
        """Launch the server for ``preload`` now, without waiting for it (its imports then run
        while this process does other work); :meth:`socket` waits for it."""
        key = tuple(preload)
        if key in self._servers or key in self._starting:
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


def _stop(proc: subprocess.Popen, home: str) -> None:
    proc.kill()
    proc.wait()
    shutil.rmtree(home, ignore_errors=True)
