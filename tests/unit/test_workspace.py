"""A kernel's workspace is removed whole even while its kernel, just killed, still writes.

A kernel forked from a fork server this process does not own (the one the test suite hands
down) dies a moment after its launcher, when that server sees the launcher gone; a spare kernel
killed while starting still writes its IPython and matplotlib folders. Stop 48's make test left
such a folder behind in the soak: one ``rmtree`` had failed on a file written after it listed
the folder. ``Workspace.remove`` tries again until nothing is left.
"""

import shutil

from attncourse.sandbox import workspace as workspace_module
from attncourse.sandbox.workspace import Workspace


def _late_writes(monkeypatch, times):
    """``rmtree`` as it goes while a dying kernel writes: the first ``times`` removals leave a
    file written in the working copy after the folder was listed."""
    real = shutil.rmtree
    left = [times]

    def rmtree(path, ignore_errors=False):
        real(path, ignore_errors=ignore_errors)
        if left[0]:
            left[0] -= 1
            (path / "work").mkdir(parents=True)
            (path / "work" / "late.txt").write_text("written while the folder was removed")

    monkeypatch.setattr(workspace_module.shutil, "rmtree", rmtree)


def test_a_removal_that_a_late_write_defeats_is_tried_again(monkeypatch):
    workspace = Workspace()
    _late_writes(monkeypatch, 3)
    workspace.remove()
    assert not workspace.root.exists()


def test_control_without_patience_the_late_write_is_left(monkeypatch):
    workspace = Workspace()
    _late_writes(monkeypatch, 1)
    try:
        workspace.remove(patience_s=0)
        assert (workspace.root / "work" / "late.txt").exists()
    finally:
        monkeypatch.undo()
        shutil.rmtree(workspace.root, ignore_errors=True)
