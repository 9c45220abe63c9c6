"""How many kernels share each GPU of a grader, and the MPS daemon that holds each to its share.

``attncourse grade`` on a machine with GPUs (and no ``--scheduler``) plans its lanes here
before grading starts: ``--workers N`` (``WORKERS=N``) kernels spread over the visible GPUs,
or by default as many per GPU as the cores allow and its free memory holds at
``c.SandboxKernelManager.gpu_memory_mb`` each (printed with the reason). A number a GPU
cannot hold is refused, naming the GPU, its free memory and the most that fit.

Kernels sharing a card each get a memory limit enforced outside the kernel: the grader starts
a CUDA MPS control daemon of its own (:func:`mps_daemon`) whose default per-client pinned
device memory limit is that share, and the launcher gives every kernel the same limit
(``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``) before the kernel starts. Where MPS is unavailable
(no ``nvidia-cuda-mps-control``, or the daemon does not start), or cannot serve the kernels
together (graded as root, each kernel runs as a fresh uid, and MPS serves one uid's clients at a
time: kernels of another uid would wait), nothing outside the kernel can
cap its GPU memory: the default is then one kernel per GPU (printed with the reason), and an
explicit ``--workers`` above that is honoured with a warning that those kernels share the
card unprotected.
"""

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    """A visible GPU: its index (as ``CUDA_VISIBLE_DEVICES`` names it) and its memory."""

    index: str
    free_mb: int | None  # None: nvidia-smi could not say (the GPU is then planned by cores only)
    total_mb: int | None


@dataclass(frozen=True)
class GpuLanes:
    """The plan: kernels per GPU (index -> count), each one's memory limit, and why."""

    per_gpu: dict[str, int]
    kernel_mb: int  # each kernel's GPU memory limit (MiB); 0: none
    why: str

    @property
    def total(self) -> int:
        """Kernels at a time, over all GPUs."""
        return sum(self.per_gpu.values())


class LanesRefused(ValueError):
    """The kernels asked for do not fit the GPUs' free memory."""


def mps_available() -> bool:
    """Whether this machine has CUDA MPS's control program (its daemon may still fail)."""
    return shutil.which("nvidia-cuda-mps-control") is not None


