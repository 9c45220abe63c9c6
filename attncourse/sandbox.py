"""Run each grading kernel in a sandbox: its own working copy, no network, hard limits.

Two halves:

* :class:`SandboxKernelManager`, a jupyter_client kernel manager that talks to
  the kernel over ``ipc`` sockets in a private run directory (TCP loopback is
  unreachable from a new network namespace) and prefixes the kernel command
  with the launcher below.
* The launcher, ``python -m attncourse.sandbox SPEC -- KERNEL_CMD...``. It takes
  what the platform offers and records in ``RUN/protections.json`` what it got:

  - a memory cgroup of its own (``cgroup_memory_mb``, swap included), CUDA or not:
    it counts all the memory of the kernel's processes, the pages of its tmpfs
    scratch included, and goes when the kernel does. Under cgroup v1 it is a child
    of the grader's memory cgroup; under cgroup v2 too where memory is delegated to
    the grader's children, else a sibling of the grader's cgroup (cgroup v2 gives no
    controller to the children of a cgroup that holds processes, as the grader's
    does). The grader makes it, so it needs root or a delegated cgroup;
  - new mount namespace: every top-level directory that is not the operating
    system (``/tmp``, ``/home``, ``/root``, ``/work``, ``/var``, ...) is covered
    by an empty read-only tmpfs, then only the Python environment and the files
    of this package that a kernel runs (:data:`KERNEL_SIDE`: the launcher and the
    fork server, never the hidden tests) are mounted back read-only, so ``source/``,
    the gradebook, ``attncourse.grading`` and other students' work do not exist for it;
  - one scratch tmpfs (``tmpfs_mb``) for all the kernel writes: ``/tmp``,
    ``/var/tmp``, ``/dev/shm``, its run directory and, through an overlay, what it
    changes in its working copy, so nothing it writes reaches the grader's disk but
    its log (``RUN/kernel.log``, bounded by the file-size limit). The grader reaches
    the kernel's sockets through links, in the grader's run directory, to where they
    are in the sandbox (``/proc/LAUNCHER/root/...``), and the kernel cannot rewrite
    what the launcher recorded;
  - new network namespace (no interface but a down loopback): no network;
  - new PID namespace: the kernel sees only its own processes, and everything
    it forked dies with it;
  - new IPC namespace: System V shared memory dies with the kernel too;
  - a dedicated unprivileged uid per kernel when running as root (or a user
    namespace otherwise), so nothing it can reach is writable but its own copy;
  - rlimits: address space, CPU seconds, processes, file size (and no core files);
    no capabilities and ``no_new_privs``, so setuid programs grant nothing.

Each step that the container refuses is skipped and reported, never faked.

With ``fork_server`` on (the default), the launcher asks this grading process's
:mod:`attncourse.forkserver` to run the same ``_launch`` in a fork of a process
that has torch imported already, and relays signals and the exit status.

A kernel imports nothing of this package but this module and the fork server, and
this module imports nothing of it at module level.
"""

import contextlib
import ctypes
import errno
import hashlib
import json
import os
import resource
import signal
import stat
import sys
import time
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
LINUX_CAPABILITY_VERSION_3 = 0x20080522

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
KERNEL_SIDE = ("__init__.py", "sandbox.py", "forkserver.py")
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
CGROUP_PREFIX = "attncourse-"
UID_BASE = 200000

