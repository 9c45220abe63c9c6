"""The grader's kernel manager: every kernel starts through the sandbox launcher.

:class:`SandboxKernelManager` talks to the kernel over ``ipc`` sockets in a private run
directory (TCP loopback is unreachable from a new network namespace) and prefixes the
kernel command with ``python -m attncourse.sandbox.launcher SPEC --``; the spec says what
the launcher is to set up (:meth:`SandboxKernelManager.spec`). Its settings are in
``nbgrader_config.py``; each limit is defined once, here, as a trait tagged ``limit``
(listed in the README and the config by ``make limits``).
"""

import json
import os
import signal
import site
import sys
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import Bool, Instance, Integer, List, Unicode, default

from attncourse import constants
from attncourse.sandbox import KERNEL_MODULES
from attncourse.sandbox.cgroups import cgroup_prefix, memory_cgroup_parent, remove_cgroups
from attncourse.sandbox.forkclient import launcher_pid_file
from attncourse.sandbox.forkstart import ForkServers
from attncourse.sandbox.proctree import strays
from attncourse.upstream import ResourceCleanup, launch_args

PACKAGE = Path(__file__).resolve().parent.parent


def cuda_present() -> bool:
    """Whether this machine has an NVIDIA GPU: kernels then get no address-space limit."""
    return os.path.exists("/dev/nvidiactl")


def kernel_files() -> list[Path]:
    """The files of the package's kernel side (:data:`KERNEL_MODULES`), the only ones of the
    package mounted in a kernel's sandbox."""
    files = []
    for module in KERNEL_MODULES:
        path = PACKAGE.parent.joinpath(*module.split("."))
        files.append(path / "__init__.py" if path.is_dir() else path.with_suffix(".py"))
    return files


