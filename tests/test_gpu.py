"""The GPU path of grading: hidden tests on CUDA, and sandboxed kernels that can use it.

These run where PyTorch sees a CUDA device (the course team's GPU grader) and are skipped,
with that reason, on a CPU-only machine such as CI's. The CPU path is what every other
test covers.
"""

import resource

import pytest
import torch
from jupyter_core.utils import run_sync
from test_sandbox import sandboxed_kernel

from attncourse import checks

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available(), reason="no CUDA device here: the GPU path needs one"
    ),
]

KERNEL_CODE = """
import resource, torch
x = torch.randn(512, 512, dtype=torch.float64, device="cuda")
error = ((x @ x).cpu() - x.cpu() @ x.cpu()).abs().max().item()
print(torch.cuda.get_device_name(), error, resource.getrlimit(resource.RLIMIT_AS)[0])
"""


def test_hidden_tests_run_on_cuda_with_tf32_off():
    assert checks.device().type == "cuda"
    # TF32 matmuls keep 10 mantissa bits: errors near 1e-3 would swamp the 3e-5 thresholds.
    assert torch.backends.cuda.matmul.allow_tf32 is False
    assert torch.backends.cudnn.allow_tf32 is False


@pytest.mark.parametrize("fork_server", [True, False], ids=["forked", "fresh"])
def test_a_sandboxed_kernel_computes_on_the_gpu_without_an_address_space_limit(fork_server):
    """A kernel forked from the fork server can still initialise CUDA (nothing the server
    preloads may touch CUDA before the fork), and no RLIMIT_AS stands in CUDA's way
    (it reserves far more address space than it uses)."""
    out = []
    with sandboxed_kernel(fork_server=fork_server) as (_, km, kc):
        assert km.protections()["preloaded"] is fork_server
        reply = run_sync(kc.execute_interactive)(
            KERNEL_CODE,
            timeout=120,
            output_hook=lambda msg: out.append(msg["content"].get("text", "")),
        )
        assert reply["content"]["status"] == "ok", reply["content"]
    *name, error, limit = "".join(out).split()
    assert name, out
    assert float(error) < 1e-9, f"GPU and CPU float64 products differ by {error}"
    assert int(limit) == resource.RLIM_INFINITY, f"RLIMIT_AS {limit} under CUDA"
