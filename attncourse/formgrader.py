"""Grading by hand: JupyterLab with nbgrader's formgrader on the course.

``make formgrader`` serves the course on 127.0.0.1 with a fresh token and prints
the links; the formgrader (nbgrader's server extension, opened from the
*Nbgrader* menu of JupyterLab or at ``/formgrader``) lists every autograded
submission, shows the written answers with their mark scheme, and stores the
manual scores and comments in the course's gradebook.

How long that takes per student is estimated by :mod:`attncourse.workload`.
"""

import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from attncourse.course import ROOT, venv_path


def free_port():
    """A TCP port on the loopback interface that nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lab_command(course, port, token):
    """The ``jupyter lab`` command that serves ``course`` on loopback with ``token``."""
    cmd = [
        str(Path(sys.executable).with_name("jupyter")),
        "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={Path(course).resolve()}",
        f"--IdentityProvider.token={token}",
        # No news feed and no update check: the grading server calls nobody.
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        # Formgrader's list of a notebook's submissions in linear time (attncourse.gradebookview).
        "--ServerApp.jpserver_extensions=attncourse.gradebookview=True",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    return cmd


def urls(port, token):
    """Links to JupyterLab and to the formgrader page of a server started by :func:`lab_command`."""
    base = f"http://127.0.0.1:{port}"
    return {"lab": f"{base}/lab?token={token}", "formgrader": f"{base}/formgrader?token={token}"}


def serve(course: str | os.PathLike = ROOT, port: int = 8888, token: str | None = None) -> None:
    """Replace this process by JupyterLab on the course (Ctrl-C stops it); print where formgrader is."""
    token = token or secrets.token_hex(24)
    links = urls(port, token)
    print(f"JupyterLab:  {links['lab']}\nformgrader:  {links['formgrader']}", flush=True)
    cmd = lab_command(course, port, token)
    os.chdir(course)
    os.execve(cmd[0], cmd, {**os.environ, "PATH": venv_path()})


@contextmanager
def running(course, log_path, port=None, token=None, timeout=120):
    """A JupyterLab server on ``course`` for the duration of the block; yields (base URL, token).

    The server's output goes to ``log_path``; it is stopped (and killed if it
    does not stop) when the block ends, whatever happens inside it.
    """
    port = port or free_port()
    token = token or secrets.token_hex(24)
    env = {**os.environ, "PATH": venv_path(), "PYTHONWARNINGS": "ignore"}
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            lab_command(course, port, token), cwd=course, env=env, stdout=log, stderr=log
        )
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_for(f"{base}/api/status?token={token}", proc, timeout, log_path)
            yield base, token
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_for(url, proc, timeout, log_path):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {proc.returncode}; see {log_path}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"jupyter lab did not answer within {timeout}s; see {log_path}")