_libc = ctypes.CDLL(None, use_errno=True)


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source, target, fstype, flags, data=None):
    _check(
        _libc.mount(
            source.encode() if source else None,
            str(target).encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _unshare(flags):
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _write_at(folder, name, text):
    """Write ``name`` in the directory open as ``folder`` (never through a link put there)."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644, dir_fd=folder)
    with open(fd, "w") as f:
        f.write(text)


def _chown_tree(path, uid):
    for dirpath, dirnames, filenames in os.walk(path):
        os.lchown(dirpath, uid, uid)
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), uid, uid)


def _fd_path(fd):
    return f"/proc/self/fd/{fd}"


def _read_only(path):
    _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID)


def _bind(fd, path, recursive=False, writable=False):
    """Mount what ``fd`` (O_PATH) opens at ``path``, read-only unless ``writable``."""
    _mount(_fd_path(fd), path, None, MS_BIND | (MS_REC if recursive else 0))
    if not writable:
        _read_only(path)


def _hide_filesystem(spec, uid, launcher, run_fd):
    """Cover every non-system top-level directory with a read-only tmpfs, give the kernel its
    scratch tmpfs, then mount back ``keep``, its working copy and its run directory; link the
    grader's run directory to the kernel's sockets. Return what it got (for protections)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
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
        _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
        hidden.append(path)
    return hidden


def _mount_scratch(tmpfs_mb, uid, work):
    """Mount the kernel's one scratch tmpfs (``tmpfs_mb`` in all) and its parts: its /tmp,
    /var/tmp and /dev/shm, and the places of its run directory and of the changes to its
    working copy (``work``: the grader's copy's stat). Return an O_PATH fd of each part."""
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={tmpfs_mb}m,mode=700")
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
    an otherwise empty directory (so that ``attncourse/`` holds only :data:`KERNEL_SIDE`)."""
    files = {}
    for path, fd in sorted(keep.items()):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            os.makedirs(path, exist_ok=True)
            _bind(fd, path, recursive=True)
        else:
            files.setdefault(os.path.dirname(path), []).append((path, fd))
    for folder, members in files.items():
        os.makedirs(folder, exist_ok=True)
        _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
        for path, fd in members:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))
            _bind(fd, path)
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
            _mount("overlay", path, "overlay", MS_NOSUID | MS_NODEV, layers + extra)
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
    """In the grader's run directory (``run_fd``), link each ipc socket of ``connection`` to
    where the kernel binds it: in the sandbox's mount namespace, which the grader reaches as
    the root of the launcher (``/proc/LAUNCHER/root``), whose namespace it is."""
    if connection.get("transport") != "ipc":
        return
    for key in SOCKET_PORTS:
        path = f"{connection['ip']}-{connection[key]}"
        if os.path.dirname(path) != run:
            continue
        name = os.path.basename(path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=run_fd)
        os.symlink(f"/proc/{launcher}/root{path}", name, dir_fd=run_fd)


def _set_limits(limits):
    for name, value in limits.items():
        if value:
            resource.setrlimit(getattr(resource, f"RLIMIT_{name.upper()}"), (value, value))


def _drop_capabilities():
    """Give up every capability. A kernel forked (not exec'd) in a user namespace would
    otherwise keep all those the namespace gave the sandbox, enough to unmount what hides
    the course; exec and a switch away from root drop them anyway."""
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    _check(_libc.capset(header, (ctypes.c_uint32 * 6)()), "capset")


def _exec(cmd, env):
    os.execvpe(cmd[0], cmd, env)


def _launch(spec, cmd, start=_exec):
    """Set up the sandbox described by ``spec`` and run ``cmd`` in it; return its exit status.

    ``start(cmd, env)`` replaces the sandboxed child by the kernel (never returns):
    exec by default, the fork server's in-process kernel otherwise.
    """
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the grader died: so does the sandbox
    got = {
        "uid": None,
        "user_namespace": False,
        "mount_namespace": False,
        "hidden": [],
        "network_namespace": False,
        "pid_namespace": False,
        "ipc_namespace": False,
        "rlimits": {},
    }
    cgroup = _create_cgroup(spec.get("cgroup"), got)
    root = os.geteuid() == 0
    uid = UID_BASE + os.getpid() if root and spec["drop_privileges"] else os.geteuid()
    _enter_namespaces(spec, root, got)
    if root and uid != 0:
        _chown_tree(spec["work"], uid)
    launcher = os.getpid()
    pid = os.fork()
    if pid == 0:  # PID 1 of the new namespace (or a plain child)
        return _sandbox_init(spec, cmd, start, got, cgroup, uid, launcher)
    if cgroup is None:
        return _wait_for(pid)
    os.close(cgroup[2])
    try:
        return _wait_for(pid)
    finally:
        _remove_cgroup(cgroup[0])


def _enter_namespaces(spec, root, got):
    """Unshare the namespaces the platform allows, a user namespace too when not root."""
    ids = os.geteuid(), os.getegid()  # a new user namespace shows 65534 until it maps them
    wanted = CLONE_NEWNS | CLONE_NEWPID | (CLONE_NEWNET if spec["isolate_network"] else 0)
    for flags in (wanted | CLONE_NEWIPC, wanted):
        try:
            _unshare(flags if root else flags | CLONE_NEWUSER)
            break
        except OSError:
            continue
    else:
        return
    got.update(
        user_namespace=not root,
        mount_namespace=True,
        network_namespace=bool(flags & CLONE_NEWNET),
        pid_namespace=True,
        ipc_namespace=bool(flags & CLONE_NEWIPC),
    )
    if not root:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{ids[0]} {ids[0]} 1")
        _write("/proc/self/gid_map", f"{ids[1]} {ids[1]} 1")


def _sandbox_init(spec, cmd, start, got, cgroup, uid, launcher):
    """In the sandbox's first process: join the cgroup, mount, record the protections, then
    run the kernel as its child; return the kernel's exit status."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # a kernel of its uid may not ptrace it
    if cgroup is not None:
        _join_cgroup(cgroup, got)
    root = os.geteuid() == 0
    run_fd = os.open(spec["run"], os.O_RDONLY | os.O_DIRECTORY)
    if got["mount_namespace"]:
        try:
            got.update(_hide_filesystem(spec, uid, launcher, run_fd))
        except OSError as e:
            got["mount_namespace"] = False
            got["mount_error"] = str(e)
        if got["pid_namespace"] and got["mount_namespace"]:
            with contextlib.suppress(OSError):
                _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV)
    if not got["mount_namespace"] and root and uid != 0:
        _chown_tree(spec["run"], uid)  # the kernel binds its sockets in the grader's run dir
    os.chdir("/")  # the grader's copy, where the launcher started, is no business of the kernel
    limits = dict(spec["limits"])
    if uid == os.geteuid() or not root:
        limits.pop("nproc", None)  # would count the grader's own processes too
    got["rlimits"] = {k: v for k, v in limits.items() if v}
    got["uid"] = uid if root and uid != 0 else None
    got["preloaded"] = start is not _exec
    _write_at(run_fd, "protections.json", json.dumps(got))
    log = os.open(
        "kernel.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600, dir_fd=run_fd
    )
    os.close(run_fd)
    kernel = os.fork()
    if kernel == 0:
        _run_kernel(spec, cmd, start, limits, got["uid"], log)
    os.close(log)
    return _wait_for(kernel)


def _run_kernel(spec, cmd, start, limits, uid, log):
    """In the kernel's process: its limits, uid and log, no privileges, its working copy as
    cwd; then ``start`` it (never returns)."""
    try:
        _set_limits(limits)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a segfault leaves no core file
        _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # setuid binaries grant nothing
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        _drop_capabilities()
        _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # its own /proc/self, as an exec'd kernel's
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.chdir(spec["work"])
        # JPY_PARENT_PID names a process the kernel cannot see from its PID namespace.
        env = {k: v for k, v in os.environ.items() if not k.startswith("JPY_")}
        env.update(
            HOME=spec["work"],
            TMPDIR="/tmp",
            USER="student",
            LOGNAME="student",
            IPYTHONDIR=os.path.join(spec["run"], "ipython"),
            MPLCONFIGDIR=os.path.join(spec["run"], "matplotlib"),
        )
        start(cmd, env)
    finally:
        os._exit(127)


def _wait_for(pid):
    """Wait for ``pid``, reaping orphans meanwhile; return its exit status as an exit code."""
    signal.signal(signal.SIGINT, lambda *_: None)  # interrupts are for the kernel, not for us
    signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGKILL))
    while True:
        try:
            done, status = os.wait()
        except ChildProcessError:
            return 1
        except InterruptedError:
            continue
        if done == pid:
            return os.waitstatus_to_exitcode(status) % 256


