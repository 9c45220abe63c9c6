"""A kernel of an unprivileged grader holds no privilege over its own sandbox.

Graded by an ordinary user, the sandbox is a user namespace whose creator holds every
capability in it, over the mount namespace that hides the course among others. A kernel
forked by the fork server is not exec'd, so without care it would keep them and could
simply unmount what covers the course; the tmpfs covers would be its own to write in,
and the sandbox's first process (same uid) its own to inspect. This runs a forked kernel
as an ordinary uid and checks that none of that is possible, and that the memory cgroup,
which such a grader may not create, is refused with the reason while the kernel still starts.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from sandboxkit import reachable

from attncourse.course import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.kernel, pytest.mark.xdist_group("nonroot")]

# Not 65534: a new user namespace shows every id as 65534 until its maps are written.
GRADER = 4242
HELPERS = Path(__file__).resolve().parents[1] / "helpers"
COVERED = "/" + ROOT.parts[1]  # the top-level directory that holds the course
SCRATCH = {"/tmp", "/var/tmp", "/dev/shm"}  # the kernel's own scratch tmpfs, writable by design
# Cell code: what the kernel can do to its sandbox.
ATTEMPTS = f"""
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
seen = {{"capabilities": [line.split()[1] for line in open("/proc/self/status")
                           if line.startswith(("CapPrm", "CapEff"))]}}
seen["unmount"] = libc.umount2({COVERED.encode()!r}, 2) == 0 or ctypes.get_errno()
seen["course"] = sorted(os.listdir({str(ROOT)!r}))
seen["writes"] = {{}}
for path in [{COVERED!r} + "/attncourse-write-probe", "/var/x", {str(ROOT / "attncourse" / "x")!r}]:
    try:
        open(path, "w").close()
        seen["writes"][path] = "wrote"
    except OSError as e:
        seen["writes"][path] = e.strerror
try:
    seen["init"] = os.listdir("/proc/1/cwd")
except OSError as e:
    seen["init"] = type(e).__name__
print(json.dumps(seen))
"""
SCRIPT = f"""
import json, sys
sys.path.insert(0, {str(HELPERS)!r})
from sandboxkit import kernel_output, sandboxed_kernel
with sandboxed_kernel() as (_, km, kc):
    reply, text = kernel_output(kc, {ATTEMPTS!r})
    print(json.dumps({{"status": reply["status"], "seen": text, "got": km.protections()}}))
"""


@pytest.fixture(scope="module")
def attempted():
    """What a forked kernel of a grader running as ``GRADER`` managed (see ATTEMPTS)."""
    if os.geteuid() != 0:
        pytest.skip(f"the suite runs as uid {os.geteuid()}: it cannot become another user")
    for tool in ("unshare", "setpriv"):
        if not shutil.which(tool):
            pytest.skip(f"`{tool}` (util-linux) is not installed")
    scratch = Path(tempfile.mkdtemp(prefix="attncourse-nonroot-kernel-"))
    os.chmod(scratch, 0o755)
    home = scratch / "home"
    home.mkdir()
    os.chown(home, GRADER, GRADER)
    env = [f"HOME={home}", f"PATH={Path(sys.executable).parent}:/usr/bin:/bin", "LANG=C.UTF-8"]
    drop = ["setpriv", f"--reuid={GRADER}", f"--regid={GRADER}", "--clear-groups"]
    drop += ["env", "-i", *env, sys.executable, "-c", SCRIPT]
    script = "\n".join(
        ["set -e", *reachable([sys.executable, ROOT], scratch), "exec " + shlex.join(drop)]
    )
    run = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        cwd=home,
        capture_output=True,
        text=True,
        timeout=300,
    )
    shutil.rmtree(scratch, ignore_errors=True)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["status"] == "ok", result
    return json.loads(result["seen"]), result["got"]


def test_the_kernel_ran_forked_in_a_user_namespace(attempted):
    _, got = attempted
    assert got["user_namespace"] and got["mount_namespace"] and got["preloaded"], got


def test_the_kernel_has_no_capability_and_cannot_unmount_the_cover_of_the_course(attempted):
    seen, _ = attempted
    assert set(seen["capabilities"]) == {"0000000000000000"}, seen["capabilities"]
    assert seen["unmount"] is not True
    assert "source" not in seen["course"]


def test_the_covers_are_read_only_and_the_sandboxs_init_is_out_of_reach(attempted):
    seen, _ = attempted
    writes = dict(seen["writes"])
    if COVERED in SCRATCH:
        # A course under /tmp is hidden by the kernel's own scratch tmpfs: writable there by
        # design, and nothing reaches the grader's disk.
        assert writes.pop(COVERED + "/attncourse-write-probe") == "wrote", seen["writes"]
        assert not Path(COVERED, "attncourse-write-probe").exists()
    assert set(writes.values()) == {"Read-only file system"}, seen["writes"]
    assert seen["init"] == "PermissionError"


def test_without_root_the_cgroup_is_refused_with_the_reason_and_the_kernel_runs(attempted):
    _, got = attempted
    assert got["cgroup"] is False
    assert "Permission denied" in got["cgroup_error"], got["cgroup_error"]