def gpus_with_memory(visible: list[str]) -> list[Gpu]:
    """The ``visible`` GPUs (indices or UUIDs) with their free and total memory, read from
    ``nvidia-smi``; a GPU whose memory cannot be read is listed with None for it."""
    smi = shutil.which("nvidia-smi")
    listed = ""
    if smi:
        fields = "index,uuid,memory.free,memory.total"
        query = [smi, f"--query-gpu={fields}", "--format=csv,noheader,nounits"]
        try:
            listed = subprocess.run(query, capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            listed = ""
    rows = [[f.strip() for f in line.split(",")] for line in listed.splitlines()]
    rows = [r for r in rows if len(r) == 4 and r[2].isdigit() and r[3].isdigit()]
    gpus = []
    for name in visible:
        row = next((r for r in rows if name == r[0] or r[1].startswith(name)), None)
        gpus.append(Gpu(name, int(row[2]), int(row[3])) if row else Gpu(name, None, None))
    return gpus


def plan_lanes(
    gpus: list[Gpu],
    requested: int | None,
    cores: int,
    kernel_mb: int,
    isolated: bool,
    why_not: str = "CUDA MPS is unavailable",
) -> GpuLanes:
    """Kernels per GPU: ``requested`` in all (spread evenly), else the default: per GPU the
    cores it gets, no more than its free memory holds at ``kernel_mb`` each (one per GPU where
    the kernels cannot be ``isolated``, for the reason ``why_not``). Raises
    :class:`LanesRefused` when a GPU cannot hold its share."""
    if not gpus:
        raise ValueError("no GPUs to plan lanes on")
    if requested is None:
        per_core = max(1, cores // len(gpus))
        per_gpu = {}
        for gpu in gpus:
            fit = gpu.free_mb // kernel_mb if kernel_mb and gpu.free_mb is not None else per_core
            if fit < 1:
                raise LanesRefused(_too_full(gpu, 1, kernel_mb))
            per_gpu[gpu.index] = min(per_core, fit) if isolated else 1
        if isolated:
            why = (
                f"{sum(per_gpu.values())} kernels at a time by default: {cores} cores over "
                f"{len(gpus)} GPU(s), at most {per_core} per GPU, each GPU's free memory at "
                f"{kernel_mb:,} MiB per kernel "
                f"({', '.join(_free(g) for g in gpus)})"
            )
        else:
            why = (
                f"{len(gpus)} kernel(s) at a time by default, one per GPU: {why_not}, "
                "so nothing outside a kernel could cap its GPU memory "
                "(ask for more with --workers; they would share each card unprotected)"
            )
        return GpuLanes(per_gpu, kernel_mb if isolated else 0, why)
    if requested < 1:
        raise LanesRefused(f"--workers {requested}: at least one kernel is needed")
    per_gpu = {
        gpu.index: requested // len(gpus) + (k < requested % len(gpus))
        for k, gpu in enumerate(gpus)
    }
    for gpu in gpus:
        if kernel_mb and gpu.free_mb is not None and per_gpu[gpu.index] * kernel_mb > gpu.free_mb:
            raise LanesRefused(
                f"--workers {requested}: " + _too_full(gpu, per_gpu[gpu.index], kernel_mb)
            )
    per_gpu = {index: n for index, n in per_gpu.items() if n}
    why = f"{requested} kernels at a time, as asked, over {len(per_gpu)} GPU(s)"
    if not isolated and any(n > 1 for n in per_gpu.values()):
        why += (
            f"; WARNING: {why_not}, so kernels sharing a GPU have no memory "
            "limit each: one can take the card's memory from its neighbours"
        )
    return GpuLanes(per_gpu, kernel_mb if isolated else 0, why)


def _free(gpu: Gpu) -> str:
    if gpu.free_mb is None:
        return f"GPU {gpu.index}: free memory unknown (nvidia-smi), planned by cores only"
    return f"GPU {gpu.index}: {gpu.free_mb:,} MiB free"


def _too_full(gpu: Gpu, kernels: int, kernel_mb: int) -> str:
    free, total = gpu.free_mb or 0, gpu.total_mb or 0
    return (
        f"GPU {gpu.index} has {free:,} MiB free of {total:,}; {kernels} kernel(s) "
        f"of {kernel_mb:,} MiB each need {kernels * kernel_mb:,} MiB, and at most "
        f"{free // kernel_mb} fit (c.SandboxKernelManager.gpu_memory_mb sets the share)"
    )


@contextlib.contextmanager
def mps_daemon(gpus: list[Gpu], kernel_mb: int) -> Iterator[str | None]:
    """A CUDA MPS control daemon of this run, its default per-client limit ``kernel_mb`` on
    every GPU; yields its pipe directory (workers and their kernels connect through it), or
    None where MPS is unavailable. The daemon is told to quit at the end."""
    control = shutil.which("nvidia-cuda-mps-control")
    if not control or not kernel_mb:
        yield None
        return
    home = tempfile.mkdtemp(prefix="attncourse-mps-")
    os.chmod(home, 0o755)  # kernels of other uids connect through it
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}  # device indices
    env.update(CUDA_MPS_PIPE_DIRECTORY=home, CUDA_MPS_LOG_DIRECTORY=home)
    started = subprocess.run([control, "-d"], env=env, capture_output=True, timeout=60)
    if started.returncode != 0:
        shutil.rmtree(home, ignore_errors=True)
        yield None
        return
    commands = "".join(
        f"set_default_device_pinned_mem_limit {gpu.index} {kernel_mb}M\n" for gpu in gpus
    )
    try:
        subprocess.run([control], input=commands, env=env, text=True, timeout=60, check=False)
        yield home
    finally:
        subprocess.run([control], input="quit\n", env=env, text=True, timeout=60, check=False)
        shutil.rmtree(home, ignore_errors=True)
