"""The course's environment (torch, numpy, JupyterLab, nbgrader) for every account.

A venv's interpreter is a link to the Python it was made with; where that one is out of
other accounts' reach (a Python built under ``/root``), :func:`reroot` makes a venv of the
system's Python of the same version whose ``lib``, ``share`` and ``etc`` are links to the
course's venv, and whose console scripts are copies that start the new interpreter.
"""

import os
import shutil
import sys
from pathlib import Path

LINKED = ("lib", "lib64", "include", "share", "etc")


def others_can_run(path: Path) -> bool:
    """True when an account other than the owner may execute ``path`` (every folder on the way
    searchable by others)."""
    path = Path(os.path.realpath(path))
    folders_open = all(p.stat().st_mode & 0o001 for p in path.parents)
    return path.is_file() and folders_open and bool(path.stat().st_mode & 0o001)


def system_python(version: str) -> Path:
    """``python<version>`` of the system, runnable by every account."""
    for folder in ("/usr/local/bin", "/usr/bin"):
        python = Path(folder) / f"python{version}"
        if python.exists() and others_can_run(python):
            return python
    raise FileNotFoundError(
        f"no python{version} that every account may run in /usr/local/bin or /usr/bin: "
        f"install it (apt-get install python{version}) or build .venv from such a Python"
    )


def reroot(venv: Path, dest: Path) -> Path:
    """A venv at ``dest`` sharing ``venv``'s packages, run by the system's Python."""
    venv, dest = Path(venv), Path(dest)
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    python = system_python(version)
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "bin").mkdir(parents=True, mode=0o755)
    dest.chmod(0o755)
    (dest / "pyvenv.cfg").write_text(
        f"home = {python.parent}\ninclude-system-site-packages = false\nversion = {version}\n"
    )
    for name in ("python", "python3", f"python{version}"):
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
