"""Where the course lives and how to call nbgrader on it."""

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from attncourse.constants import SOURCE

ROOT = Path(__file__).resolve().parent.parent
# Course order, gentlest first: the worksheet, the theory, the 14-part variants study, MLA
# inference, attention at scale.
ASSIGNMENTS = (
    "attention_worksheet",
    "attention_theory",
    "attention_variants",
    "mla_inference",
    "attention_at_scale",
)


def assignments(root=ROOT):
    """Assignment ids present under ``root/source``, in course order."""
    present = {p.name for p in (Path(root) / SOURCE).iterdir() if p.is_dir()}
    return [a for a in ASSIGNMENTS if a in present] + sorted(present - set(ASSIGNMENTS))


def notebook_path(root, folder, assignment, student=None):
    """Path of an assignment's notebook in ``folder`` (source, release, submitted, autograded, ...)."""
    base = Path(root) / folder
    if student is not None:
        base = base / student
    return base / assignment / f"{assignment}.ipynb"


def source_notebook(coursedir, assignment_id, notebook_id):
    """The instructor's notebook in the ``source/`` folder of nbgrader's ``coursedir`` (a
    ``CourseDirectory``), or None."""
    path = Path(coursedir.format_path(coursedir.source_directory, ".", assignment_id))
    path = path / f"{notebook_id}.ipynb"
    return nbformat.read(path, as_version=4) if path.exists() else None


def release_notebook(coursedir, resources):
    """The notebook students were given of the one nbgrader is converting (``resources``
    name it), from the ``release/`` folder of ``coursedir`` (a ``CourseDirectory``), or None."""
    info = resources["nbgrader"]
    path = Path(coursedir.format_path(coursedir.release_directory, ".", info["assignment"]))
    path = path / f"{info['notebook']}.ipynb"
    return nbformat.read(path, as_version=4) if path.exists() else None


def course_config(course=ROOT):
    """The course's ``nbgrader_config.py``, loaded."""
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()


def _course_directory(course, config):
    from nbgrader.coursedir import CourseDirectory

    config = course_config(course) if config is None else config
    return CourseDirectory(config=config, root=str(course))


def configured_db_url(course=ROOT, config=None):
    """The gradebook URL the course's nbgrader_config.py gives (nbgrader's default otherwise)."""
    return _course_directory(course, config).db_url


def configured_course_id(course=ROOT, config=None):
    """The course id the course's nbgrader_config.py gives: its one home."""
    return _course_directory(course, config).course_id


def nbgrader(*args, cwd=ROOT, check=True, quiet=False, log=None):
    """Run an nbgrader command in the course directory ``cwd``; ``quiet`` drops what it
    prints, ``log`` (a path) appends it there."""
    cmd = [str(Path(sys.executable).with_name("nbgrader")), *map(str, args)]
    if not Path(cmd[0]).exists():
        cmd[0] = shutil.which("nbgrader") or "nbgrader"
    env = {**os.environ, "PATH": venv_path(), "PYTHONWARNINGS": "ignore"}
    with open(log, "a") if log is not None else contextlib.nullcontext() as logfile:
        out = logfile or (subprocess.DEVNULL if quiet else None)
        return subprocess.run(cmd, cwd=cwd, check=check, stdout=out, stderr=out, env=env)


def venv_path():
    """PATH with this interpreter's bin first (nbgrader runs ``alembic`` from PATH)."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def scratch_course(dest, root=ROOT):
    """Copy the course's config and ``source/`` into ``dest`` (a fresh course directory)."""
    dest = Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    shutil.copy2(Path(root) / "nbgrader_config.py", dest / "nbgrader_config.py")
    shutil.copytree(
        Path(root) / SOURCE, dest / SOURCE, ignore=shutil.ignore_patterns(".ipynb_checkpoints")
    )
    return dest
