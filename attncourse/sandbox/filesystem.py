"""What a sandboxed kernel sees of the filesystem (in its own mount namespace).

Every top-level directory that is not the operating system (``/tmp``, ``/home``, ``/root``,
``/work``, ``/var``, ...) is covered by an empty read-only tmpfs, then only the Python
environment and the files of the package's kernel side
(:data:`attncourse.sandbox.KERNEL_MODULES`) are mounted back read-only, so ``source/``, the
gradebook, the grading code and other students' work do not exist for it.

One scratch tmpfs (``tmpfs_mb``) takes all the kernel writes: ``/tmp``, ``/var/tmp``,
``/dev/shm``, its run directory and, through an overlay, what it changes in its working
copy, so nothing it writes reaches the grader's disk but its log. The grader reaches the
kernel's sockets through links, in the grader's run directory, to where they are in the
sandbox (``/proc/LAUNCHER/root/...``).
"""

import contextlib
import json
import os
import stat
from pathlib import Path

from attncourse.sandbox.linux import (
    MS_BIND,
    MS_NODEV,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    mount,
)

# Top-level directories that make up the operating system; every other one is hidden.
SYSTEM_DIRS = {
    "bin",
    "boot",
    "dev",
    "etc",
    "lib",
    "lib32",
    "lib64",
    "libx32",
    "proc",
    "sbin",
    "sys",
    "usr",
}
# The files of this package a kernel needs (the launcher and the fork server it runs in);
# the rest of the package (hidden tests, references, thresholds) is never mounted.
# The parts of the kernel's one scratch tmpfs, with their modes ...
SCRATCH_PARTS = {
    "tmp": 0o1777,
    "var-tmp": 0o1777,
    "shm": 0o1777,
    "run": 0o700,
    "upper": 0o755,
    "overlay-work": 0o700,
}
# ... and where the kernel sees those that are its scratch directories.
SCRATCH_DIRS = {"tmp": "/tmp", "var-tmp": "/var/tmp", "shm": "/dev/shm"}
SOCKET_PORTS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
JUDGE_SOCKET = "judge.sock"  # where the judge's agent listens, in the kernel's run directory


def _fd_path(fd):
    return f"/proc/self/fd/{fd}"


def _read_only(path):
    mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID)


def _bind(fd, path, recursive=False, writable=False):
    """Mount what ``fd`` (O_PATH) opens at ``path``, read-only unless ``writable``."""
    mount(_fd_path(fd), path, None, MS_BIND | (MS_REC if recursive else 0))
    if not writable:
        _read_only(path)


def hide_filesystem(spec: dict, uid: int, launcher: str, run_fd: int) -> dict:
    """Cover every non-system top-level directory with a read-only tmpfs, give the kernel its
    scratch tmpfs, then mount back ``keep``, its working copy and its run directory; link the
    grader's run directory to the kernel's sockets. Return what it got (for protections)."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    keep = {p: os.open(p, os.O_PATH) for p in spec["keep"] if os.path.exists(p)}
    work = os.open(spec["work"], os.O_PATH)
    scratch = {}
    try:  # no fd may reach the kernel: one of the grader's copy would undo the overlay
        connection = _connection(spec)
        hidden = _cover_top_level()
        scratch = _mount_scratch(spec["tmpfs_mb"], uid, os.fstat(work))
        _mount_kept(keep)
        got = {"hidden": hidden, "scratch_mb": spec["tmpfs_mb"]}
        got.update(_mount_work(spec, work, scratch))
        _mount_run(spec, scratch["run"], connection, uid)
    finally:
        for fd in [*keep.values(), work, *scratch.values()]:
            os.close(fd)
    for path in set(hidden) - set(SCRATCH_DIRS.values()):
        _read_only(path)
    if connection:
        _link_sockets(spec["run"], json.loads(connection), launcher, run_fd)
    return got


def _connection(spec):
    """The text of the kernel's connection file (read before the run directory is covered)."""
    path = spec.get("connection_file")
    if not path or os.path.dirname(path) != spec["run"] or not os.path.isfile(path):
        return None
    return Path(path).read_text()


def _cover_top_level():
    """Cover every top-level directory that is not the operating system with an empty tmpfs;
    return their paths (made read-only once the mount points in them exist)."""
    hidden = []
    for name in sorted(os.listdir("/")):
        path = "/" + name
        if name in SYSTEM_DIRS or os.path.islink(path) or not os.path.isdir(path):
            continue
        mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
        hidden.append(path)
    return hidden


