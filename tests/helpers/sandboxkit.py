"""Helpers of the tests that start a sandboxed kernel or reach into a grader's mounts.

Shared by ``test_sandbox``, ``test_budgets``, ``test_gpu``, ``test_channel``, ``test_nonroot``
and ``test_nonroot_kernel`` (a helper module, as ``toy_course`` and ``casetable`` are: no test
module imports from another).
"""

import contextlib
import os
import shlex
import shutil
import time
from pathlib import Path

import pytest
from jupyter_core.utils import run_sync

from attncourse.judge.channel import PipeChannel
from attncourse.judge.remote import Session, StudentNamespace
from attncourse.preprocessors.resilientexecute import ResilientExecute
from attncourse.sandbox.filesystem import JUDGE_SOCKET
from attncourse.sandbox.forkstart import ForkServers
from attncourse.sandbox.kernelmanager import SandboxKernelManager

# This test process's fork servers, one per preload list, for the kernels its tests start. A
# SandboxKernelManager (or ResilientExecute) made alone starts a server of its own and keeps it
# until the process exits: in stop 47's make test one xdist worker held 26 idle servers at once
# (about 270 MB each, and each about 7 s of CPU to start). A test about the servers passes its own.
SERVERS = ForkServers()


def tempfile_dir():
    import tempfile

    path = tempfile.mkdtemp(prefix="attncourse-test-sandbox-")
    os.chmod(path, 0o711)
    return path


@contextlib.contextmanager
def sandboxed_kernel(**traits):
    """A started, ready kernel of a SandboxKernelManager(**traits): yields (root, km, kc)."""
    root = Path(tempfile_dir())
    (root / "work").mkdir()
    (root / "run").mkdir()
    km = SandboxKernelManager(**{"fork_servers": SERVERS, **traits})
    km.use_run_dir(root / "run")
    try:
        with started(km, root / "work") as kc:
            yield root, km, kc
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def started(km, cwd, **kwargs):
    """The kernel of ``km`` started in ``cwd`` and ready: yields its client, then kills it."""
    run_sync(km.start_kernel)(
        cwd=str(cwd), extra_arguments=["--HistoryManager.hist_file=:memory:"], **kwargs
    )
    kc = km.client()
    try:
        kc.start_channels()
        run_sync(kc.wait_for_ready)(timeout=120)
        yield kc
    finally:
        kc.stop_channels()
        run_sync(km.shutdown_kernel)(now=True)


def kernel_execute(kc, timeout=120):
    """``execute(code) -> outputs`` over a kernel client (its error outputs by ``ename``)."""

    def execute(code):
        outputs = []

        def hook(msg):
            kind, content = msg["msg_type"], msg["content"]
            if kind in ("display_data", "execute_result"):
                outputs.append({"output_type": kind, "data": content["data"]})
            elif kind == "stream":
                outputs.append(
                    {"output_type": kind, "name": content["name"], "text": content["text"]}
                )
            elif kind == "error":
                outputs.append({"output_type": kind, "ename": content["ename"]})

        run_sync(kc.execute_interactive)(
            code, timeout=timeout, output_hook=hook, store_history=False
        )
        return outputs

    return execute


def kernel_judge(run, km, kc, timeout=120):
    """``judged(work)``: ``work(ns)`` as a check of the judge, its requests over a PipeChannel
    to the kernel of ``km``/``kc`` whose run directory is ``run``; a call over ``timeout``
    seconds interrupts the kernel."""
    execute = kernel_execute(kc)

    def stop(served):
        run_sync(km.interrupt_kernel)()

    pipe = PipeChannel(
        execute,
        Path(run) / JUDGE_SOCKET,
        ResilientExecute.max_reply_bytes.default_value,
        lambda: timeout,
        stop,
        grace=30,
    )
    ns = StudentNamespace(Session(pipe))
    return lambda work: pipe.judge(lambda: work(ns), execute)


def shell_reply(kc, msg_id, timeout=30):
    """The kernel's reply to the request ``msg_id``. Replies to other requests are skipped:
    under load ``wait_for_ready`` sends kernel_info again each second and reads one reply, so
    the others are still queued on the shell channel (CI, stop 46: a stale kernel_info reply
    read as an execute's)."""
    deadline = time.monotonic() + timeout
    while True:
        reply = run_sync(kc.get_shell_msg)(timeout=max(deadline - time.monotonic(), 0.001))
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply


def kernel_output(kc, code, timeout=60):
    """Run ``code`` in the kernel of ``kc``; return (its reply's content, its printed text)."""
    out = []
    reply = run_sync(kc.execute_interactive)(
        code, timeout=timeout, output_hook=lambda msg: out.append(msg["content"].get("text", ""))
    )
    return reply["content"], "".join(out)


def needs(record, key):
    if not record.get(key):
        pytest.skip(f"this platform gave the sandbox no {key.replace('_', ' ')}")


def blocked_ancestors(path):
    """(directory, child) pairs on the way to ``path`` that others may not enter."""
    path = Path(path).resolve()
    return [
        (parent, path.parts[len(parent.parts)])
        for parent in reversed(path.parents)
        if not os.stat(parent).st_mode & 0o001
    ]


def reachable(paths, scratch):
    """Shell lines that make each of ``paths`` reachable in this mount namespace."""
    lines = []
    pairs = sorted({pair for p in paths for pair in blocked_ancestors(p)})
    for i, (parent, child) in enumerate(pairs):
        keep = scratch / f"keep-{i}"
        keep.mkdir()
        target = shlex.quote(str(parent / child))
        lines += [
            f"mount --bind {target} {shlex.quote(str(keep))}",
            f"mount -t tmpfs -o mode=755,size=1m tmpfs {shlex.quote(str(parent))}",
            f"mkdir {target}",
            f"mount --move {shlex.quote(str(keep))} {target}",
        ]
    return lines
