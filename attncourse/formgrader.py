"""Grading by hand: JupyterLab with nbgrader's formgrader on the course, and what it costs.

``make formgrader`` serves the course on 127.0.0.1 with a fresh token and prints
the links; the formgrader (nbgrader's server extension, opened from the
*Nbgrader* menu of JupyterLab or at ``/formgrader``) lists every autograded
submission, shows the written answers with their mark scheme, and stores the
manual scores and comments in the course's gradebook.

:func:`workload` counts what a grader does per student from the source
notebooks, so the README's estimate follows the assignments as they change.
"""

import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import nbformat

from attncourse.course import ROOT, assignments, notebook_path, venv_path
from attncourse.markscheme import solution_region

# Reading speed for a written answer full of formulas, words per minute.
READ_WPM = 120
# Minutes to decide one mark-scheme criterion and, where points are lost, say why in a comment.
MINUTES_PER_CRITERION = 0.5
# Minutes to open a cell in formgrader and type its score.
MINUTES_PER_CELL = 0.5
# Minutes to open a submission in formgrader, glance at its autograded cells and move on.
MINUTES_PER_SUBMISSION = 1.0

MARK_SCHEME = "**Mark scheme**"
_CRITERION = re.compile(r"^\s*[-*]\s+\S", re.MULTILINE)


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
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    return cmd


def urls(port, token):
    """Links to JupyterLab and to the formgrader page of a server started by :func:`lab_command`."""
    base = f"http://127.0.0.1:{port}"
    return {"lab": f"{base}/lab?token={token}", "formgrader": f"{base}/formgrader?token={token}"}


def serve(course=ROOT, port=8888, token=None):
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


@dataclass
class ManualCell:
    """One answer graded by hand: its points, mark-scheme criteria and model-answer length."""

    grade_id: str
    points: float
    criteria: int
    answer_words: int

    @property
    def minutes(self):
        reading = self.answer_words / READ_WPM
        return reading + self.criteria * MINUTES_PER_CRITERION + MINUTES_PER_CELL


def manual_cells(nb):
    """The cells of a source notebook that a person grades, with what their mark scheme asks."""
    out = []
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not meta.get("grade") or not (meta.get("solution") or meta.get("task")):
            continue
        answer, _, scheme = solution_region(cell.source).partition(MARK_SCHEME)
        out.append(
            ManualCell(
                grade_id=meta["grade_id"],
                points=float(meta.get("points", 0)),
                criteria=max(1, len(_CRITERION.findall(scheme))),
                answer_words=len(answer.split()),
            )
        )
    return out


def workload(root=ROOT):
    """assignment -> list of :class:`ManualCell` for every assignment in ``root/source``."""
    return {
        a: manual_cells(nbformat.read(notebook_path(root, "source", a), as_version=4))
        for a in assignments(root)
    }


def workload_table(root=ROOT):
    """The README's table of manual grading per student, one row per assignment."""
    rows = [
        "| assignment | cells graded by hand | points | mark-scheme criteria | minutes per student |",
        "| --- | --- | --- | --- | --- |",
    ]
    for assignment, cells in workload(root).items():
        points = sum(c.points for c in cells)
        criteria = sum(c.criteria for c in cells)
        minutes = MINUTES_PER_SUBMISSION + sum(c.minutes for c in cells)
        rows.append(
            f"| `{assignment}` | {len(cells)} | {points:g} | {criteria} | {round(minutes)} |"
        )
    return "\n".join(rows)
