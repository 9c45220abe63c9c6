"""What a kernel may use up: memory (its own cgroup) and scratch space (one bounded tmpfs).

A kernel's memory cgroup counts all its processes use, tmpfs pages included, and is the
only memory limit on a GPU grader (no address-space limit there). Its scratch, ``/tmp``,
``/var/tmp``, ``/dev/shm`` and its changes to its working copy, is one tmpfs in the
sandbox, so nothing it writes lands on the grader's disk. Tests that need what the
platform may refuse (a cgroup, a mount namespace) are skipped, saying which, without it;
the last ones check how the cgroup is placed and capped without starting kernels.
"""

import errno
import json
import os
import queue
import secrets
import subprocess
import time
from pathlib import Path

import pytest
import torch
from jupyter_core.utils import run_sync
from sandboxkit import kernel_output, needs, sandboxed_kernel

from attncourse.sandbox import cgroups
from attncourse.sandbox.cgroups import cgroup_prefix, memory_cgroup_parent, remove_cgroups
from attncourse.sandbox.kernelmanager import SandboxKernelManager

MiB = 2**20
# Memory tests: a small cgroup, and no address-space limit, so that the cgroup is what stops
# the kernel (as on a GPU grader).
SMALL = {"memory_mb": 0, "cgroup_memory_mb": 400}

# Cell code: fill(folder, token, mb, file_mb) writes files of file_mb MiB until mb MiB are
# written or a write fails; it returns (MiB written, errno of the failure or 0).
WRITE = """
import json, os
def fill(folder, token, mb, file_mb=50):
    written = 0
    for n in range(mb // file_mb):
        try:
            with open(os.path.join(folder, f"{token}-{n}"), "wb") as f:
                for _ in range(file_mb):
                    f.write(b"x" * 2**20)
                    written += 1
        except OSError as e:
            return written, e.errno
    return written, 0
"""
SCRATCH = ["/tmp", "/var/tmp", "/dev/shm", "."]  # "." : the working copy


def _outcome(km, kc, code, seconds=60):
    """Run ``code``: its reply's status (and error name), or "died" when the kernel did.

    Only the reply to this request counts: under load, jupyter_client's wait for a fresh
    kernel sends a second kernel_info_request when the first gets no answer in a second,
    and that request's late reply ("ok") is still queued on the shell channel."""
    msg_id = kc.execute(code)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            msg = run_sync(kc.get_shell_msg)(timeout=0.5)
        except queue.Empty:
            if not run_sync(km.is_alive)():
                return "died"
            continue
        if msg["parent_header"].get("msg_id") == msg_id:
            reply = msg["content"]
            return reply["status"] if reply["status"] == "ok" else reply.get("ename")
    raise AssertionError(f"no reply and no death in {seconds} s")


def _cgroups(km):
    """The cgroup directories of ``km``'s kernels that exist now."""
    parent = km.cgroup_parent or memory_cgroup_parent()
    prefix = cgroup_prefix(km.sandbox_run)
    return [name for name in os.listdir(parent) if name.startswith(prefix)]


@pytest.mark.slow  # this and the next: kernels pushed into the OOM killer, some 7 s
@pytest.mark.kernel
@pytest.mark.parametrize("fork_server", [True, False], ids=["forked", "fresh"])
def test_a_kernel_beyond_its_cgroup_is_killed_and_an_honest_one_computes(fork_server):
    with sandboxed_kernel(fork_server=fork_server, **SMALL) as (_, km, kc):
        record = km.protections()
        needs(record, "cgroup")
        assert record["cgroup_memory"] == 400 * MiB
        assert "as" not in record["rlimits"]
        assert len(_cgroups(km)) == 1
        honest = "import numpy\na = numpy.ones(100 * 2**20 // 8)\nassert a.sum() > 0"
        kc.kernel_info()  # a stale "ok" on the shell channel, as a start under load leaves
        assert _outcome(km, kc, honest) == "ok"
        greedy = "b = numpy.ones(1024 * 2**20 // 8)"
        assert _outcome(km, kc, greedy) in ("died", "MemoryError")
    assert _cgroups(km) == [], "the kernel's cgroup outlived it"