def _mount_scratch(tmpfs_mb, uid, work):
    """Mount the kernel's one scratch tmpfs (``tmpfs_mb`` in all) and its parts: its /tmp,
    /var/tmp and /dev/shm, and the places of its run directory and of the changes to its
    working copy (``work``: the grader's copy's stat). Return an O_PATH fd of each part."""
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={tmpfs_mb}m,mode=700")
    for name, mode in SCRATCH_PARTS.items():
        os.mkdir("/tmp/" + name)
        os.chmod("/tmp/" + name, mode)
    parts = {name: os.open("/tmp/" + name, os.O_PATH) for name in SCRATCH_PARTS}
    os.chown("/tmp/run", uid, uid)
    # The overlay's root takes the owner and mode of its upper directory.
    os.chown("/tmp/upper", work.st_uid, work.st_gid)
    os.chmod("/tmp/upper", stat.S_IMODE(work.st_mode))
    for name, target in SCRATCH_DIRS.items():
        os.makedirs(target, exist_ok=True)
        _bind(parts[name], target, writable=True)
    return parts


def _mount_kept(keep):
    """Mount ``keep`` (path -> O_PATH fd) back read-only: directories whole, files alone in
    otherwise empty directories (so that the package holds only its kernel side, a
    subpackage's folder in its package's)."""
    folders: dict[str, list[tuple[str, int]]] = {}
    for path, fd in sorted(keep.items()):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            os.makedirs(path, exist_ok=True)
            _bind(fd, path, recursive=True)
        else:
            folders.setdefault(os.path.dirname(path), []).append((path, fd))
    for folder in sorted(folders):  # a package's folder before its subpackages'
        os.makedirs(folder, exist_ok=True)
        mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
        for path, fd in folders[folder]:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))
            _bind(fd, path)
    for folder in sorted(folders, reverse=True):  # once the subpackages' mount points exist
        _read_only(folder)


def _mount_work(spec, work, scratch):
    """Mount the kernel's working copy: an overlay of the grader's copy (``work``) whose
    changes land in the scratch tmpfs, or the grader's copy itself where overlays are refused
    (its writes then reach the grader's disk, as the protections say)."""
    path = spec["work"]
    os.makedirs(path, exist_ok=True)
    layers = (
        f"lowerdir={_fd_path(work)},upperdir={_fd_path(scratch['upper'])},"
        f"workdir={_fd_path(scratch['overlay-work'])}"
    )
    error = None
    for extra in ("", ",userxattr"):  # a user namespace's overlay keeps its xattrs as user.*
        try:
            mount("overlay", path, "overlay", MS_NOSUID | MS_NODEV, layers + extra)
            return {"work_overlay": True}
        except OSError as e:
            error = error or str(e)
    _bind(work, path, recursive=True, writable=True)
    return {"work_overlay": False, "work_overlay_error": error}


def _mount_run(spec, scratch_run, connection, uid):
    """Mount the scratch part ``scratch_run`` as the kernel's run directory, holding a copy of
    its connection file (the kernel binds its sockets there)."""
    run = spec["run"]
    os.makedirs(run, exist_ok=True)
    _bind(scratch_run, run, writable=True)
    if connection:
        name = os.path.join(run, os.path.basename(spec["connection_file"]))
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.fchown(fd, uid, uid)
        with open(fd, "w") as f:
            f.write(connection)


def _link_sockets(run, connection, launcher, run_fd):
    """In the grader's run directory (``run_fd``), link each ipc socket of ``connection`` and
    the judge's socket to where the kernel binds it: in the sandbox's mount namespace, which
    the grader reaches as the root of the launcher (``/proc/LAUNCHER/root``), whose
    namespace it is."""
    if connection.get("transport") != "ipc":
        return
    paths = [f"{connection['ip']}-{connection[key]}" for key in SOCKET_PORTS]
    for path in [*paths, os.path.join(run, JUDGE_SOCKET)]:
        if os.path.dirname(path) != run:
            continue
        name = os.path.basename(path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=run_fd)
        os.symlink(f"/proc/{launcher}/root{path}", name, dir_fd=run_fd)
