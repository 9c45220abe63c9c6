"""A classroom under one root directory, set up as root: the accounts, the hub-wide exchange,
the instructor's private course directory and what each role's Jupyter server loads.

Layout (``root`` is ``/srv/attncourse-classroom`` for ``make classroom``, a temporary
folder in the tests)::

    home/<account>/          each account's home, mode 700
    home/<instructor>/<course id>/  the course: config, source/, release/, attncourse/ (700)
    exchange/                nbgrader's exchange, mode 1777, and in it the course's folder
                             (the instructor's): outbound 755, inbound 3733, feedback 711
    roles/<role>/            Jupyter configuration of a role's servers (JUPYTER_CONFIG_PATH)
    env/, python/            the course's environment, run by every account (environment.py)
    lib/                     the students' submit plugin (attncourse_submit.py)
    hub/                     JupyterHub's database, cookie secret and proxy pid file
    classroom.json           this classroom, as jupyterhub_config.py loads it
"""

import json
import os
import shutil
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from attncourse.course import ROOT, configured_course_id
from classroom.accounts import Account, ensure
from classroom.environment import library_path, reroot
from classroom.reach import check_reach

# The students' nbgrader submit plugin (nothing of the course in it), on their PYTHONPATH.
SUBMIT = Path(__file__).with_name("attncourse_submit.py")
# What the instructor's course directory holds of the repository.
COURSE_FILES = ("nbgrader_config.py", "source", "release", "attncourse")
# The checkout's folders no student may read (the environment students run from is inside it).
PRIVATE = ("source", "attncourse/grading", "demo", "tests")
# nbgrader's server extensions per role: students fetch, validate and submit; the instructor
# also runs formgrader and the course list.
SERVER_EXTENSIONS = {
    "student": {"assignment_list": True, "validate_assignment": True}
    | {"formgrader": False, "course_list": False},
    "instructor": {"assignment_list": True, "validate_assignment": True}
    | {"formgrader": True, "course_list": True},
}
# JupyterLab plugins of nbgrader a role does not see.
LAB_DISABLED = {
    "student": ("formgrader", "course-list", "create-assignment"),
    "instructor": (),
}
# The course's folders in the exchange, as nbgrader's release_assignment makes them, but the
# inbound sticky (nbgrader's is 2733: anyone who may write there may rename what is in it).
EXCHANGE_FOLDERS = {"": 0o755, "outbound": 0o755, "inbound": 0o3733, "feedback": 0o711}
# Appended to the course directory's copy of nbgrader_config.py.
HUB_CONFIG = """
# The classroom's hub (classroom/provision.py): the hub-wide exchange, and a submission
# counts only from its student's own Unix account.
c.Exchange.root = {exchange!r}
c.PlainFilesCollect.owner_must_match = True
"""
STUDENT_CONFIG = '''"""nbgrader on a student's server (classroom/provision.py)."""

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = {course_id!r}
c.Exchange.root = {exchange!r}
# Submissions readable by their student and the instructor only (classroom/attncourse_submit.py).
c.ExchangeFactory.submit = "attncourse_submit.PrivateSubmit"
'''
INSTRUCTOR_CONFIG = '''"""nbgrader on the instructor's server: the course's own settings (classroom/provision.py)."""

c = get_config()  # noqa: F821
load_subconfig("nbgrader_config.py", path={course!r})  # noqa: F821
c.CourseDirectory.root = {course!r}
'''


class NoCourseAccess(PermissionError):
    """A hub user who is neither a student nor an instructor of the course."""


@dataclass(frozen=True)
class Classroom:
    """Where a classroom's parts live, and its accounts."""

    root: Path
    accounts: tuple[Account, ...]
    port: int = 8000
    hub_port: int = 8081
    api_port: int = 8001
    checkout: Path = ROOT
    venv: Path = Path(sys.prefix)

    @property
    def exchange(self) -> Path:
        return self.root / "exchange"

    @property
    def env(self) -> Path:
        return self.root / "env"

    @property
    def lib(self) -> Path:
        return self.root / "lib"

    @property
    def settings(self) -> Path:
        return self.root / "classroom.json"

    @cached_property
    def course_id(self) -> str:
        return configured_course_id(self.checkout)

    @property
    def instructor(self) -> Account:
        return next(a for a in self.accounts if a.role == "instructor")

    @property
    def course(self) -> Path:
        return self.home(self.instructor.name) / self.course_id

    @property
    def proxy(self) -> Path:
        return self.checkout / "node_modules" / ".bin" / "configurable-http-proxy"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def role(self, name: str) -> str:
        """``name``'s role in the course: instructor, student, or "" (none)."""
        return next((a.role for a in self.accounts if a.name == name), "")

    def server_environment(self, name: str) -> dict:
        """What a server or command of ``name`` needs: its role's Jupyter configuration, the
        course's environment first on PATH and, on PYTHONPATH, the students' submit plugin
        or, for the instructor, the course's own ``attncourse`` (with its grading code)."""
        role = self.role(name)
        if not role:
            raise NoCourseAccess(
                f"{name} has no access to this course: you are neither a student nor an "
                "instructor of it. Ask the instructor to add you to the course's roster."
            )
        return {
            "JUPYTER_CONFIG_PATH": str(self.roles(role)),
            "PATH": f"{self.env / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "LD_LIBRARY_PATH": library_path(self.env),
            "PYTHONPATH": str(self.course if role == "instructor" else self.lib),
        }

    def home(self, name: str) -> Path:
        return self.root / "home" / name

    def roles(self, role: str) -> Path:
        return self.root / "roles" / role


