"""The kernel sandbox on its own: what a process inside can see, reach and use.

The launcher records in ``protections.json`` what the platform gave it; each
test checks that a recorded protection really holds, and is skipped (saying
which) where the platform did not give it.
"""

import json
import os
import resource
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from jupyter_core.utils import run_sync
from sandboxkit import (
    SERVERS,
    kernel_output,
    needs,
    sandboxed_kernel,
    shell_reply,
    tempfile_dir,
)

import attncourse
from attncourse.course import ROOT
from attncourse.sandbox.kernelmanager import SandboxKernelManager, cuda_present, kernel_files

pytestmark = [
    pytest.mark.kernel,
    pytest.mark.xdist_group("sandbox"),
]  # every test here starts the launcher or a kernel

PROBE = r"""
import json, os, resource, socket, sys
out = {"uid": os.getuid(), "pid": os.getpid(), "cwd": os.getcwd(), "listing": os.listdir(".")}
for name, path in [("secret", sys.argv[1]), ("course_pkg", sys.argv[2])]:
    try:
        out[name] = open(path).read()
    except OSError as e:
        out[name] = type(e).__name__
try:
    open(sys.argv[2] + ".new", "w")
    out["write_pkg"] = "wrote"
except OSError as e:
    out["write_pkg"] = type(e).__name__
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[3])), timeout=2)
    out["network"] = "connected"
except OSError as e:
    out["network"] = type(e).__name__
out["limits"] = {k: resource.getrlimit(getattr(resource, "RLIMIT_" + k.upper()))[0]
                 for k in ("as", "cpu", "nproc", "fsize")}
try:
    with open("big", "wb") as f:
        f.write(b"x" * (3 * 2**20))
    out["big_file"] = "wrote"
except OSError as e:
    out["big_file"] = type(e).__name__
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """Run PROBE in the sandbox; return (what it saw, what the launcher recorded, the secret)."""
    base = tmp_path_factory.mktemp("sandbox")
    secret = base / "secret.txt"
    secret.write_text("solutions")
    server = socket.create_server(("127.0.0.1", 0))
    root = Path(tempfile_dir())
    work, run = root / "work", root / "run"
    work.mkdir()
    run.mkdir()
    (work / "data.csv").write_text("1,2\n")
    km = SandboxKernelManager(file_size_mb=2, fork_servers=SERVERS)
    km.use_run_dir(run)
    spec = km.spec(work)
    package = Path(attncourse.__file__)
    cmd = [sys.executable, "-c", PROBE, str(secret), str(package), str(server.getsockname()[1])]
    launcher = [sys.executable, "-m", "attncourse.sandbox.launcher", json.dumps(spec), "--", *cmd]
    done = subprocess.run(launcher, capture_output=True, text=True, timeout=120)
    server.close()
    record = json.loads((run / "protections.json").read_text())
    log = (run / "kernel.log").read_text()
    assert done.returncode == 0, log
    return json.loads(log.strip().splitlines()[-1]), record, work


def test_kernel_runs_in_its_working_copy(probed):
    seen, _, work = probed
    assert seen["cwd"] == str(work)
    assert seen["listing"] == ["data.csv"]


def test_files_outside_the_working_copy_do_not_exist_for_it(probed):
    seen, record, _ = probed
    needs(record, "mount_namespace")
    assert seen["secret"] == "FileNotFoundError"
    assert "/tmp" in record["hidden"]


def test_course_package_is_readable_but_not_writable(probed):
    seen, record, _ = probed
    needs(record, "mount_namespace")
    assert seen["course_pkg"] not in ("FileNotFoundError", "PermissionError")  # it read it
    assert seen["write_pkg"] in ("OSError", "PermissionError")


def test_no_network(probed):
    seen, record, _ = probed
    needs(record, "network_namespace")
    assert seen["network"] == "OSError"


def test_own_pid_namespace_and_unprivileged_uid(probed):
    seen, record, _ = probed
    needs(record, "pid_namespace")
    assert seen["pid"] == 2  # 1 is the sandbox's init
    if os.geteuid() == 0:
        needs(record, "uid")
        assert seen["uid"] == record["uid"] != 0


def test_rlimits_apply(probed):
    seen, record, _ = probed
    if cuda_present():  # the sandbox sets no RLIMIT_AS on a GPU machine
        assert "as" not in record["rlimits"]
        assert seen["limits"]["as"] == resource.RLIM_INFINITY
    else:
        assert seen["limits"]["as"] == record["rlimits"]["as"]
    assert seen["limits"]["cpu"] == record["rlimits"]["cpu"]
    assert seen["limits"]["fsize"] == 2 * 2**20
    assert seen["big_file"] == "OSError"  # 3 MiB > the 2 MiB file-size limit
    if "nproc" in record["rlimits"]:
        assert seen["limits"]["nproc"] == record["rlimits"]["nproc"]


def test_kernel_manager_reaches_a_sandboxed_kernel_over_ipc():
    with sandboxed_kernel() as (_, km, kc):
        reply = run_sync(kc.execute_interactive)("import os", timeout=60)
        assert reply["content"]["status"] == "ok"
        assert km.transport == "ipc"
        assert km.protections().get("mount_namespace") is not None


def _gone(pid, seconds=10):
    """Whether process ``pid`` has ended (zombies count as ended) within ``seconds``."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.1)
    return False


