"""The course's environment (torch, numpy, JupyterLab, nbgrader) for every account.

A venv's interpreter is a link to the Python it was made with, which other accounts may not
be able to run (one built under ``/root``). :func:`reroot` makes a venv they can run: the
same Python (its interpreter, shared library and standard library, hard-linked, or copied
across file systems, to ``python/`` beside it) with the venv's ``lib``, ``share`` and ``etc``
linked and its console scripts copied to start the new interpreter. Processes run from it
need ``LD_LIBRARY_PATH=<python>/lib`` (:func:`library_path`): the interpreter's own search
path for its shared library points into the original installation.
"""

import os
import shutil
import sys
from pathlib import Path

LINKED = ("lib", "lib64", "include", "share", "etc")
VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"


def _link_or_copy(src, dst):
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def share_python(base: Path, dest: Path) -> Path:
    """The Python installed at ``base`` (``sys.base_prefix``), under ``dest``: its interpreter,
    shared library and standard library (no site-packages, no tests). Returns the interpreter."""
    (dest / "bin").mkdir(parents=True, mode=0o755)
    (dest / "lib").mkdir(mode=0o755)
    shutil.copytree(
        base / "lib" / f"python{VERSION}",
        dest / "lib" / f"python{VERSION}",
        ignore=shutil.ignore_patterns("site-packages", "test", "idlelib", "tkinter"),
        copy_function=_link_or_copy,
    )
    for lib in (base / "lib").glob(f"libpython{VERSION}*.so*"):
        _link_or_copy(lib, dest / "lib" / lib.name)
    python = dest / "bin" / f"python{VERSION}"
    _link_or_copy(os.path.realpath(base / "bin" / f"python{VERSION}"), python)
    return python


def library_path(dest: Path) -> str:
    """``LD_LIBRARY_PATH`` for processes of the venv :func:`reroot` made at ``dest``."""
    return str(Path(dest).parent / "python" / "lib")


def reroot(venv: Path, dest: Path) -> Path:
    """A venv at ``dest`` sharing ``venv``'s packages, run by a copy of its Python at
    ``dest/../python`` (both replaced when there)."""
    venv, dest = Path(venv), Path(dest)
    for old in (dest, dest.parent / "python"):
        if old.exists():
            shutil.rmtree(old)
    python = share_python(Path(sys.base_prefix), dest.parent / "python")
    (dest / "bin").mkdir(parents=True, mode=0o755)
    dest.chmod(0o755)
    (dest / "pyvenv.cfg").write_text(
        f"home = {python.parent}\ninclude-system-site-packages = false\nversion = {VERSION}\n"
    )
    for name in ("python", "python3", f"python{VERSION}"):
        (dest / "bin" / name).symlink_to(python)
    for name in LINKED:
        if (venv / name).exists():
            (dest / name).symlink_to((venv / name).resolve())
    own = f"#!{venv / 'bin'}/python"
    for script in (venv / "bin").iterdir():
        if script.is_symlink() or not script.is_file():
            continue
        with open(script, "rb") as f:
            first = f.readline().decode(errors="replace")
            if not first.startswith(own):
                continue
            rest = f.read()
        copy = dest / "bin" / script.name
        copy.write_bytes(f"#!{dest / 'bin' / 'python'}\n".encode() + rest)
        copy.chmod(0o755)
    return dest
