"""Each grading kernel runs in a sandbox: its own working copy, no network, hard limits.

The kernel side, the only modules of the package a kernel ever sees (mounted read-only
in its sandbox, held in a forked kernel's memory): :data:`KERNEL_MODULES`. They import
nothing of the package outside that list, and nothing of the grading code.

* :mod:`~attncourse.sandbox.launcher` — ``python -m attncourse.sandbox.launcher SPEC --
  KERNEL_CMD...``: namespaces, uid, rlimits, then the kernel; records what it got;
* :mod:`~attncourse.sandbox.filesystem` — what the kernel sees of the filesystem;
* :mod:`~attncourse.sandbox.cgroups` — the kernel's own memory cgroup;
* :mod:`~attncourse.sandbox.linux` — the system calls Python does not offer;
* :mod:`~attncourse.sandbox.forkserver` — forks kernels from a process that imported
  torch once; :mod:`~attncourse.sandbox.forkclient` — the launcher's side of it.

The grader side:

* :mod:`~attncourse.sandbox.kernelmanager` — :class:`SandboxKernelManager`, the
  jupyter_client kernel manager that starts kernels through the launcher;
* :mod:`~attncourse.sandbox.forkstart` — starts this grader's fork server;
* :mod:`~attncourse.sandbox.workspace` — a kernel's private directories, outside the course;
* :mod:`~attncourse.sandbox.sparekernel` — the kernel started ahead for this process's next
  notebook (``ResilientExecute.prewarm``);
* :mod:`~attncourse.sandbox.proctree` — what a kernel left running, from ``/proc``.
"""

KERNEL_MODULES = (
    "attncourse",
    "attncourse.sandbox",
    "attncourse.sandbox.cgroups",
    "attncourse.sandbox.filesystem",
    "attncourse.sandbox.forkclient",
    "attncourse.sandbox.forkserver",
    "attncourse.sandbox.launcher",
    "attncourse.sandbox.linux",
)
