"""The spare kernel: started for this process's next notebook while the current one runs.

With ``ResilientExecute.prewarm`` on, a grading process keeps at most one kernel started
ahead (its start overlaps the current notebook's run); the next notebook adopts it when it
was started for the same kernel, else it is killed. One left at exit is killed too. The
:class:`SpareKernel` belongs to the process and is passed in (``ResilientExecute.spare``).
"""

import atexit
import os
import signal
from collections.abc import Hashable

from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync

from attncourse.sandbox.workspace import Workspace


class SpareKernel:
    """At most one kernel started ahead for this process's next notebook."""

    def __init__(self) -> None:
        self._spare: tuple[Hashable, Workspace, AsyncKernelManager] | None = None
        atexit.register(self.discard)

    def __deepcopy__(self, memo: dict) -> "SpareKernel":
        return self  # one per process: traitlets copies config values, this one is shared

    def waiting(self) -> bool:
        """Whether a spare kernel is started and not yet taken."""
        return self._spare is not None

    def take(self, key: Hashable) -> tuple[Workspace, AsyncKernelManager | None]:
        """The spare's workspace and kernel manager if it fits ``key``, else a fresh workspace
        and None (a spare that does not fit is killed)."""
        spare, self._spare = self._spare, None
        if spare is not None:
            if spare[0] == key and run_sync(spare[2].is_alive)():
                return spare[1], spare[2]
            _discard(spare)
        return Workspace(), None

    async def start(
        self,
        key: Hashable,
        km: AsyncKernelManager,
        workspace: Workspace,
        extra_arguments: list[str],
    ) -> None:
        """Start ``km``'s kernel in ``workspace`` as the spare for notebooks of ``key``."""
        await km.start_kernel(extra_arguments=list(extra_arguments), cwd=str(workspace.work))
        self._spare = (key, workspace, km)

    def discard(self) -> None:
        """Kill the spare, if any (at exit, too)."""
        spare, self._spare = self._spare, None
        if spare is not None:
            _discard(spare)


def _discard(spare: tuple[Hashable, Workspace, AsyncKernelManager]) -> None:
    _, workspace, km = spare
    pgid = getattr(km.provisioner, "pgid", None)
    if pgid:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
    workspace.remove()