def test_fork_server_kernel_is_preloaded_interruptible_and_dies_with_its_launcher():
    from attncourse.sandbox.forkclient import launcher_pid_file

    with sandboxed_kernel() as (root, km, kc):
        assert km.fork_server
        assert km.protections()["preloaded"] is True
        # The server's copy that set up this sandbox is known outside it, not inside.
        pid_file = launcher_pid_file(root / "run")
        sandbox_pid = int(Path(pid_file).read_text())
        # Interrupts reach the kernel through the launcher and the server.
        # stop_on_error=False, as nbgrader sends it (allow_errors): ipykernel 7 replies to an
        # interrupted request before it posts "stop aborting" to its shell thread, so with
        # the default True a request sent right after the reply can come back "aborted".
        msg_id = kc.execute("import torch, os\nwhile True:\n    pass", stop_on_error=False)
        import time

        time.sleep(2)
        run_sync(km.interrupt_kernel)()
        reply = shell_reply(kc, msg_id, timeout=30)
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        # Its working copy as cwd, and the pid file out of its sight.
        reply = run_sync(kc.execute_interactive)(
            f"assert os.getcwd().endswith('work'), os.getcwd()\n"
            f"assert not os.path.exists({pid_file!r})",
            timeout=30,
        )
        assert reply["content"]["status"] == "ok", reply["content"]
    assert _gone(sandbox_pid), "the kernel's sandbox outlived its launcher"


