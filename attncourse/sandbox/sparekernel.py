"""The spare kernel: started for this process's next notebook while the current one runs.

With ``ResilientExecute.prewarm`` on, a grading process keeps at most one kernel started
ahead (its start overlaps the current notebook's run); the next notebook adopts it when it
was started for the same kernel, else it is killed. One left at exit is killed too.
"""

import atexit
import os
import signal

from jupyter_client.manager import KernelManager
from jupyter_core.utils import run_sync

from attncourse.sandbox.workspace import Workspace

_spare = None  # (key, workspace, started kernel manager) for the next notebook of this process


def waiting() -> bool:
    """Whether a spare kernel is started and not yet taken."""
    return _spare is not None


def take(key) -> tuple[Workspace, KernelManager | None]:
    """The spare's workspace and kernel manager if it fits ``key``, else a fresh workspace
    and None (a spare that does not fit is killed)."""
    global _spare
    spare, _spare = _spare, None
    if spare is not None:
        if spare[0] == key and run_sync(spare[2].is_alive)():
            return spare[1], spare[2]
        _discard(spare)
    return Workspace(), None


async def start(key, km: KernelManager, workspace: Workspace, extra_arguments: list[str]) -> None:
    """Start ``km``'s kernel in ``workspace`` as the spare for notebooks of ``key``."""
    global _spare
    await km.start_kernel(extra_arguments=list(extra_arguments), cwd=str(workspace.work))
    _spare = (key, workspace, km)


def _discard(spare):
    _, workspace, km = spare
    pgid = getattr(km.provisioner, "pgid", None)
    if pgid:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
    workspace.remove()


@atexit.register
def _discard_spare():
    global _spare
    if _spare is not None:
        spare, _spare = _spare, None
        _discard(spare)