class SandboxKernelManager(ResourceCleanup, AsyncKernelManager):  # type: ignore[misc]  # upstream aliases cleanup_resources the same way
    """A kernel manager whose kernels run in the sandbox, reached over ipc sockets.

    ``sandbox_run`` (private directory for sockets and the connection file) must
    be set before the kernel starts; the kernel's ``cwd`` is its working copy.
    """

    enabled = Bool(True, help="Run kernels in the sandbox at all.").tag(config=True)
    memory_mb = Integer(
        3072,
        help="Address-space limit of the kernel (MiB, 0: none); not applied on a GPU grader, "
        "where CUDA reserves far more.",
    ).tag(config=True, limit=True)
    cpu_seconds = Integer(900, help="CPU-time limit of one kernel (s, 0: none).").tag(
        config=True, limit=True
    )
    processes = Integer(
        64, help="Process/thread limit of the kernel's uid (0: none): a fork bomb stops here."
    ).tag(config=True, limit=True)
    file_size_mb = Integer(64, help="Largest file the kernel may write (MiB, 0: none).").tag(
        config=True, limit=True
    )
    cgroup_memory_mb = Integer(
        3072,
        help="Memory limit of the kernel's own cgroup (MiB, 0: none): all memory of its "
        "processes, swap and the pages of its scratch tmpfs included. Unlike memory_mb "
        "(address space), it holds on a GPU grader too. Needs root or a delegated cgroup; "
        "the protections say why it was refused.",
    ).tag(config=True, limit=True)
    gpu_memory_mb = Integer(
        4096,
        help="GPU memory each kernel may pin on a card it shares with others (MiB, 0: none), "
        "held by the grader's CUDA MPS daemon outside the kernel; on a GPU grader it also "
        "sets how many kernels a GPU's free memory holds by default.",
    ).tag(config=True, limit=True)
    tmpfs_mb = Integer(
        256,
        help="Size of the kernel's one scratch tmpfs (MiB): its /tmp, /var/tmp, /dev/shm "
        "and what it writes in its working copy, together.",
    ).tag(config=True, limit=True)
    isolate_network = Bool(True, help="Put the kernel in a network namespace.").tag(config=True)
    drop_privileges = Bool(True, help="When root, run the kernel as a fresh uid.").tag(config=True)
    fork_server = Bool(
        True,
        help="Fork kernels from a server that imported `preload` once "
        "(attncourse.sandbox.forkserver).",
    ).tag(config=True)
    preload = List(
        Unicode(),
        list(constants.PRELOAD),
        help="Modules the fork server imports before forking kernels (never the course's "
        "grading code: a kernel holds what the server imported).",
    ).tag(config=True)
    cgroup_parent = Unicode(
        None,
        allow_none=True,
        help="Directory to make kernel cgroups in (None: where memory_cgroup_parent says; "
        "tests point it elsewhere).",
    )

    fork_servers = Instance(
        ForkServers,
        help="The grading process's fork servers (ResilientExecute passes its own); a kernel "
        "manager made alone gets one of its own.",
    )

    @default("fork_servers")
    def _own_fork_servers(self) -> ForkServers:
        return ForkServers()

    sandbox_run = None

    def use_run_dir(self, run: str | os.PathLike) -> None:
        """Sockets and connection file live in ``run`` (reachable from inside the sandbox)."""
        self.sandbox_run = str(run)
        if self.enabled:
            self.transport = "ipc"
            self.ip = os.path.join(self.sandbox_run, "kernel")
            self.connection_file = os.path.join(self.sandbox_run, "kernel.json")

    def spec(self, work: str | os.PathLike) -> dict:
        """What the launcher is to set up for a kernel whose working copy is ``work``."""
        # The environment's site-packages too: a venv may link to them (classroom/environment.py).
        keep = {sys.prefix, sys.base_prefix, sys.exec_prefix, *site.getsitepackages()}
        keep |= set(map(str, kernel_files()))
        mps_pipe = os.environ.get("CUDA_MPS_PIPE_DIRECTORY") if cuda_present() else None
        if mps_pipe:
            keep.add(mps_pipe)  # the kernel reaches the grader's MPS daemon through it
        cgroup = self._cgroup()
        if "parent" in cgroup:
            remove_cgroups(cgroup["parent"])  # those of kernels whose launcher was killed
        return {
            "run": self.sandbox_run,
            "work": str(work),
            "connection_file": self.connection_file,
            "fork_server": self.fork_servers.socket(self.preload) if self.fork_server else None,
            "keep": sorted(os.path.realpath(p) for p in keep),
            "gpu": {"memory_mb": self.gpu_memory_mb, "mps_pipe": mps_pipe},
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
            "prefix": cgroup_prefix(str(self.sandbox_run)),
            "limit": self.cgroup_memory_mb * 2**20,
        }

    def resources_cleaned(self, restart: bool) -> None:
        """After jupyter_client's cleanup, remove the kernel's cgroup (killing what is left in it)."""
        if self.enabled and self.sandbox_run is not None:
            cgroup = self._cgroup()
            if "parent" in cgroup:
                remove_cgroups(cgroup["parent"], cgroup["prefix"])

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        if not self.enabled or self.sandbox_run is None:
            return cmd
        work = launch_args(self).get("cwd") or os.getcwd()
        launcher = [
            sys.executable,
            "-m",
            "attncourse.sandbox.launcher",
            json.dumps(self.spec(str(work))),
            "--",
        ]
        return launcher + cmd

    def reap_strays(self) -> int:
        """Kill every live process the kernel left behind (forks, daemons); return how many.

        The sandbox's init and the kernel stay; everything else descending from
        the launcher goes, so a fork bomb's children stop competing for the CPU
        with the cells after it.
        """
        launcher = getattr(self.provisioner, "pid", None)
        if not launcher:
            return 0
        try:  # the fork server's copy plays the launcher when there is one
            launcher = int(Path(launcher_pid_file(str(self.sandbox_run))).read_text())
        except (OSError, ValueError, TypeError):
            pass
        found = strays(launcher)
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return len(found)

    def protections(self) -> dict:
        """What the launcher of the current kernel actually got (see
        :mod:`attncourse.sandbox.launcher`)."""
        if not self.enabled or self.sandbox_run is None:
            return {"sandbox": False}
        path = Path(self.sandbox_run) / "protections.json"
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return {"sandbox": False}