@pytest.mark.slow
@pytest.mark.kernel
def test_the_pages_a_kernel_writes_to_tmpfs_count_against_its_cgroup():
    """600 MB written to /dev/shm (a scratch tmpfs made larger than the cgroup here) are
    memory of the kernel's cgroup: the kernel is killed at 400 MB."""
    with sandboxed_kernel(tmpfs_mb=2048, **SMALL) as (_, km, kc):
        needs(km.protections(), "cgroup")
        assert _outcome(km, kc, WRITE + "fill('/dev/shm', 'shm', 600)") == "died"


@pytest.mark.kernel
def test_scratch_is_one_bounded_tmpfs_and_nothing_reaches_the_graders_disk():
    token = secrets.token_hex(6)
    honest = "\n".join(
        f"assert fill({d!r}, 'honest-{token}', 10, 10) == (10, 0)\n"
        f"assert os.path.getsize('{d}/honest-{token}-0') == 10 * 2**20\n"
        f"os.remove('{d}/honest-{token}-0')"
        for d in SCRATCH
    )
    greedy = f"print(json.dumps([fill(d, {token!r}, 600) for d in {SCRATCH!r}]))"
    with sandboxed_kernel() as (root, km, kc):
        record = km.protections()
        needs(record, "mount_namespace")
        needs(record, "work_overlay")
        reply, _ = kernel_output(kc, WRITE + honest)
        assert reply["status"] == "ok", reply
        reply, text = kernel_output(kc, WRITE + greedy)
        assert reply["status"] == "ok", reply
        on_disk = subprocess.run(["du", "-sm", str(root)], capture_output=True, text=True)
        outside = [*root.rglob(f"*{token}*")]
        outside += [p for d in ["/tmp", "/var/tmp", "/dev/shm"] for p in Path(d).glob(f"*{token}*")]
    results = json.loads(text)
    assert {error for _, error in results} == {errno.ENOSPC}, results
    assert record["scratch_mb"] - 8 < sum(mb for mb, _ in results) <= record["scratch_mb"]
    assert int(on_disk.stdout.split()[0]) < 5, f"the workspace holds {on_disk.stdout}"
    assert outside == [], "the kernel's files reached the grader's disk"


@pytest.mark.kernel
def test_system_v_shared_memory_is_the_kernels_own_and_dies_with_it():
    key = secrets.randbelow(2**30) + 1
    code = (
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        f"assert libc.shmget({key}, 64 * 2**20, 0o1600) >= 0, ctypes.get_errno()\n"
    )
    with sandboxed_kernel() as (_, km, kc):
        needs(km.protections(), "ipc_namespace")
        reply, _ = kernel_output(kc, code)
        assert reply["status"] == "ok", reply
        assert not _shm_keys() & {key}, "the kernel's segment is in the grader's IPC namespace"
    assert not _shm_keys() & {key}


def _shm_keys():
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return {int(line.split()[0]) for line in lines}


@pytest.mark.kernel
def test_where_no_cgroup_can_be_made_the_kernel_starts_and_says_why():
    with sandboxed_kernel(cgroup_parent="/sys/kernel") as (_, km, kc):  # no cgroups there
        reply, text = kernel_output(kc, "print(6 * 7)")
        record = km.protections()
    assert reply["status"] == "ok" and text.strip() == "42"
    assert record["cgroup"] is False
    assert record["cgroup_error"].startswith("cannot create a cgroup in /sys/kernel: ")


@pytest.mark.slow
@pytest.mark.kernel
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_on_a_gpu_grader_the_cgroup_limits_a_kernel_that_uses_cuda():
    """No RLIMIT_AS under CUDA: the cgroup is the only memory limit, and it holds."""
    with sandboxed_kernel(cgroup_memory_mb=3072) as (_, km, kc):
        needs(km.protections(), "cgroup")
        cuda = "import numpy, torch\nx = torch.ones(1024, device='cuda')\nassert x.sum() == 1024"
        assert _outcome(km, kc, cuda, seconds=120) == "ok"
        assert _outcome(km, kc, "b = numpy.ones(4 * 2**30 // 8)") in ("died", "MemoryError")


