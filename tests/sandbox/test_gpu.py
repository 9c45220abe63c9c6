"""The GPU path of grading: a sandboxed kernel that computes on CUDA, and the judge reaching it.

The judge computes its references in float64 on its own CPU; the student's code runs in the
kernel on the kernel's grading device, CUDA when it has one. These tests run where PyTorch
sees a CUDA device (the course team's GPU grader) and are skipped, with that reason, on a
CPU-only machine such as CI's. The CPU path is what every other test covers.
"""

import resource

import pytest
import torch
from jupyter_core.utils import run_sync
from sandboxkit import kernel_execute, kernel_judge, sandboxed_kernel

from attncourse.judge import checks
from attncourse.judge.channel import LocalChannel
from attncourse.judge.remote import Remote, Session, StudentNamespace, StudentRaised

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

# What a student's notebook leaves in the kernel for the judge to call.
STUDENT_CELL = """
import torch
from torch import nn
on_gpu = torch.arange(6.0, device="cuda").reshape(2, 3)
on_gpu_bf16 = on_gpu.to(torch.bfloat16)
layer = nn.Linear(3, 2)

def where(t):
    return str(t.device), str(t.dtype)

def matmul(a, b):
    return a @ b
"""


@pytest.mark.kernel
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


@pytest.mark.kernel
def test_the_judge_round_trips_cuda_tensors_through_a_sandboxed_kernel():
    with sandboxed_kernel(fork_server=True) as (root, km, kc):
        execute = kernel_execute(kc)
        assert not [o for o in execute(STUDENT_CELL) if o["output_type"] == "error"]
        kernel_judge(root / "run", km, kc)(round_trips)


def round_trips(ns):
    """One check of the judge on the kernel's CUDA objects (runs in the channel's thread)."""
    # The kernel's CUDA tensors arrive in the judge as plain CPU tensors, dtype kept.
    got = ns["on_gpu"]
    assert type(got) is torch.Tensor and got.device.type == "cpu"
    assert torch.equal(got, torch.arange(6.0).reshape(2, 3))
    bf16 = ns["on_gpu_bf16"]
    assert bf16.dtype == torch.bfloat16 and bf16.device.type == "cpu"

    # Judge tensors go to the kernel's CPU, or to its GPU through ns.on_device.
    where = ns["where"]
    assert where(torch.ones(2)) == ("cpu", "torch.float32")
    assert where(ns.on_device(torch.ones(2)))[0].startswith("cuda")
    assert where(ns.on_device(torch.ones(2, dtype=torch.bfloat16)))[1] == "torch.bfloat16"

    # A float32 product on the GPU is float32-accurate (TF32 off): the judge's float64
    # reference on the CPU agrees to ~1e-6, where TF32 would be off by ~1e-3.
    gen = torch.Generator().manual_seed(0)
    a, b = (torch.randn(256, 256, generator=gen) for _ in range(2))
    product = ns["matmul"](ns.on_device(a), ns.on_device(b))
    assert product.device.type == "cpu" and product.dtype == torch.float32
    assert checks.rel_error(product, a.double() @ b.double()) < 1e-5
    assert ns["torch"].get_float32_matmul_precision() == "highest"

    # A model moved to the grading device and called there.
    layer = ns["layer"]
    assert isinstance(layer, Remote) and layer.is_a("linear")
    layer.to(ns.device)
    assert layer.weight.device.type == "cpu"  # what the judge sees is always on its CPU
    out = layer(ns.on_device(torch.ones(4, 3)), no_grad=True)
    weight, bias = layer.weight, layer.bias
    assert torch.allclose(out, torch.ones(4, 3) @ weight.T + bias, atol=1e-6)

    # A CUDA error in the student's code is reported as theirs, and the kernel lives on.
    with pytest.raises(StudentRaised, match="RuntimeError"):
        ns["matmul"](ns.on_device(torch.ones(2, 3)), torch.ones(3, 2))
    assert ns["where"].__name__ == "where"


def test_the_agent_in_this_process_moves_cuda_tensors_to_the_cpu():
    """The fast tests' LocalChannel on a CUDA machine: the same agent, the same moves."""

    def where(t):
        return str(t.device)

    ns = StudentNamespace(
        Session(LocalChannel({"x": torch.ones(2, 3, device="cuda"), "where": where}))
    )
    got = ns["x"]
    assert got.device.type == "cpu" and torch.equal(got, torch.ones(2, 3))
    assert ns["where"](ns.on_device(torch.ones(2))).startswith("cuda")
    assert ns["where"](torch.ones(2)) == "cpu"


# A kernel that takes all the GPU memory it can, after trying to lift its share before CUDA starts.
GREEDY = """
import os, torch
os.environ["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = "0=1000G"
held, mib = [], 0
try:
    while True:
        held.append(torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda"))
        mib += 256
except RuntimeError:
    pass
print(mib)
"""

# Its neighbour: an honest computation and 1 GiB of its own, well within its share.
HONEST = """
import torch
gen = torch.Generator(device="cuda").manual_seed(0)
x = torch.randn(1024, 1024, device="cuda", generator=gen, dtype=torch.float64)
mine = torch.ones(2**30, dtype=torch.uint8, device="cuda")
print(repr((x @ x).sum().item()), mine.sum().item())
"""


def _printed(kc, code):
    out = []
    reply = run_sync(kc.execute_interactive)(
        code, timeout=300, output_hook=lambda msg: out.append(msg["content"].get("text", ""))
    )
    assert reply["content"]["status"] == "ok", reply["content"]
    return "".join(out).strip()


@pytest.mark.kernel
def test_a_kernel_taking_all_gpu_memory_leaves_its_neighbour_unchanged(monkeypatch):
    """Two kernels share the card under the grader's MPS daemon, each held to
    ``gpu_memory_mb``: one allocates all it can (after setting its own limit to 1000 GB before
    CUDA starts), and the honest neighbour computes the same numbers as alone (the control)."""
    from attncourse.cluster import visible_gpus
    from attncourse.gpulanes import gpus_with_memory, mps_daemon

    share = 4096
    gpus = gpus_with_memory(visible_gpus() or ["0"])
    with mps_daemon(gpus, share) as pipe:
        if pipe is None:
            pytest.skip("no CUDA MPS here: kernels sharing a card have no limit each (README)")
        monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", pipe)
        # one uid for all (as an ordinary user grades): MPS serves one uid's kernels at a time
        traits = {"fork_server": True, "gpu_memory_mb": share, "drop_privileges": False}
        with sandboxed_kernel(**traits) as (_, _, alone):
            control = _printed(alone, HONEST)
        with sandboxed_kernel(**traits) as (_, greedy_km, greedy):
            assert greedy_km.protections().get("gpu_memory_mb") == share
            taken = int(_printed(greedy, GREEDY))
            with sandboxed_kernel(**traits) as (_, _, neighbour):
                beside = _printed(neighbour, HONEST)
    assert taken <= share, f"the greedy kernel held {taken} MiB, its share is {share} MiB"
    assert beside == control
