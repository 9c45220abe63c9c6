"""The sandbox launcher: ``python -m attncourse.sandbox.launcher SPEC -- KERNEL_CMD...``.

The kernel manager (:mod:`attncourse.sandbox.kernelmanager`) prefixes every kernel's
command with it. It takes what the platform offers and records in ``RUN/protections.json``
what it got:

- a memory cgroup of its own (:mod:`attncourse.sandbox.cgroups`), CUDA or not;
- a new mount namespace, in which the kernel sees only the operating system, the Python
  environment, the package's kernel side, its working copy and its scratch tmpfs
  (:mod:`attncourse.sandbox.filesystem`); the kernel cannot rewrite what the launcher
  recorded;
- a new network namespace (no interface but a down loopback): no network;
- a new PID namespace: the kernel sees only its own processes, and everything it forked
  dies with it;
- a new IPC namespace: System V shared memory dies with the kernel too;
- a dedicated unprivileged uid per kernel when running as root (or a user namespace
  otherwise), so nothing it can reach is writable but its own copy;
- rlimits: address space, CPU seconds, processes, file size (and no core files); no
  capabilities and ``no_new_privs``, so setuid programs grant nothing.

Each step that the container refuses is skipped and reported, never faked.

With a fork server in the spec, the launcher asks it (:mod:`attncourse.sandbox.forkclient`)
to run the same :func:`launch` in a fork of a process that has torch imported already, and
relays signals and the exit status; where the server cannot be reached it launches the
kernel itself.
"""

import contextlib
import json
import os
import resource
import signal
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from attncourse.sandbox.cgroups import create_cgroup, join_cgroup, remove_cgroup
from attncourse.sandbox.filesystem import hide_filesystem
from attncourse.sandbox.forkclient import FORK_SERVER_ENV, launch_via
from attncourse.sandbox.linux import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    MS_NODEV,
    MS_NOSUID,
    PR_SET_DUMPABLE,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    drop_capabilities,
    mount,
    prctl,
    unshare,
    write,
)

UID_BASE = 200000


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


def _set_limits(limits):
    for name, value in limits.items():
        if value:
            resource.setrlimit(getattr(resource, f"RLIMIT_{name.upper()}"), (value, value))


def _exec(cmd, env):
    os.execvpe(cmd[0], cmd, env)


def launch(
    spec: dict, cmd: list[str], start: Callable[[list[str], dict[str, str]], Any] = _exec
) -> int:
    """Set up the sandbox described by ``spec`` and run ``cmd`` in it; return its exit status.

    ``start(cmd, env)`` replaces the sandboxed child by the kernel (never returns):
    exec by default, the fork server's in-process kernel otherwise.
    """
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the grader died: so does the sandbox
    got: dict = {
        "uid": None,
        "user_namespace": False,
        "mount_namespace": False,
        "hidden": [],
        "network_namespace": False,
        "pid_namespace": False,
        "ipc_namespace": False,
        "rlimits": {},
    }
    cgroup = create_cgroup(spec.get("cgroup"), got)
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
        remove_cgroup(cgroup[0])


def _enter_namespaces(spec, root, got):
    """Unshare the namespaces the platform allows, a user namespace too when not root."""
    ids = os.geteuid(), os.getegid()  # a new user namespace shows 65534 until it maps them
    wanted = CLONE_NEWNS | CLONE_NEWPID | (CLONE_NEWNET if spec["isolate_network"] else 0)
    for flags in (wanted | CLONE_NEWIPC, wanted):
        try:
            unshare(flags if root else flags | CLONE_NEWUSER)
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
        write("/proc/self/setgroups", "deny")
        write("/proc/self/uid_map", f"{ids[0]} {ids[0]} 1")
        write("/proc/self/gid_map", f"{ids[1]} {ids[1]} 1")


def _sandbox_init(spec, cmd, start, got, cgroup, uid, launcher):
    """In the sandbox's first process: join the cgroup, mount, record the protections, then
    run the kernel as its child; return the kernel's exit status."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    prctl(PR_SET_DUMPABLE, 0)  # a kernel of its uid may not ptrace it
    if cgroup is not None:
        join_cgroup(cgroup, got)
    root = os.geteuid() == 0
    run_fd = os.open(spec["run"], os.O_RDONLY | os.O_DIRECTORY)
    if got["mount_namespace"]:
        try:
            got.update(hide_filesystem(spec, uid, launcher, run_fd))
        except OSError as e:
            got["mount_namespace"] = False
            got["mount_error"] = str(e)
        if got["pid_namespace"] and got["mount_namespace"]:
            with contextlib.suppress(OSError):
                mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV)
    if not got["mount_namespace"] and root and uid != 0:
        _chown_tree(spec["run"], uid)  # the kernel binds its sockets in the grader's run dir
    os.chdir("/")  # the grader's copy, where the launcher started, is no business of the kernel
    limits = dict(spec["limits"])
    if uid == os.geteuid() or not root:
        limits.pop("nproc", None)  # would count the grader's own processes too
    got["rlimits"] = {k: v for k, v in limits.items() if v}
    got["uid"] = uid if root and uid != 0 else None
    got["preloaded"] = start is not _exec
    if gpu_environment(spec):
        got["gpu_memory_mb"] = spec["gpu"]["memory_mb"]  # under CUDA MPS, outside the kernel
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


def gpu_environment(spec: dict) -> dict[str, str]:
    """What a kernel's environment gets from its spec's GPU share: on a card shared under CUDA
    MPS, its pinned device memory limit (``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``, on the one
    device it sees) and the MPS daemon's pipe directory; nothing otherwise."""
    gpu = spec.get("gpu") or {}
    if not gpu.get("memory_mb") or not gpu.get("mps_pipe"):
        return {}
    return {
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": f"0={gpu['memory_mb']}M",
        "CUDA_MPS_PIPE_DIRECTORY": gpu["mps_pipe"],
    }


def _run_kernel(spec, cmd, start, limits, uid, log):
    """In the kernel's process: its limits, uid and log, no privileges, its working copy as
    cwd; then ``start`` it (never returns)."""
    try:
        _set_limits(limits)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a segfault leaves no core file
        prctl(PR_SET_NO_NEW_PRIVS, 1)  # setuid binaries grant nothing
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        drop_capabilities()
        prctl(PR_SET_DUMPABLE, 1)  # its own /proc/self, as an exec'd kernel's
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.chdir(spec["work"])
        # JPY_PARENT_PID names a process the kernel cannot see from its PID namespace, and
        # FORK_SERVER_ENV a socket in a folder the sandbox hides.
        env = {
            k: v for k, v in os.environ.items() if not k.startswith("JPY_") and k != FORK_SERVER_ENV
        }
        env.update(
            HOME=spec["work"],
            TMPDIR="/tmp",
            USER="student",
            LOGNAME="student",
            IPYTHONDIR=os.path.join(spec["run"], "ipython"),
            MPLCONFIGDIR=os.path.join(spec["run"], "matplotlib"),
        )
        env.update(gpu_environment(spec))
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


def main(argv: list[str] | None = None) -> NoReturn:
    argv = sys.argv[1:] if argv is None else argv
    spec = json.loads(argv[0])
    cmd = argv[argv.index("--") + 1 :]
    if spec.get("fork_server"):
        code = launch_via(spec["fork_server"], spec, cmd)
        if code is not None:
            sys.exit(code)
    sys.exit(launch(spec, cmd))


if __name__ == "__main__":
    main()
