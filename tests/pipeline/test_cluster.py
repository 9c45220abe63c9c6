"""Where grading runs, without starting a cluster: GPU workers, task resources, the
scheduler from the course config, and commands acting on the course where they stand."""

import pytest

from attncourse.cli import build_parser
from attncourse.cluster import (
    CourseGrading,
    gpu_worker_specs,
    slots_by_host,
    task_resources,
    visible_gpus,
)
from attncourse.course import course_config
from attncourse.gpulanes import GpuLanes


def test_gpu_workers_are_pinned_to_their_device_and_advertise_one_gpu():
    lanes = GpuLanes({"0": 2, "3": 2}, kernel_mb=4096, why="")
    specs = gpu_worker_specs(lanes, mps_pipe="/tmp/attncourse-mps-x")
    assert sorted(specs) == ["gpu0-0", "gpu0-1", "gpu3-0", "gpu3-1"]
    for name, spec in specs.items():
        options = spec["options"]
        assert options["env"] == {
            "CUDA_VISIBLE_DEVICES": name[3],
            "CUDA_MPS_PIPE_DIRECTORY": "/tmp/attncourse-mps-x",
        }
        assert options["resources"] == {"GPU": 1} and options["nthreads"] == 1
    no_mps = gpu_worker_specs(GpuLanes({"1": 1}, kernel_mb=0, why=""))
    assert [s["options"]["env"] for s in no_mps.values()] == [{"CUDA_VISIBLE_DEVICES": "1"}]


@pytest.mark.parametrize(
    ("visible", "gpus"), [("2,3", ["2", "3"]), ("-1", []), ("", []), ("GPU-1a2b", ["GPU-1a2b"])]
)
def test_visible_gpus_follow_cuda_visible_devices(monkeypatch, visible, gpus):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert visible_gpus() == gpus


def test_tasks_ask_for_a_gpu_only_where_a_worker_has_one():
    cpu = {"host": "10.0.0.1", "nthreads": 1, "resources": {}}
    gpu = {"host": "10.0.0.2", "nthreads": 1, "resources": {"GPU": 1}}
    assert task_resources({"workers": {"a": cpu, "b": cpu}}) is None
    assert task_resources({"workers": {"a": cpu, "b": gpu}}) == {"GPU": 1}
    assert slots_by_host({"workers": {"a": cpu, "b": cpu, "c": gpu}}) == {
        "10.0.0.1": 2,
        "10.0.0.2": 1,
    }


def test_the_scheduler_comes_from_the_course_config(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text(
        'c = get_config()  # noqa: F821\nc.CourseGrading.scheduler = "tcp://head:8786"\n'
    )
    assert CourseGrading(config=course_config(tmp_path)).scheduler == "tcp://head:8786"
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()  # noqa: F821\n")
    assert CourseGrading(config=course_config(tmp_path)).scheduler == ""


def test_commands_act_on_the_course_where_they_stand(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(["grade", "toy", "--scheduler", "tcp://head:8786"])
    assert args.course == tmp_path and args.scheduler == "tcp://head:8786"
    (tmp_path / "other").mkdir()
    args = build_parser().parse_args(["report", "--course", "other"])
    assert args.course == tmp_path / "other"