# ------------------------------------------------------------------ memory cgroups


def cgroup_prefix(run):
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


def _create_cgroup(cgroup, got):
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
                _write(os.path.join(path, name), str(value))
        procs = os.open(os.path.join(path, "cgroup.procs"), os.O_WRONLY)
    except OSError as e:
        _remove_cgroup(path)
        got["cgroup_error"] = f"cannot limit the memory of a cgroup in {cgroup['parent']}: {e}"
        return None
    got.update(cgroup=version, cgroup_memory=cgroup["limit"])
    return path, version, procs


def _join_cgroup(cgroup, got):
    """Move this process (the sandbox's init: all the kernel's processes descend from it)
    into the cgroup made by :func:`_create_cgroup`."""
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


def _remove_cgroup(path, seconds=2.0):
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


def remove_cgroups(parent, prefix=None):
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
            _remove_cgroup(path)
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
        for fstype, root, point, options in mounts:
            v1 = fstype == "cgroup" and "memory" in options and "memory" in controllers.split(",")
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


def memory_cgroup_parent(dirs=None):
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
        _write(os.path.join(own, "cgroup.subtree_control"), "+memory")
        return own
    parent = os.path.dirname(own)
    if os.path.ismount(own) or "memory" not in _words(parent, "cgroup.subtree_control"):
        raise OSError(
            errno.EBUSY,
            f"cgroup v2: {own} holds processes, so its children get no memory controller, "
            "and its parent is out of reach; run the grader in a child cgroup of it",
        )
    return parent


