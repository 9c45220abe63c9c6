"""Part 3 of ``attention_at_scale``: what the student's tiled forward forms, proved from its record.

``check_tiles_footprint`` (test cell ``p3_tiles_footprint_test``) first proves the footprint
rule on the source (:mod:`attncourse.judge.recordable`: the answer computes only where the
kernel's recorder sees), then calls ``flash_forward`` four times in the kernel with its
footprint recorded: block sizes drawn from the run's secret, one side wide (>= 100 d) and
the other narrow (L >= 100 of it), queries wide then keys wide, each not causal and causal,
with partial last blocks. Each call's values must match a float64 reference, and its record
must be that of a tiled forward (:func:`attncourse.judge.tiling.judge_tiles`): no tensor of
more than 10 x the larger of an input and a block of scores (a strip of scores is >= 100 x),
and in causal mode no product beyond the blocks on or below the diagonal.
"""

from attncourse.judge.checks import answer, call, check_close, fail, generator, randn, rng_for
from attncourse.judge.footprint import Footprint
from attncourse.judge.remote import Remote, StudentNamespace
from attncourse.judge.rulebook import FOOTPRINT, NO_FUSED, Rule, prove, proves
from attncourse.judge.tiling import Tiles, judge_tiles, tile_sizes

from .references import attention_reference

PART = "Part 3"
NAME = "flash_forward"
# Values of a correct forward in float64, or float32 inside (the task allows it): relative
# error about 1e-7 at these sizes; a running sum not rescaled or a wrong merge: about 1e-1.
VALUES_TOL = 1e-5


def _traced(ns: StudentNamespace, func: Remote, t: Tiles, test_id: str) -> Footprint:
    """One recorded call on the sizes ``t``; its values checked; its footprint."""
    gen = generator(test_id)
    Q, K, V = (randn(gen, t.B, t.H, t.L, t.d) for _ in range(3))
    args = (*(ns.on_device(x) for x in (Q, K, V)), t.block_q, t.block_k, t.causal)
    what = f"{PART}: {NAME}({t.describe()})"
    value, footprint = call(func, args, what, no_grad=True, footprint=True)
    if type(value) not in (tuple, list) or len(value) != 2:
        fail(f"{what}: expected (O, lse)", "a tuple of two tensors", type(value).__name__)
    out, lse = attention_reference(Q, K, V, t.causal)
    check_close(f"{what}: O", value[0], out, VALUES_TOL)
    check_close(f"{what}: lse", value[1], lse, VALUES_TOL)
    return footprint


@proves(
    Rule(FOOTPRINT, NAME, PART),
    Rule(NO_FUSED, NAME, PART),
)
def check_tiles_footprint(ns: StudentNamespace) -> None:
    """No intermediate above a block of scores; causal mode computes no block above the
    diagonal (values checked too: a forward that computes nothing forms nothing)."""
    prove(check_tiles_footprint.rules, ns)
    func = answer(ns, NAME, PART)
    rng = rng_for("p3_tiles_footprint/sizes")
    d = rng.choice([2, 3])
    for wide_queries in (True, False):
        for causal in (False, True):
            t = tile_sizes(rng, d, wide_queries, causal)
            test_id = f"p3_tiles_footprint/{wide_queries}/{causal}"
            judge_tiles(_traced(ns, func, t, test_id), t, PART, NAME)
