"""A kernel computes with the torch threads of its grading process: ``attncourse grade`` gives
each run's grading processes ``OMP_NUM_THREADS`` (:mod:`attncourse.worker.task`), and a
kernel forked from the fork server (which imported torch once) or started afresh must use
that count, not the machine's cores. The same check on a running cluster, through the whole
pipeline, is ``tests/grading/test_same_score.py``; this one needs no cluster."""

import pytest
from sandboxkit import kernel_output, sandboxed_kernel

from attncourse.constants import cores

pytestmark = pytest.mark.kernel


@pytest.mark.parametrize("fork_server", [True, False], ids=["forked", "fresh"])
def test_a_kernel_computes_with_its_grading_process_threads_not_the_cores(monkeypatch, fork_server):
    if cores() < 2:
        pytest.skip("one core: torch's own default is one thread, as asked; nothing to tell")
    threads = 1  # torch's own default is the cores (and more than the cores gives the cores)
    monkeypatch.setenv("OMP_NUM_THREADS", str(threads))
    with sandboxed_kernel(fork_server=fork_server) as (_, km, kc):
        assert km.protections()["preloaded"] is fork_server
        reply, printed = kernel_output(kc, "import torch\nprint(torch.get_num_threads())")
    assert reply["status"] == "ok", reply
    assert printed.strip() == str(threads), f"expected {threads} torch threads, got {printed!r}"