def test_cgroups_left_by_dead_launchers_are_removed_at_the_next_start():
    try:
        parent = memory_cgroup_parent()
    except OSError as e:
        pytest.skip(f"no memory cgroup here: {e}")
    done = subprocess.Popen(["true"])
    done.wait()  # its pid is that of a launcher that has exited
    stale = Path(parent, f"{cgroup_prefix('/nowhere')}{done.pid}")
    try:
        stale.mkdir()
    except OSError as e:
        pytest.skip(f"cannot make cgroups in {parent}: {e}")
    live = Path(parent, f"{cgroup_prefix('/nowhere')}{os.getpid()}")
    live.mkdir()
    try:
        km = SandboxKernelManager(fork_server=False)
        km.use_run_dir("/nowhere-else")
        km.spec("/nowhere-else/work")
        assert not stale.exists()
        assert live.exists(), "a cgroup of a live launcher was removed"
    finally:
        remove_cgroups(parent, cgroup_prefix("/nowhere"))


# ---------------------------------------------------------------- where the cgroup goes


def _cgroup_v2(tmp_path, own_controllers, own_subtree, parent_subtree):
    """A fake cgroup v2 tree: the grader's cgroup ``own`` in ``parent``."""
    parent, own = tmp_path, tmp_path / "grader"
    own.mkdir(parents=True)
    (own / "cgroup.controllers").write_text(own_controllers)
    (own / "cgroup.subtree_control").write_text(own_subtree)
    (parent / "cgroup.subtree_control").write_text(parent_subtree)
    return parent, own


def _refuse_writes(monkeypatch):
    """cgroup v2's answer to enabling a controller for the children of a cgroup that holds
    processes ("no internal processes")."""

    def busy(path, text):
        raise OSError(errno.EBUSY, os.strerror(errno.EBUSY))

    monkeypatch.setattr(cgroups, "write", busy)


def test_cgroup_v1_kernels_go_under_the_graders_memory_cgroup():
    assert memory_cgroup_parent({"v1": "/cg/memory/grader", "v2": "/cg/unified"}) == (
        "/cg/memory/grader"
    )


def test_cgroup_v2_kernels_go_under_the_graders_cgroup_where_it_delegates_memory(tmp_path):
    _, own = _cgroup_v2(tmp_path, "cpu memory pids", "memory", "memory")
    assert memory_cgroup_parent({"v2": str(own)}) == str(own)


def test_cgroup_v2_kernels_go_beside_a_grader_cgroup_that_holds_processes(tmp_path, monkeypatch):
    _refuse_writes(monkeypatch)
    parent, own = _cgroup_v2(tmp_path, "cpu memory", "", "cpu memory")
    assert memory_cgroup_parent({"v2": str(own)}) == str(parent)


def test_cgroup_v2_without_a_place_for_kernel_cgroups_says_why(tmp_path, monkeypatch):
    _refuse_writes(monkeypatch)
    _, own = _cgroup_v2(tmp_path, "cpu memory", "", "cpu")
    with pytest.raises(OSError, match="holds processes"):
        memory_cgroup_parent({"v2": str(own)})
    _, own = _cgroup_v2(tmp_path / "other", "cpu", "", "cpu memory")
    with pytest.raises(OSError, match="no memory controller"):
        memory_cgroup_parent({"v2": str(own)})


def test_a_kernel_cgroup_caps_memory_and_swap_at_the_limit():
    try:
        parent = memory_cgroup_parent()
    except OSError as e:
        pytest.skip(f"no memory cgroup here: {e}")
    got = {}
    made = cgroups.create_cgroup(
        {"parent": parent, "prefix": cgroup_prefix("/limits"), "limit": 300 * MiB}, got
    )
    if made is None:
        pytest.skip(got["cgroup_error"])
    path, version, procs = made
    os.close(procs)
    try:
        files = {
            "v1": ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"],
            "v2": ["memory.max"],
        }
        for name in files[version]:
            if Path(path, name).exists():
                assert Path(path, name).read_text().strip() == str(300 * MiB), name
        if version == "v2" and Path(path, "memory.swap.max").exists():
            assert Path(path, "memory.swap.max").read_text().strip() == "0"
        assert got == {"cgroup": version, "cgroup_memory": 300 * MiB}
    finally:
        assert cgroups.remove_cgroup(path)