def load(settings: str | os.PathLike) -> Classroom:
    """The classroom that :func:`provision` described in ``settings`` (no passwords)."""
    room = json.loads(Path(settings).read_text())
    accounts = tuple(Account(name, role, "") for name, role in room["accounts"].items())
    paths = {k: Path(room[k]) for k in ("root", "checkout", "venv")}
    ports = {k: room[k] for k in ("port", "hub_port", "api_port")}
    return Classroom(accounts=accounts, **ports, **paths)


def provision(room: Classroom) -> Classroom:
    """Create (or bring up to date) every part of ``room``; a course directory already there
    is kept with its gradebook, a term's work. Raises :class:`~classroom.reach.Unreachable`,
    before anything is made, if the accounts could not reach the course's environment."""
    check_reach(room.venv, room.checkout)
    for path in (room.root, room.root / "home", room.root / "roles"):
        path.mkdir(mode=0o755, parents=True, exist_ok=True)
    users = {a.name: ensure(a, room.root / "home") for a in room.accounts}
    reroot(room.venv, room.env)
    room.lib.mkdir(mode=0o755, exist_ok=True)
    shutil.copy(SUBMIT, room.lib / SUBMIT.name)
    (room.lib / SUBMIT.name).chmod(0o644)
    _make_exchange(room, users[room.instructor.name])
    (room.root / "hub").mkdir(mode=0o700, exist_ok=True)
    if not room.course.exists():
        _copy_course(room, users[room.instructor.name])
    for role in SERVER_EXTENSIONS:
        _write_role(room, role)
    room.settings.write_text(
        json.dumps(
            {
                "root": str(room.root),
                "port": room.port,
                "hub_port": room.hub_port,
                "api_port": room.api_port,
                "checkout": str(room.checkout),
                "venv": str(room.venv),
                "accounts": {a.name: a.role for a in room.accounts},
            },
            indent=1,
        )
    )
    return room


def _make_exchange(room, user):
    """The exchange as nbgrader's release makes it, and a sticky inbound: a student who may
    write there cannot rename or delete another student's submission."""
    room.exchange.mkdir(exist_ok=True)
    room.exchange.chmod(0o1777)
    course = room.exchange / room.course_id
    for path, mode in EXCHANGE_FOLDERS.items():
        folder = course / path
        folder.mkdir(exist_ok=True)
        shutil.chown(folder, user.pw_uid, user.pw_gid)
        folder.chmod(mode)


def _copy_course(room, user):
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints")
    room.course.mkdir(mode=0o700)
    for name in COURSE_FILES:
        src = room.checkout / name
        if src.is_dir():
            shutil.copytree(src, room.course / name, ignore=ignore)
        else:
            shutil.copy2(src, room.course / name)
    with open(room.course / "nbgrader_config.py", "a") as config:
        config.write(HUB_CONFIG.format(exchange=str(room.exchange)))
    for path in [room.course, *room.course.rglob("*")]:
        shutil.chown(path, user.pw_uid, user.pw_gid)


def _write_role(room, role):
    folder = room.roles(role)
    (folder / "labconfig").mkdir(mode=0o755, parents=True, exist_ok=True)
    extensions = {f"nbgrader.server_extensions.{k}": v for k, v in SERVER_EXTENSIONS[role].items()}
    if role == "instructor":  # formgrader's list of a notebook's submissions in linear time
        extensions["attncourse.gradebookview"] = True
    disabled = {f"@jupyter/nbgrader:{name}": True for name in LAB_DISABLED[role]}
    files = {
        "jupyter_server_config.json": {"ServerApp": {"jpserver_extensions": extensions}},
        "labconfig/page_config.json": {"disabledExtensions": disabled},
    }
    for name, content in files.items():
        (folder / name).write_text(json.dumps(content, indent=1))
    template = INSTRUCTOR_CONFIG if role == "instructor" else STUDENT_CONFIG
    config = template.format(
        course_id=room.course_id, exchange=str(room.exchange), course=str(room.course)
    )
    (folder / "nbgrader_config.py").write_text(config)
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def exposed(room: Classroom) -> list[Path]:
    """The checkout's private folders that other accounts can read (students' servers run
    from its environment, so they can reach it)."""
    paths = [room.checkout / p for p in PRIVATE]
    return [p for p in paths if p.exists() and p.stat().st_mode & 0o005]