def test_an_unreachable_fork_server_costs_only_time(tmp_path):
    root = Path(tempfile_dir())
    work, run = root / "work", root / "run"
    work.mkdir()
    run.mkdir()
    km = SandboxKernelManager(fork_server=False)  # its spec then names no server: this one
    km.use_run_dir(run)
    spec = dict(km.spec(work), fork_server=str(tmp_path / "no-server"))
    cmd = [sys.executable, "-c", "print('started')"]
    launcher = [sys.executable, "-m", "attncourse.sandbox.launcher", json.dumps(spec), "--", *cmd]
    done = subprocess.run(launcher, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (run / "kernel.log").read_text().strip() == "started"
    assert json.loads((run / "protections.json").read_text())["preloaded"] is False


def _draws_of_a_forked_kernel():
    """What ``random`` and ``numpy.random`` give first in a kernel forked by the fork server."""
    preload = [*SandboxKernelManager().preload, "random", "numpy.random"]  # seeded in the server
    out = []
    with sandboxed_kernel(preload=preload) as (_, km, kc):
        assert km.protections()["preloaded"] is True
        reply = run_sync(kc.execute_interactive)(
            "import random, numpy\nprint(random.random(), numpy.random.rand())",
            timeout=30,
            output_hook=lambda msg: out.append(msg["content"].get("text", "")),
        )
        assert reply["content"]["status"] == "ok", reply["content"]
    return "".join(out).split()


def test_forked_kernels_draw_their_own_random_seeds_as_fresh_processes_do():
    """A fork copies the server's generator states: without reseeding, every student's
    kernel would draw the same 'random' numbers (Python's ``random`` reseeds itself at
    fork; ``numpy.random`` is reseeded by the fork server)."""
    first, second = _draws_of_a_forked_kernel(), _draws_of_a_forked_kernel()
    assert len(first) == 2, first
    assert first[0] != second[0], "random: two kernels drew the same first number"
    assert first[1] != second[1], "numpy.random: two kernels drew the same first number"


def test_forked_kernels_collect_their_own_garbage_but_not_the_preloaded_modules():
    """The fork server freezes what it imported before forking: a kernel's collections skip
    torch's objects (no copy-on-write of the server's heap), yet its own cycles are freed."""
    code = (
        "import gc, weakref\n"
        "class Node:\n"
        "    pass\n"
        "a = Node(); a.me = a; alive = weakref.ref(a); del a\n"
        "gc.collect()\n"
        "assert alive() is None, 'a reference cycle made in the kernel was not collected'\n"
        "assert gc.get_freeze_count() > 10_000, f'{gc.get_freeze_count()} objects frozen'\n"
    )
    with sandboxed_kernel() as (_, km, kc):
        assert km.protections()["preloaded"] is True
        reply = run_sync(kc.execute_interactive)(code, timeout=30)
        assert reply["content"]["status"] == "ok", reply["content"]


PACKAGE = Path(attncourse.__file__).parent
# What a student who read this repository would look for, and must not find.
GRADING_FILES = [
    PACKAGE / "grading",
    PACKAGE / "grading" / "__init__.py",
    PACKAGE / "judge",
    PACKAGE / "judge" / "checks.py",
    ROOT / "source",
    ROOT / "release",
    ROOT / "gradebook.db",
    ROOT / "tests",
]
VIEW = """
import importlib, json, os, sys
out = {{"course": sorted(os.listdir({root!r}))}}
out["package"] = sorted(os.path.relpath(os.path.join(folder, name), {package!r})
                        for folder, _, names in os.walk({package!r}) for name in names)
out["modules"] = sorted(m for m in sys.modules
                        if m.startswith(("attncourse.judge.checks", "attncourse.grading", "attncourse.judge")))
out["found"] = {{}}
for path in {secrets!r}:
    try:
        os.stat(path)
        out["found"][path] = "exists"
    except OSError as e:
        out["found"][path] = type(e).__name__
for name in ["attncourse.judge.checks", "attncourse.grading", "attncourse.judge",
             "attncourse.sandbox.kernelmanager", "attncourse.sandbox.launcher", "devtools.demo"]:
    try:
        out[name] = importlib.import_module(name).__file__
    except ImportError as e:
        out[name] = type(e).__name__
import numpy, torch
out["torch"] = float(torch.ones(3) @ torch.ones(3)) + float(numpy.ones(2).sum())
out["data"] = open("data.csv").read()
with open("mine.txt", "w") as f:
    f.write("written by the kernel")
out["mine"] = open("mine.txt").read()
with open({record!r}, "w") as f:  # forge the protections
    f.write('{{"mount_namespace": false, "forged": true}}')
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def kernel_view():
    """(What a forked kernel saw, its protections): its data arrived after it started."""
    with sandboxed_kernel() as (root, km, kc):
        (root / "work" / "data.csv").write_text("1,2\n")  # copied in as a prewarmed kernel's
        code = VIEW.format(
            package=str(PACKAGE),
            root=str(ROOT),
            secrets=[str(p) for p in GRADING_FILES],
            record=str(root / "run" / "protections.json"),
        )
        record = km.protections()
        reply, text = kernel_output(kc, code)
        assert reply["status"] == "ok", reply
        return dict(json.loads(text), record_after=km.protections()), record


def test_the_kernel_sees_only_the_kernel_side_files_of_the_course_package(kernel_view):
    seen, record = kernel_view
    needs(record, "mount_namespace")
    assert seen["package"] == sorted(str(p.relative_to(PACKAGE)) for p in kernel_files())
    assert not {"source", "release", "tests", "gradebook.db"} & set(seen["course"])
    assert set(seen["found"].values()) == {"FileNotFoundError"}, seen["found"]


def test_the_grading_code_cannot_be_imported_and_is_not_in_a_forked_kernels_memory(kernel_view):
    seen, record = kernel_view
    assert record["preloaded"] is True
    assert seen["modules"] == []
    needs(record, "mount_namespace")
    for name in [
        "attncourse.judge.checks",
        "attncourse.grading",
        "attncourse.judge",
        "devtools.demo",
    ]:
        assert seen[name] == "ModuleNotFoundError", (name, seen[name])
    assert seen["attncourse.sandbox.kernelmanager"] == "ModuleNotFoundError"  # the grader's side
    launcher = PACKAGE / "sandbox" / "launcher.py"
    assert seen["attncourse.sandbox.launcher"] == str(launcher)  # the editable install


def test_an_honest_kernel_computes_and_uses_its_working_copy(kernel_view):
    seen, _ = kernel_view
    assert seen["torch"] == 5.0
    assert seen["data"] == "1,2\n"
    assert seen["mine"] == "written by the kernel"


def test_the_kernel_cannot_rewrite_what_the_launcher_recorded(kernel_view):
    seen, record = kernel_view
    needs(record, "mount_namespace")
    assert seen["record_after"] == record


def _figure_outputs(**traits):
    """The output kinds and mime types a kernel gives for a cell that draws with pyplot."""
    kinds = []
    with sandboxed_kernel(**traits) as (_, km, kc):
        reply = run_sync(kc.execute_interactive)(
            "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()",
            timeout=60,
            output_hook=lambda msg: kinds.append(
                (msg["msg_type"], sorted(msg["content"].get("data", {})))
            ),
        )
        assert reply["content"]["status"] == "ok", reply["content"]
        return km.protections()["preloaded"], [k for k in kinds if k[0] != "status"]


def test_a_kernel_forked_with_pyplot_preloaded_draws_inline_as_a_fresh_one():
    """pyplot, imported once in the fork server, still shows each kernel's figure in the
    notebook (ipykernel's inline backend, resolved in the kernel at its first figure), as a
    kernel started afresh does."""
    assert "matplotlib.pyplot" in SandboxKernelManager().preload
    drawn = ("display_data", ["image/png", "text/plain"])
    preloaded, outputs = _figure_outputs()
    assert preloaded is True and drawn in outputs, outputs
    assert _figure_outputs(fork_server=False) == (False, outputs)


def test_control_matplotlib_reads_its_backend_once_at_import():
    """Why the fork server sets each kernel's backend after the fork: ipykernel names the inline
    backend in the environment (MPLBACKEND) when the kernel starts, which matplotlib, imported
    before (in the server), never reads again; it would draw with Agg, showing nothing."""
    code = (
        "import os, matplotlib.pyplot\n"
        "os.environ['MPLBACKEND'] = 'module://matplotlib_inline.backend_inline'\n"
        "print(matplotlib.rcParams['backend'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.stdout.strip().lower() == "agg", (done.stdout, done.stderr)
