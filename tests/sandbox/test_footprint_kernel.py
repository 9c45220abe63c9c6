"""The footprint table in one sandboxed kernel: the record made where grading makes it.

Each case's cells run in the kernel (the attack's own cell included, for real), then the
judge grades ``p3_tiles_footprint_test`` over the channel, reading that case's sources.
Honest forwards come first (a later attack's leftovers cannot fail them), then the named
mistakes and the attacks: every honest forward passes, every mistake and attack fails, no
attack passes where its control (the same L x L matrix formed plainly) fails. The recorder's
cost is measured on the same kernel: a traced call against an untraced one.
"""

import time
from pathlib import Path

import pytest
import torch
from footprintcases import ATTACKS, FIRST, HONEST, MISTAKES
from sandboxkit import kernel_execute, sandboxed_kernel

from attncourse.grading.attention_at_scale.footprint_checks import check_tiles_footprint
from attncourse.judge import verdict
from attncourse.judge.channel import PipeChannel
from attncourse.judge.checks import single_threaded
from attncourse.judge.remote import Session, StudentNamespace
from attncourse.judge.tiling import tile_sizes
from attncourse.preprocessors.resilientexecute import ResilientExecute
from attncourse.sandbox.filesystem import JUDGE_SOCKET

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("footprint_kernel")]
CHECK = single_threaded(check_tiles_footprint)


def _grade_all():
    """{case: verdict} for every case, and the recorder's cost, in one kernel."""
    cases = [(f"honest {n}", "", a) for n, a in HONEST.items()]
    cases += [(f"mistake {n}", "", a) for n, (a, _) in MISTAKES.items()]
    cases += [(f"attack {a.name}", a.cell, a.answer) for a in ATTACKS]
    out = {}
    with sandboxed_kernel() as (root, km, kc):
        execute = kernel_execute(kc)
        execute(FIRST)

        def judged(work, sources):
            pipe = PipeChannel(
                execute,
                Path(root / "run") / JUDGE_SOCKET,
                ResilientExecute().max_reply_bytes,
                lambda: 60,
                print,
                30,
            )
            ns = StudentNamespace(Session(pipe), sources)
            return pipe.judge(lambda: work(ns), execute)

        for name, cell, answer in cases:
            if cell:
                execute(cell)
            execute(answer)
            sources = [FIRST, cell, answer] if cell else [FIRST, answer]
            out[name] = judged(lambda ns: verdict.run_check(CHECK, ns, "kernel"), sources)
        execute(HONEST["einsum"])
        out["cost"] = judged(_cost, [FIRST, HONEST["einsum"]])
    return out


def _cost(ns):
    """Seconds of an untraced and a traced call of the honest forward on the check's sizes."""
    import random

    t = tile_sizes(random.Random(0), 2, True, True)
    Q, K, V = (torch.randn(t.B, t.H, t.L, t.d, dtype=torch.float64) for _ in range(3))
    f = ns["flash_forward"]
    f.call(Q, K, V, t.block_q, t.block_k, True, footprint=True)  # the first mode's imports
    times = {}
    for traced in (False, True, False, True):
        start = time.perf_counter()
        f.call(Q, K, V, t.block_q, t.block_k, True, no_grad=True, footprint=traced)
        times.setdefault(traced, []).append(time.perf_counter() - start)
    return {k: min(v) for k, v in times.items()}


@pytest.fixture(scope="module")
def graded():
    return _grade_all()


def test_honest_forwards_pass_in_a_kernel(graded):
    failed = {n: m for n, m in graded.items() if n.startswith("honest") and m is not None}
    assert not failed, failed


def test_mistakes_and_attacks_gain_nothing_over_their_control_in_a_kernel(graded):
    control = graded["mistake the full L x L matrix"]
    assert control is not None and "L x L" in control
    passed = [n for n, m in graded.items() if n.startswith(("mistake", "attack")) and m is None]
    assert not passed, passed
    for name, (_, words) in MISTAKES.items():
        assert words in graded[f"mistake {name}"], graded[f"mistake {name}"]
    for attack in ATTACKS:
        assert "cannot verify" in graded[f"attack {attack.name}"], graded[f"attack {attack.name}"]


def test_the_recorder_costs_a_few_times_an_untraced_call(graded):
    cost = graded["cost"]
    print(f"untraced {cost[False]:.3f} s, traced {cost[True]:.3f} s")
    assert cost[True] < 20 * cost[False] + 1.0
