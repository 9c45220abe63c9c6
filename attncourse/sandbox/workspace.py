"""A kernel's private directories, outside the course tree: its working copy and its run
directory (sockets, connection file, the launcher's record)."""

import os
import shutil
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

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
