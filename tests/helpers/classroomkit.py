"""The test classroom: its accounts, and commands run as them (the real Unix accounts).

The hub-wide parts live under a fresh folder of ``/tmp`` (every account must be able to
reach its home and the exchange there); the fixtures in ``conftest.py`` make and remove it.
"""

import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from attncourse.course import ROOT
from classroom.accounts import Account, environment, remove, run_as
from classroom.provision import Classroom, provision
from classroom.reach import Unreachable, check_reach

INSTRUCTOR, EVE = "ac-teach", "ac-eve"
# Ada and Ben take the term (test_classroom_term), Ivy and Jon try the isolation.
ADA, BEN, IVY, JON = "ac-ada", "ac-ben", "ac-ivy", "ac-jon"
ROLES = {INSTRUCTOR: "instructor", ADA: "student", BEN: "student", IVY: "student", JON: "student"}
ROLES[EVE] = ""


def free_port():
    """A TCP port on the loopback interface that nobody listens on right now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_proxy():
    """node_modules/ from package-lock.json (``npm ci``), as ``make classroom`` installs it."""
    if (ROOT / "node_modules" / ".bin" / "configurable-http-proxy").exists():
        return
    if not shutil.which("npm"):
        pytest.skip("npm is missing: JupyterHub's proxy comes from npm (apt-get install npm)")
    subprocess.run(
        ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=ROOT, check=True
    )


def make_classroom() -> Classroom:
    """The test classroom, provisioned: an instructor, two students and a hub user outside the
    course, each with a fresh password."""
    if os.geteuid() != 0:
        pytest.skip("the classroom needs root: it creates Unix accounts and runs servers as them")
    try:  # first: a clone the accounts cannot reach fails here, saying which folder blocks them
        check_reach(Classroom.venv, ROOT)
    except Unreachable as unreachable:
        pytest.fail(str(unreachable), pytrace=False)
    ensure_proxy()
    root = Path(tempfile.mkdtemp(prefix="attncourse-classroom-"))
    root.chmod(0o755)
    accounts = tuple(Account(n, r, secrets.token_urlsafe(9)) for n, r in ROLES.items())
    ports = {"port": free_port(), "hub_port": free_port(), "api_port": free_port()}
    return provision(Classroom(root, accounts, **ports))


def remove_classroom(room: Classroom):
    """Delete the test accounts, their homes and everything under the classroom's root."""
    for account in room.accounts:
        remove(account.name)
    shutil.rmtree(room.root, ignore_errors=True)


def password(room: Classroom, name: str) -> str:
    return next(a.password for a in room.accounts if a.name == name)


def as_user(room: Classroom, name: str, *cmd, cwd=None, timeout=300):
    """Run ``cmd`` as ``name`` with what their server would have (role config, environment)."""
    extra = room.server_environment(name) if room.role(name) else {}
    return run_as(
        name,
        list(cmd),
        env=environment(name, **extra),
        cwd=cwd or room.home(name),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def nbgrader_as(room: Classroom, name: str, *args, cwd=None):
    """``nbgrader <args>`` as ``name`` (the instructor's in the course directory)."""
    if cwd is None and room.role(name) == "instructor":
        cwd = room.course
    return as_user(room, name, room.env / "bin" / "nbgrader", *args, cwd=cwd)


# Run as an account: try each path given, print "<path>\t<errno name or ok>".
TRY_PATHS = """import errno, os, sys
for path in sys.argv[1:]:
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            open(path, "rb").close()
        print(path, "ok", sep="\\t")
    except OSError as e:
        print(path, errno.errorcode[e.errno], sep="\\t")
"""


def try_reading(room: Classroom, name: str, paths) -> dict:
    """What ``name`` gets reading (or listing) each path: ``ok`` or the errno's name."""
    result = as_user(room, name, room.env / "bin" / "python", "-c", TRY_PATHS, *map(str, paths))
    assert result.returncode == 0, result.stderr
    return dict(line.split("\t") for line in result.stdout.splitlines())