def cuda_present():
    """Whether this machine has an NVIDIA GPU: kernels then get no address-space limit."""
    return os.path.exists("/dev/nvidiactl")


def _process_tree():
    """(parent pid -> child pids, zombie pids) of every process on the machine.

    Runs after every graded cell, so it reads ``/proc/PID/stat`` as raw bytes
    (pathlib's text reads made it 3x slower, some 0.3 s of a grader's CPU per notebook).
    """
    children, zombies = {}, set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{entry}/stat", os.O_RDONLY)
        except OSError:
            continue
        try:
            stat = os.read(fd, 4096)
        except OSError:
            continue
        finally:
            os.close(fd)
        if b")" not in stat:
            continue
        state, ppid = stat.rsplit(b")", 1)[1].split(None, 2)[:2]
        children.setdefault(int(ppid), []).append(int(entry))
        if state == b"Z":
            zombies.add(int(entry))
    return children, zombies


def _kernel_of(pids):
    """The kernel among the sandbox init's children: PID 2 in its namespace (else the oldest)."""
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        nspid = next(
            (line.split()[1:] for line in status.splitlines() if line.startswith("NSpid")), []
        )
        if len(nspid) > 1 and nspid[-1] == "2":
            return pid
    return min(pids, default=None)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    spec = json.loads(argv[0])
    cmd = argv[argv.index("--") + 1 :]
    if spec.get("fork_server"):
        from attncourse.forkserver import launch_via

        code = launch_via(spec["fork_server"], spec, cmd)
        if code is not None:
            sys.exit(code)
    sys.exit(_launch(spec, cmd))


_servers = {}


def launcher_pid_file(run):
    """Where the launcher notes the pid of the fork server's copy that set up its sandbox:
    beside ``run``, in the kernel's private workspace, which the sandbox does not mount
    (so the kernel cannot rewrite it)."""
    return str(run).rstrip("/") + ".launcher-pid"


