"""The grader starts its fork server (:mod:`attncourse.sandbox.forkserver`) on first use.

One server per list of preloaded modules, for as long as this process lives; it is
killed when this process exits, and dies with it if it is killed.
"""

import atexit
import json
import os
import shutil
import subprocess
import sys

from attncourse.sandbox.tempdirs import FORKSERVER, owned_tempdir

_servers = {}  # tuple of preloaded modules -> (server process, its socket)


def fork_server(preload):
    """The socket of this process's fork server for ``preload`` (started on first use),
    or None when it cannot start (kernels are then launched the ordinary way)."""
    key = tuple(preload)
    server = _servers.get(key)
    if server and server[0].poll() is None:
        return server[1]
    home = str(owned_tempdir(FORKSERVER))  # 0700, hidden from kernels
    path = os.path.join(home, "socket")
    proc = subprocess.Popen(
        [sys.executable, "-m", "attncourse.sandbox.forkserver", path, json.dumps(list(preload))],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    if proc.stdout.readline().strip() != b"ready":
        proc.kill()
        proc.wait()
        shutil.rmtree(home, ignore_errors=True)
        return None

    def stop():
        proc.kill()
        proc.wait()
        shutil.rmtree(home, ignore_errors=True)

    atexit.register(stop)
    _servers[key] = (proc, path)
    return path
