"""A folder as data: ``{relative path: (bytes, mode)}``, read and written without following a link.

How a submission travels from the client to a worker and the autograded folder back.
"""

import os
import shutil
import stat
from pathlib import Path, PurePosixPath

from attncourse.handoffs import FileTree
from attncourse.plainfiles import refusal


def read_tree(folder: str | os.PathLike) -> dict[str, tuple[bytes, int]]:
    """``{relative path: (bytes, mode)}`` of the regular files under ``folder``, no link followed."""
    files: dict[str, tuple[bytes, int]] = {}
    folder = Path(folder)
    for parent, dirnames, filenames in os.walk(folder):
        for name in [*filenames, *dirnames]:
            path = Path(parent) / name
            if refusal(path) is None and not path.is_dir():
                rel = path.relative_to(folder).as_posix()
                files[rel] = (path.read_bytes(), stat.S_IMODE(os.lstat(path).st_mode))
    return files


def write_tree(folder: str | os.PathLike, files: FileTree) -> None:
    """Replace ``folder`` with ``files`` (as :func:`read_tree` gives them)."""
    folder = Path(folder)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for rel, (data, mode) in files.items():
        parts = PurePosixPath(rel).parts
        if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
            raise ValueError(f"refusing to write {rel!r} outside {folder}")
        path = folder.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.chmod(path, mode)  # as nbgrader left it (autograded files are read-only)
