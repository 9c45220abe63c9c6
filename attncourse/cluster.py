"""Where grading runs: a Dask cluster, started on this machine for one run or already running.

Without a scheduler address, ``attncourse grade`` starts a local cluster for the run and
closes it at the end: a ``LocalCluster`` of worker processes, one thread each, as many as
``--workers`` (default: the cores). On a GPU grader it starts the lanes
:mod:`attncourse.gpulanes` planned (``--workers`` kernels over the visible GPUs, by default
from the cores and each GPU's free memory), each worker pinned to its device with
``CUDA_VISIBLE_DEVICES`` (and the run's MPS daemon's pipe) and advertising the resource
``GPU=1``. With an address (``--scheduler``, or ``c.CourseGrading.scheduler``
in ``nbgrader_config.py``) it grades on that cluster: ``dask scheduler`` / ``dask worker``,
dask-jobqueue's ``SLURMCluster``, dask-kubernetes' ``KubeCluster`` (README, "Grading a
large class"). Where any worker advertises ``GPU``, every student's task asks for
``GPU=1``, so kernels on a device never outnumber its workers.
"""

import contextlib
import logging
import os
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

from traitlets import Float, Integer, List, Unicode
from traitlets.config import Configurable

from attncourse.constants import default_workers
from attncourse.gpulanes import GpuLanes


class CourseGrading(Configurable):
    """How ``attncourse grade`` runs (``c.CourseGrading.*`` in ``nbgrader_config.py``)."""

    scheduler = Unicode(
        "",
        help="Address of a running Dask scheduler to grade on (tcp://HOST:8786); empty: a "
        "local cluster of this machine's cores, started for the run.",
    ).tag(config=True)
    retries = Integer(
        2,
        help="Times a student's task runs again after it failed (its grading process died); "
        "a task whose worker died is run elsewhere by Dask in any case.",
    ).tag(config=True)
    kernels_per_gpu = Integer(
        0,
        help="On a GPU grader, local workers (kernels at a time) per visible GPU when "
        "--workers is not given; 0: from the cores and each GPU's free memory "
        "(c.SandboxKernelManager.gpu_memory_mb per kernel).",
    ).tag(config=True)
    course_files = List(
        Unicode(),
        default_value=["*.py"],
        help="Files of the course directory (glob patterns) that workers get besides the "
        "assignment's source and release folders: the config and the modules it imports.",
    ).tag(config=True)
    worker_wait = Float(300.0, help="Seconds to wait for a first worker of a running cluster.").tag(
        config=True
    )


def visible_gpus() -> list[str]:
    """The GPUs this machine's workers may use: ``CUDA_VISIBLE_DEVICES`` or ``nvidia-smi -L``."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip() and d.strip() != "-1"]
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [str(i) for i, line in enumerate(listed.splitlines()) if line.startswith("GPU ")]


def gpu_worker_specs(lanes: GpuLanes, mps_pipe: str | None = None) -> dict:
    """Dask worker specs for a GPU grader: the planned one-thread workers per GPU, each pinned
    to it (``CUDA_VISIBLE_DEVICES``, and the MPS daemon's pipe where there is one) and
    advertising ``GPU=1``."""
    from distributed import Nanny

    specs = {}
    for gpu, kernels in lanes.per_gpu.items():
        env = {"CUDA_VISIBLE_DEVICES": gpu}
        if mps_pipe:
            env["CUDA_MPS_PIPE_DIRECTORY"] = mps_pipe
        for k in range(kernels):
            specs[f"gpu{gpu}-{k}"] = {
                "cls": Nanny,
                "options": {
                    "nthreads": 1,
                    "resources": {"GPU": 1},
                    "env": dict(env),
                    "memory_limit": 0,
                },
            }
    return specs


@contextlib.contextmanager
def grading_client(
    scheduler: str | None = None,
    workers: int | None = None,
    gpu_lanes: GpuLanes | None = None,
    mps_pipe: str | None = None,
    worker_wait: float = 300.0,
) -> Iterator[Any]:
    """A Dask client on the cluster at ``scheduler``, or on a local one started (and closed)
    here: ``workers`` processes of one thread (default: the cores), or the GPU workers of
    ``gpu_lanes``."""
    from distributed import Client, LocalCluster, Scheduler, SpecCluster

    if scheduler:
        client = Client(scheduler)
        try:
            client.wait_for_workers(1, timeout=worker_wait)
            yield client
        finally:
            client.close()
        return
    quiet = logging.ERROR
    if gpu_lanes is not None:
        scheduler_spec = {"cls": Scheduler, "options": {"dashboard_address": ":0"}}
        specs = gpu_worker_specs(gpu_lanes, mps_pipe)
        cluster = SpecCluster(workers=specs, scheduler=scheduler_spec, silence_logs=quiet)
    else:
        cluster = LocalCluster(
            n_workers=workers or default_workers(),
            threads_per_worker=1,
            processes=True,
            memory_limit=0,  # the sandbox limits each kernel; the workers themselves are small
            dashboard_address=":0",
            silence_logs=quiet,
        )
    try:
        with Client(cluster) as client:
            yield client
    finally:
        cluster.close()


def task_resources(info: dict) -> dict | None:
    """What each student's task asks of a worker: ``{"GPU": 1}`` where a worker has GPUs."""
    has_gpu = any(w.get("resources", {}).get("GPU") for w in info["workers"].values())
    return {"GPU": 1} if has_gpu else None


def slots_by_host(info: dict) -> dict[str, int]:
    """host -> grading slots (worker threads) the cluster has there."""
    slots: dict[str, int] = {}
    for worker in info["workers"].values():
        slots[worker["host"]] = slots.get(worker["host"], 0) + worker["nthreads"]
    return slots


def dashboard_of(client: Any) -> str | None:
    """The Dask dashboard's address, where the scheduler serves one (it needs bokeh there)."""
    if "dashboard" not in client.scheduler_info().get("services", {}):
        return None
    if not client.run_on_scheduler(_has_bokeh):
        return None
    return client.dashboard_link


def _has_bokeh():
    import importlib.util

    return importlib.util.find_spec("bokeh") is not None