def _fork_server(preload):
    """The socket of this process's fork server for ``preload`` (started on first use),
    or None when it cannot start (kernels are then launched the ordinary way)."""
    import atexit
    import shutil
    import subprocess
    import tempfile

    key = tuple(preload)
    server = _servers.get(key)
    if server and server[0].poll() is None:
        return server[1]
    home = tempfile.mkdtemp(prefix="attncourse-forkserver-")  # 0700, hidden from kernels
    path = os.path.join(home, "socket")
    proc = subprocess.Popen(
        [sys.executable, "-m", "attncourse.forkserver", path, json.dumps(list(preload))],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    if proc.stdout.readline().strip() != b"ready":
        proc.kill()
        proc.wait()
        shutil.rmtree(home, ignore_errors=True)
        return None

    def stop():
        proc.kill()
        proc.wait()
        shutil.rmtree(home, ignore_errors=True)

    atexit.register(stop)
    _servers[key] = (proc, path)
    return path


def _kernel_manager_class():
    """Build :class:`SandboxKernelManager` (jupyter_client is imported only by the grader,
    never by the launcher, which starts once per kernel)."""
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import Bool, Integer, List, Unicode

    class SandboxKernelManager(AsyncKernelManager):
        """A kernel manager whose kernels run in the sandbox, reached over ipc sockets.

        ``sandbox_run`` (private directory for sockets and the connection file) must
        be set before the kernel starts; the kernel's ``cwd`` is its working copy.
        """

        enabled = Bool(True, help="Run kernels in the sandbox at all.").tag(config=True)
        memory_mb = Integer(3072, help="Address-space limit of the kernel (MiB, 0: none).").tag(
            config=True
        )
        cpu_seconds = Integer(900, help="CPU-time limit of one kernel (s, 0: none).").tag(
            config=True
        )
        processes = Integer(64, help="Process/thread limit of the kernel's uid (0: none).").tag(
            config=True
        )
        file_size_mb = Integer(64, help="Largest file the kernel may write (MiB, 0: none).").tag(
            config=True
        )
        cgroup_memory_mb = Integer(
            3072,
            help="Memory limit of the kernel's own cgroup (MiB, 0: none): all memory of its "
            "processes, swap and the pages of its scratch tmpfs included. Unlike memory_mb "
            "(address space), it holds on a GPU grader too. Needs root or a delegated cgroup; "
            "the protections say why it was refused.",
        ).tag(config=True)
        tmpfs_mb = Integer(
            256,
            help="Size of the kernel's one scratch tmpfs (MiB): its /tmp, /var/tmp, /dev/shm "
            "and what it writes in its working copy, together.",
        ).tag(config=True)
        isolate_network = Bool(True, help="Put the kernel in a network namespace.").tag(config=True)
        drop_privileges = Bool(True, help="When root, run the kernel as a fresh uid.").tag(
            config=True
        )
        fork_server = Bool(
            True,
            help="Fork kernels from a server that imported `preload` once (attncourse.forkserver).",
        ).tag(config=True)
        preload = List(
            Unicode(),
            ["torch", "numpy", "ipykernel.kernelapp"],
            help="Modules the fork server imports before forking kernels (never the course's "
            "grading code: a kernel holds what the server imported).",
        ).tag(config=True)
        cgroup_parent = Unicode(
            None,
            allow_none=True,
            help="Directory to make kernel cgroups in (None: where memory_cgroup_parent says; "
            "tests point it elsewhere).",
        )

        sandbox_run = None

        def use_run_dir(self, run):
            """Sockets and connection file live in ``run`` (reachable from inside the sandbox)."""
            self.sandbox_run = str(run)
            if self.enabled:
                self.transport = "ipc"
                self.ip = os.path.join(self.sandbox_run, "kernel")
                self.connection_file = os.path.join(self.sandbox_run, "kernel.json")

        def spec(self, work):
            """What the launcher is to set up for a kernel whose working copy is ``work``."""
            package = Path(__file__).parent
            keep = {
                sys.prefix,
                sys.base_prefix,
                sys.exec_prefix,
                *(str(package / name) for name in KERNEL_SIDE),
            }
            cgroup = self._cgroup()
            if "parent" in cgroup:
                remove_cgroups(cgroup["parent"])  # those of kernels whose launcher was killed
            return {
                "run": self.sandbox_run,
                "work": str(work),
                "connection_file": self.connection_file,
                "fork_server": _fork_server(self.preload) if self.fork_server else None,
                "keep": sorted(os.path.realpath(p) for p in keep),
                "tmpfs_mb": self.tmpfs_mb,
                "cgroup": cgroup,
                "isolate_network": self.isolate_network,
                "drop_privileges": self.drop_privileges,
                "limits": {
                    # CUDA reserves far more address space than it uses: no RLIMIT_AS there.
                    "as": 0 if cuda_present() else self.memory_mb * 2**20,
                    "cpu": self.cpu_seconds,
                    "nproc": self.processes,
                    "fsize": self.file_size_mb * 2**20,
                },
            }

        def _cgroup(self):
            """The spec of the kernel's memory cgroup (where, its name, its limit), or the
            reason there is none."""
            if not self.cgroup_memory_mb:
                return {"error": "cgroup_memory_mb is 0"}
            try:
                parent = self.cgroup_parent or memory_cgroup_parent()
            except OSError as e:
                return {"error": e.strerror or str(e)}
            return {
                "parent": parent,
                "prefix": cgroup_prefix(self.sandbox_run),
                "limit": self.cgroup_memory_mb * 2**20,
            }

        async def _async_cleanup_resources(self, restart=False):
            """As jupyter_client's, and remove the kernel's cgroup (killing what is left in it)."""
            await super()._async_cleanup_resources(restart=restart)
            if self.enabled and self.sandbox_run is not None:
                cgroup = self._cgroup()
                if "parent" in cgroup:
                    remove_cgroups(cgroup["parent"], cgroup["prefix"])

        cleanup_resources = _async_cleanup_resources

        def format_kernel_cmd(self, extra_arguments=None):
            cmd = super().format_kernel_cmd(extra_arguments)
            if not self.enabled or self.sandbox_run is None:
                return cmd
            work = self._launch_args.get("cwd") or os.getcwd()
            launcher = [
                sys.executable,
                "-m",
                "attncourse.sandbox",
                json.dumps(self.spec(work)),
                "--",
            ]
            return launcher + cmd

        def reap_strays(self):
            """Kill every live process the kernel left behind (forks, daemons); return how many.

            The sandbox's init and the kernel stay; everything else descending from
            the launcher goes, so a fork bomb's children stop competing for the CPU
            with the cells after it.
            """
            launcher = getattr(self.provisioner, "pid", None)
            if not launcher:
                return 0
            try:  # the fork server's copy plays the launcher when there is one
                launcher = int(Path(launcher_pid_file(self.sandbox_run)).read_text())
            except (OSError, ValueError, TypeError):
                pass
            children, zombies = _process_tree()
            inits = children.get(launcher, [])
            keep = {launcher, *inits, *(_kernel_of(children.get(i, [])) for i in inits)}
            strays, todo = [], list(inits)
            while todo:
                for pid in children.get(todo.pop(), []):
                    todo.append(pid)
                    if pid not in keep and pid not in zombies:
                        strays.append(pid)
            for pid in strays:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            return len(strays)

        def protections(self):
            """What the launcher of the current kernel actually got (see the module docstring)."""
            if not self.enabled or self.sandbox_run is None:
                return {"sandbox": False}
            path = Path(self.sandbox_run) / "protections.json"
            try:
                return json.loads(path.read_text())
            except (OSError, ValueError):
                return {"sandbox": False}

    SandboxKernelManager.__qualname__ = "SandboxKernelManager"
    return SandboxKernelManager


def __getattr__(name):
    if name == "SandboxKernelManager":
        globals()[name] = _kernel_manager_class()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main()
