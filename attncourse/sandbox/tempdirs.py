"""The grader's private temporary folders (a fork server's, a kernel's), each holding the id of
the process that owns it (in a file: a longer name would lengthen the kernel's socket paths
past the system's limit), so that a worker starting after one was killed removes what it left
and nothing of a process still alive."""

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

KERNEL, FORKSERVER = "attncourse-kernel-", "attncourse-forkserver-"
OWNER = ".owner"  # the owning process's id, in each folder


def owned_tempdir(prefix: str) -> Path:
    """A new 0700 folder in the temporary directory, named ``prefix`` and a random tail, that
    records this process as its owner."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    (path / OWNER).write_text(str(os.getpid()))
    return path


def remove_stale(where: str | os.PathLike | None = None) -> list[Path]:
    """Remove the grader's folders in ``where`` (default: the temporary directory) whose
    owning process is gone (a process that is only a zombie is gone); return them. A folder
    without its owner's record is left alone."""
    import psutil

    removed = []
    for prefix in (KERNEL, FORKSERVER):
        for path in Path(where or tempfile.gettempdir()).glob(f"{prefix}*"):
            owner = _owner(path / OWNER)
            if owner is not None and not path.is_symlink() and not _alive(psutil, owner):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    return removed


def _owner(record: Path) -> int | None:
    try:
        return int(record.read_text())
    except (OSError, ValueError):
        return None


def alive(pid: int) -> bool:
    """Whether process ``pid`` lives (one that is only a zombie is gone; another user's counts
    as alive, not ours to judge)."""
    import psutil

    return _alive(psutil, pid)


def _alive(psutil: Any, pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # someone else's: not ours to judge
