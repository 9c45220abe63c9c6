"""A GPU grader's lanes, with a fake device list (no GPU needed): the default from the cores and
each GPU's free memory, the refusal of a number a GPU cannot hold, and the environment each
kernel gets to hold it to its share."""

import os
import stat

import pytest

from attncourse import pipeline
from attncourse.cluster import CourseGrading
from attncourse.gpulanes import Gpu, LanesRefused, gpus_with_memory, plan_lanes
from attncourse.sandbox.launcher import gpu_environment

H100 = Gpu("0", free_mb=79_000, total_mb=81_559)
BUSY = Gpu("1", free_mb=9_000, total_mb=81_559)
H100_B = Gpu("2", free_mb=79_000, total_mb=81_559)


def test_the_default_is_the_cores_per_gpu_within_free_memory():
    lanes = plan_lanes([H100], None, cores=16, kernel_mb=4096, isolated=True)
    assert lanes.per_gpu == {"0": 16} and lanes.kernel_mb == 4096
    assert "16 cores" in lanes.why and "79,000 MiB free" in lanes.why
    few_cores = plan_lanes([H100, BUSY], None, cores=16, kernel_mb=4096, isolated=True)
    assert few_cores.per_gpu == {"0": 8, "1": 2}  # GPU 1's 9,000 MiB hold two kernels
    assert few_cores.total == 10


def test_the_default_is_one_kernel_per_gpu_where_mps_cannot_isolate_them(monkeypatch):
    lanes = plan_lanes([H100, BUSY], None, cores=16, kernel_mb=4096, isolated=False)
    assert lanes.per_gpu == {"0": 1, "1": 1} and lanes.kernel_mb == 0
    assert "MPS is unavailable" in lanes.why
    # graded as root, each kernel is a fresh uid: one MPS server cannot serve them together
    from traitlets.config import Config

    monkeypatch.setattr(pipeline, "mps_available", lambda: True)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    as_root = pipeline.gpu_lanes(Config(), CourseGrading(), [H100], None)
    assert as_root.per_gpu == {"0": 1} and "fresh uid" in as_root.why
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(pipeline, "cores", lambda: 16)
    as_user = pipeline.gpu_lanes(Config(), CourseGrading(), [H100], None)
    assert as_user.kernel_mb == 4096 and as_user.per_gpu == {"0": 16}


def test_workers_asked_for_are_spread_over_the_gpus_and_honoured():
    lanes = plan_lanes([H100, H100_B], 5, cores=2, kernel_mb=4096, isolated=True)
    assert lanes.per_gpu == {"0": 3, "2": 2}
    assert plan_lanes([H100, H100_B], 1, cores=2, kernel_mb=4096, isolated=True).per_gpu == {"0": 1}
    one = plan_lanes([H100], 8, cores=2, kernel_mb=4096, isolated=True)
    assert one.per_gpu == {"0": 8}  # more than the cores when asked: the GPU holds them
    unprotected = plan_lanes([H100], 4, cores=16, kernel_mb=4096, isolated=False)
    assert unprotected.per_gpu == {"0": 4} and "WARNING" in unprotected.why


def test_a_number_a_gpu_cannot_hold_is_refused_with_the_reason():
    with pytest.raises(LanesRefused) as refused:
        plan_lanes([BUSY], 3, cores=16, kernel_mb=4096, isolated=True)
    words = str(refused.value)
    assert words.startswith("--workers 3: GPU 1 has 9,000 MiB free")
    assert "3 kernel(s) of 4,096 MiB each need 12,288 MiB" in words and "at most 2 fit" in words
    assert plan_lanes([BUSY], 2, cores=16, kernel_mb=4096, isolated=True).total == 2  # control
    unknown = Gpu("3", free_mb=None, total_mb=None)  # no nvidia-smi: by the cores only
    assert plan_lanes([unknown], None, cores=4, kernel_mb=4096, isolated=True).per_gpu == {"3": 4}
    assert plan_lanes([unknown], 6, cores=4, kernel_mb=4096, isolated=True).per_gpu == {"3": 6}
    full = Gpu("2", free_mb=1_000, total_mb=81_559)
    with pytest.raises(LanesRefused, match="at most 0 fit"):
        plan_lanes([full], None, cores=16, kernel_mb=4096, isolated=True)


def test_grade_refuses_before_grading_starts(tmp_path, monkeypatch):
    """``attncourse grade --workers 40`` on a fake 9 GB-free GPU stops with the reason and
    exit status 2, before any submission is touched or a cluster started."""
    (tmp_path / "submitted" / "s" / "a").mkdir(parents=True)
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    monkeypatch.setattr(pipeline, "visible_gpus", lambda: ["1"])
    monkeypatch.setattr(pipeline, "gpus_with_memory", lambda visible: [BUSY])
    monkeypatch.setattr(pipeline, "mps_available", lambda: True)

    def no_cluster(*args, **kwargs):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(pipeline, "grading_client", no_cluster)
    out = __import__("io").StringIO()
    status, results = pipeline.grade("a", workers=40, course=tmp_path, progress=False, out=out)
    assert (status, results) == (2, {})
    assert "attncourse grade: --workers 40: GPU 1 has 9,000 MiB free" in out.getvalue()
    assert not (tmp_path / "autograded").exists()


def test_kernels_per_gpu_is_read_when_no_workers_are_asked_for(monkeypatch):
    from traitlets.config import Config

    monkeypatch.setattr(pipeline, "mps_available", lambda: True)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    config = Config({"CourseGrading": {"kernels_per_gpu": 3}})
    lanes = pipeline.gpu_lanes(config, CourseGrading(config=config), [H100, H100_B], None)
    assert lanes.per_gpu == {"0": 3, "2": 3}
    assert pipeline.gpu_lanes(config, CourseGrading(config=config), [H100], 2).total == 2


def test_each_kernel_gets_its_share_and_the_daemons_pipe():
    spec = {"gpu": {"memory_mb": 4096, "mps_pipe": "/tmp/attncourse-mps-x"}}
    assert gpu_environment(spec) == {
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=4096M",
        "CUDA_MPS_PIPE_DIRECTORY": "/tmp/attncourse-mps-x",
    }
    assert gpu_environment({"gpu": {"memory_mb": 4096, "mps_pipe": None}}) == {}  # no MPS
    assert gpu_environment({"gpu": {"memory_mb": 0, "mps_pipe": "/x"}}) == {}  # no limit
    assert gpu_environment({}) == {}


def test_the_gpus_memory_is_read_from_nvidia_smi(tmp_path, monkeypatch):
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\necho '0, GPU-1a2b3c, 79000, 81559'\necho '1, GPU-4d5e6f, 9000, 81559'\n"
    )
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert gpus_with_memory(["1", "GPU-1a2b", "7"]) == [
        Gpu("1", 9000, 81559),
        Gpu("GPU-1a2b", 79000, 81559),
        Gpu("7", None, None),  # not listed: planned by cores only
    ]
