"""The kernel's own memory cgroup: made by the launcher, joined by the sandbox's first process.

It counts all the memory of the kernel's processes, swap and the pages of its tmpfs scratch
included, and goes when the kernel does. Under cgroup v1 it is a child of the grader's memory
cgroup; under cgroup v2 too where memory is delegated to the grader's children, else a sibling
of the grader's cgroup (cgroup v2 gives no controller to the children of a cgroup that holds
processes, as the grader's does). The grader makes it, so it needs root or a delegated cgroup.
The grader side finds where (:func:`memory_cgroup_parent`) and removes what kernels left
(:func:`remove_cgroups`).
"""

import contextlib
import errno
import hashlib
import os
import signal
import time
from pathlib import Path

from attncourse.sandbox.linux import write

CGROUP_PREFIX = "attncourse-"


def cgroup_prefix(run: str | os.PathLike) -> str:
    """The name of the cgroups of the kernels of run directory ``run``, less the launcher's pid."""
    return f"{CGROUP_PREFIX}{hashlib.sha256(str(run).encode()).hexdigest()[:12]}-"


def _cgroup_limits(version, limit):
    """(file, value, required) that cap a cgroup's memory, swap included, at ``limit`` bytes."""
    if version == "v1":  # memsw is memory + swap; it may be set only after the memory limit
        return [
            ("memory.limit_in_bytes", limit, True),
            ("memory.memsw.limit_in_bytes", limit, False),
        ]
    return [("memory.max", limit, True), ("memory.swap.max", 0, False)]


def _cgroup_version(path):
    """The version of the new cgroup at ``path``, by the memory limit file it has."""
    for version, limit in [("v2", "memory.max"), ("v1", "memory.limit_in_bytes")]:
        if os.path.exists(os.path.join(path, limit)):
            return version
    raise OSError(errno.ENOTSUP, "it has no memory controller")


def create_cgroup(cgroup: dict | None, got: dict) -> tuple[str, str, int] | None:
    """Make the kernel's memory cgroup as the spec's ``cgroup`` says; return (its directory,
    its version, an fd of its ``cgroup.procs`` for the sandbox's init to join it by), or None
    with the reason in ``got`` where the platform refuses one."""
    got["cgroup"] = False
    if not cgroup or "error" in cgroup:
        got["cgroup_error"] = (cgroup or {}).get("error", "no cgroup asked for")
        return None
    path = os.path.join(cgroup["parent"], f"{cgroup['prefix']}{os.getpid()}")
    try:
        os.mkdir(path)
    except OSError as e:
        got["cgroup_error"] = f"cannot create a cgroup in {cgroup['parent']}: {e.strerror}"
        return None
    try:
        version = _cgroup_version(path)
        for name, value, required in _cgroup_limits(version, cgroup["limit"]):
            if required or os.path.exists(os.path.join(path, name)):
                write(os.path.join(path, name), str(value))
        procs = os.open(os.path.join(path, "cgroup.procs"), os.O_WRONLY)
    except OSError as e:
        remove_cgroup(path)
        got["cgroup_error"] = f"cannot limit the memory of a cgroup in {cgroup['parent']}: {e}"
        return None
    got.update(cgroup=version, cgroup_memory=cgroup["limit"])
    return path, version, procs


def join_cgroup(cgroup: tuple[str, str, int], got: dict) -> None:
    """Move this process (the sandbox's init: all the kernel's processes descend from it)
    into the cgroup made by :func:`create_cgroup`."""
    path, _, procs = cgroup
    try:
        os.write(procs, b"0")
    except OSError as e:
        got.update(cgroup=False, cgroup_error=f"cannot join {path}: {e.strerror}")
    os.close(procs)


def _cgroup_pids(path):
    try:
        return [int(pid) for pid in Path(path, "cgroup.procs").read_text().split()]
    except OSError:
        return []


def remove_cgroup(path: str, seconds: float = 2.0) -> bool:
    """Kill what is left in the cgroup at ``path`` and remove it; whether it is gone."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError as e:
            if e.errno != errno.EBUSY or time.monotonic() > deadline:
                return False
        for pid in _cgroup_pids(path):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's
    return True


def remove_cgroups(parent: str, prefix: str | None = None) -> None:
    """Remove the kernel cgroups under ``parent`` that are done with: those named ``prefix``...
    (a kernel that was shut down: what is left in them is killed), and those whose launcher
    has exited and that hold no process (left behind by a killed grader or launcher)."""
    try:
        names = [n for n in os.listdir(parent) if n.startswith(CGROUP_PREFIX)]
    except OSError:
        return
    for name in names:
        path = os.path.join(parent, name)
        if prefix and name.startswith(prefix):
            remove_cgroup(path)
            continue
        launcher = name.rsplit("-", 1)[-1]
        if launcher.isdigit() and not _alive(int(launcher)) and not _cgroup_pids(path):
            with contextlib.suppress(OSError):
                os.rmdir(path)


def _cgroup_dirs():
    """{"v1": this process's memory cgroup, "v2": its cgroup v2} as directories, for each
    hierarchy mounted here."""
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, fs = line.split(" - ", 1)
        fstype, _, options = fs.split(" ", 2)
        mounts.append((fstype, fields.split()[3], fields.split()[4], options.split(",")))
    dirs = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for fstype, root, point, opts in mounts:
            v1 = fstype == "cgroup" and "memory" in opts and "memory" in controllers.split(",")
            v2 = fstype == "cgroup2" and not controllers
            relative = os.path.relpath(path, root)
            if (v1 or v2) and not relative.startswith(".."):
                dirs["v1" if v1 else "v2"] = os.path.normpath(os.path.join(point, relative))
    return dirs


def _words(path, name):
    try:
        return Path(path, name).read_text().split()
    except OSError:
        return []


def memory_cgroup_parent(dirs: dict[str, str] | None = None) -> str:
    """The directory in which the kernels of this process get their memory cgroups; raises
    OSError saying why there is none.

    cgroup v1: this process's memory cgroup. cgroup v2: its cgroup where that delegates the
    memory controller to its children; otherwise its parent (a cgroup that holds processes, as
    the grader's does, cannot give controllers to children: the "no internal processes" rule).
    Where the grader's cgroup is the top of what it sees (a container's), run the grader in a
    child of it instead, with memory enabled for the children of the top.
    """
    dirs = _cgroup_dirs() if dirs is None else dirs
    if "v1" in dirs:
        return dirs["v1"]
    own = dirs.get("v2")
    if own is None:
        raise OSError(errno.ENOENT, "no memory cgroup hierarchy is mounted")
    if "memory" not in _words(own, "cgroup.controllers"):
        raise OSError(errno.ENOTSUP, f"cgroup v2 gives {own} no memory controller")
    if "memory" in _words(own, "cgroup.subtree_control"):
        return own
    with contextlib.suppress(OSError):  # possible only where it holds no process
        write(os.path.join(own, "cgroup.subtree_control"), "+memory")
        return own
    parent = os.path.dirname(own)
    if os.path.ismount(own) or "memory" not in _words(parent, "cgroup.subtree_control"):
        raise OSError(
            errno.EBUSY,
            f"cgroup v2: {own} holds processes, so its children get no memory controller, "
            "and its parent is out of reach; run the grader in a child cgroup of it",
        )
    return parent
