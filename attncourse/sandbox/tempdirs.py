"""The grader's private temporary folders (a fork server's, a kernel's), named by the process
that owns them, so that a worker starting after one was killed removes what it left and
nothing of a process still alive."""

import os
import re
import shutil
import tempfile
from pathlib import Path

KERNEL, FORKSERVER = "attncourse-kernel-", "attncourse-forkserver-"
_OWNED = re.compile(rf"^(?:{KERNEL}|{FORKSERVER})(\d+)-")


def owned_tempdir(prefix: str) -> Path:
    """A new 0700 folder in the temporary directory, named ``prefix``, this process's id, ``-``."""
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))


def remove_stale(where: str | os.PathLike | None = None) -> list[Path]:
    """Remove the grader's folders in ``where`` (default: the temporary directory) whose
    owning process is gone (a process that is only a zombie is gone); return them."""
    import psutil

    removed = []
    for path in Path(where or tempfile.gettempdir()).glob("attncourse-*"):
        match = _OWNED.match(path.name)
        if match and path.is_dir() and not path.is_symlink() and not _alive(psutil, match[1]):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _alive(psutil, pid: str) -> bool:
    try:
        return psutil.Process(int(pid)).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # someone else's: not ours to judge
