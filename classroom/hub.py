"""Start and stop the classroom's JupyterHub (as root) and wait until it answers."""

import os
import signal
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from classroom.provision import Classroom

CONFIG = Path(__file__).with_name("jupyterhub_config.py")


def command(room: Classroom) -> list[str]:
    """``jupyterhub`` from the course's environment with the classroom's configuration."""
    return [str(room.venv / "bin" / "jupyterhub"), "-f", str(CONFIG)]


def environment(room: Classroom) -> dict:
    """The hub's environment: this one, the classroom's settings and the course's bin on PATH."""
    path = f"{room.env / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    return {**os.environ, "CLASSROOM": str(room.settings), "PATH": path}


def wait_until_up(room: Classroom, hub: subprocess.Popen, log: Path, timeout: float = 120):
    """Return once the hub's login page answers; fail with its log if it exits or times out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if hub.poll() is not None:
            raise RuntimeError(f"JupyterHub exited ({hub.returncode}):\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{room.url}/hub/login", timeout=5) as page:
                if page.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"JupyterHub did not answer in {timeout} s:\n{log.read_text()[-3000:]}")


@contextmanager
def running(room: Classroom, log: Path):
    """JupyterHub serving ``room`` (provisioned) while the block runs, its output in ``log``;
    then stopped with SIGTERM, which stops the users' servers and the proxy it started."""
    with open(log, "ab") as out:
        hub = subprocess.Popen(
            command(room),
            cwd=room.root / "hub",
            env=environment(room),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until_up(room, hub, log)
        yield hub
    finally:
        if hub.poll() is None:
            hub.send_signal(signal.SIGTERM)
            try:
                hub.wait(timeout=60)
            except subprocess.TimeoutExpired:
                hub.kill()
                hub.wait()
