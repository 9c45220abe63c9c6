"""A kernel's private directories, outside the course tree: its working copy and its run
directory (sockets, connection file, the launcher's record)."""

import os
import shutil
import time
from pathlib import Path
from typing import Any

from attncourse.sandbox.kernelmanager import SandboxKernelManager
from attncourse.sandbox.tempdirs import KERNEL, owned_tempdir


class Workspace:
    """A kernel's private directories: ``work`` (its cwd, the student's files) and ``run``."""

    def __init__(self) -> None:
        self.root = Path(owned_tempdir(KERNEL))
        os.chmod(self.root, 0o711)
        self.work = self.root / "work"
        self.run = self.root / "run"
        self.work.mkdir()
        self.run.mkdir()

    def give_to(self, km: Any) -> None:
        """Hand files copied in after ``km``'s kernel started to that kernel's uid."""
        uid = km.protections().get("uid") if isinstance(km, SandboxKernelManager) else None
        if uid is not None:
            for path in [self.work, *self.work.rglob("*")]:
                os.lchown(path, uid, uid)

    def remove(self, patience_s: float = 5.0) -> None:
        """Remove both directories. A kernel just killed may still write in them for a moment
        (one forked from a server this process does not own dies when that server sees its
        launcher gone, up to 0.2 s later; a spare kernel killed while starting writes its
        IPython and matplotlib folders): removal is tried again until nothing is left, for at
        most ``patience_s``."""
        deadline = time.monotonic() + patience_s
        while True:
            shutil.rmtree(self.root, ignore_errors=True)
            if not os.path.lexists(self.root) or time.monotonic() > deadline:
                return
            time.sleep(0.05)
