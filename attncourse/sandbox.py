"""Run each grading kernel in a sandbox: its own working copy, no network, hard limits.

Two halves:

* :class:`SandboxKernelManager`, a jupyter_client kernel manager that talks to
  the kernel over ``ipc`` sockets in a private run directory (TCP loopback is
  unreachable from a new network namespace) and prefixes the kernel command
  with the launcher below.
* The launcher, ``python -m attncourse.sandbox SPEC -- KERNEL_CMD...``. It takes
  what the platform offers and records in ``RUN/protections.json`` what it got:

  - new mount namespace: every top-level directory that is not the operating
    system (``/tmp``, ``/home``, ``/root``, ``/work``, ``/var``, ...) is covered
    by an empty tmpfs, then only the Python environment, the course's checking
    package (read-only) and the kernel's own working copy are mounted back, so
    ``source/``, the gradebook and other students' work do not exist for it;
  - new network namespace (no interface but a down loopback): no network;
  - new PID namespace: the kernel sees only its own processes, and everything
    it forked dies with it;
  - a dedicated unprivileged uid per kernel when running as root (or a user
    namespace otherwise), so nothing it can reach is writable but its own copy;
  - rlimits: address space, CPU seconds, processes, file size (and no core files);
    ``no_new_privs``, so setuid programs grant nothing.

Each step that the container refuses is skipped and reported, never faked.

With ``fork_server`` on (the default), the launcher asks this grading process's
:mod:`attncourse.forkserver` to run the same ``_launch`` in a fork of a process
that has torch imported already, and relays signals and the exit status.
"""

import ctypes
import json
import os
import resource
import signal
import sys
from pathlib import Path

CLONE_NEWNS = 0x00020000
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
PR_SET_NO_NEW_PRIVS = 38

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
# Writable scratch the kernel gets instead of the real one (size-limited tmpfs).
SCRATCH_DIRS = {"tmp", "var/tmp", "dev/shm"}
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


def _chown_tree(path, uid):
    for dirpath, dirnames, filenames in os.walk(path):
        os.lchown(dirpath, uid, uid)
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), uid, uid)


def _hide_filesystem(keep, writable, tmpfs_mb):
    """Cover every non-system top-level directory with tmpfs, then mount ``keep`` back."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    fds = {p: os.open(p, os.O_PATH) for p in keep + writable if os.path.exists(p)}
    hidden = []
    for name in sorted(os.listdir("/")):
        path = "/" + name
        if name in SYSTEM_DIRS or os.path.islink(path) or not os.path.isdir(path):
            continue
        _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={tmpfs_mb}m,mode=755")
        hidden.append(path)
    for scratch in SCRATCH_DIRS:
        path = "/" + scratch
        os.makedirs(path, exist_ok=True)
        _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={tmpfs_mb}m,mode=1777")
    for path, fd in fds.items():
        os.makedirs(path, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        if path not in writable:
            _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID)
        os.close(fd)
    return hidden


def _set_limits(limits):
    for name, value in limits.items():
        if value:
            resource.setrlimit(getattr(resource, f"RLIMIT_{name.upper()}"), (value, value))


def _exec(cmd, env):
    os.execvpe(cmd[0], cmd, env)


def _launch(spec, cmd, start=_exec):
    """Set up the sandbox described by ``spec`` and run ``cmd`` in it; return its exit status.

    ``start(cmd, env)`` replaces the sandboxed child by the kernel (never returns):
    exec by default, the fork server's in-process kernel otherwise.
    """
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the grader died: so does the sandbox
    run, work = spec["run"], spec["work"]
    got = {
        "uid": None,
        "user_namespace": False,
        "mount_namespace": False,
        "hidden": [],
        "network_namespace": False,
        "pid_namespace": False,
        "rlimits": {},
    }
    root = os.geteuid() == 0
    uid = UID_BASE + os.getpid() if root and spec["drop_privileges"] else os.geteuid()
    flags = CLONE_NEWNS | CLONE_NEWPID | (CLONE_NEWNET if spec["isolate_network"] else 0)
    try:
        _unshare(flags if root else flags | CLONE_NEWUSER)
    except OSError:
        flags = 0
    else:
        if not root:
            got["user_namespace"] = True
    got["mount_namespace"] = bool(flags & CLONE_NEWNS)
    got["network_namespace"] = bool(flags & CLONE_NEWNET)
    got["pid_namespace"] = bool(flags & CLONE_NEWPID)
    if root and uid != 0:
        _chown_tree(work, uid)
        _chown_tree(run, uid)
    if not root and got["user_namespace"]:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        gid = os.getegid()
        _write("/proc/self/gid_map", f"{gid} {gid} 1")

    pid = os.fork()
    if pid:
        return _wait_for(pid)
    # PID 1 of the new namespace (or a plain child): mounts, then the kernel as its child.
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if got["mount_namespace"]:
        try:
            got["hidden"] = _hide_filesystem(spec["keep"], [work, run], spec["tmpfs_mb"])
        except OSError as e:
            got["mount_namespace"] = False
            got["mount_error"] = str(e)
        if got["pid_namespace"]:
            try:
                _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV)
            except OSError:
                pass
    limits = dict(spec["limits"])
    if uid == os.geteuid() or not root:
        limits.pop("nproc", None)  # would count the grader's own processes too
    got["rlimits"] = {k: v for k, v in limits.items() if v}
    got["uid"] = uid if root and uid != 0 else None
    got["preloaded"] = start is not _exec
    _write(os.path.join(run, "protections.json"), json.dumps(got))
    kernel = os.fork()
    if kernel == 0:
        try:
            _set_limits(limits)
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a segfault leaves no core file
            _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # setuid binaries grant nothing
            if got["uid"] is not None:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            log = os.open(os.path.join(run, "kernel.log"), os.O_WRONLY | os.O_CREAT, 0o600)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.chdir(work)
            # JPY_PARENT_PID names a process the kernel cannot see from its PID namespace.
            env = {k: v for k, v in os.environ.items() if not k.startswith("JPY_")}
            env.update(
                HOME=work,
                TMPDIR="/tmp",
                USER="student",
                LOGNAME="student",
                IPYTHONDIR=os.path.join(run, "ipython"),
                MPLCONFIGDIR=os.path.join(run, "matplotlib"),
            )
            start(cmd, env)
        finally:
            os._exit(127)
    return _wait_for(kernel)


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
        tmpfs_mb = Integer(256, help="Size of each scratch tmpfs the kernel sees (MiB).").tag(
            config=True
        )
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
            ["torch", "numpy", "ipykernel.kernelapp", "attncourse.checks"],
            help="Modules the fork server imports before forking kernels.",
        ).tag(config=True)

        sandbox_run = None

        def use_run_dir(self, run):
            """Sockets and connection file live in ``run`` (reachable from inside the sandbox)."""
            self.sandbox_run = str(run)
            if self.enabled:
                self.transport = "ipc"
                self.ip = os.path.join(self.sandbox_run, "kernel")
                self.connection_file = os.path.join(self.sandbox_run, "kernel.json")

        def spec(self, work):
            import attncourse

            keep = {
                sys.prefix,
                sys.base_prefix,
                sys.exec_prefix,
                str(Path(attncourse.__file__).parent),
            }
            return {
                "run": self.sandbox_run,
                "work": str(work),
                "fork_server": _fork_server(self.preload) if self.fork_server else None,
                "keep": sorted(os.path.realpath(p) for p in keep),
                "tmpfs_mb": self.tmpfs_mb,
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
