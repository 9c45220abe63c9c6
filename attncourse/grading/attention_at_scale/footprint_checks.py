"""Part 3 of ``attention_at_scale``: what the student's tiled forward forms, proved from its record.

``check_tiles_footprint`` (test cell ``p3_tiles_footprint_test``) first proves the footprint
rule on the source (:mod:`attncourse.judge.recordable`: the answer computes only where the
kernel's recorder sees), then calls ``flash_forward`` four times in the kernel with its
footprint recorded: block sizes drawn from the run's secret, one side wide (>= 100 d) and
the other narrow (L >= 100 of it), queries wide then keys wide, each not causal and causal,
with partial last blocks. Each record must be that of a tiled forward
(:func:`attncourse.judge.tiling.judge_tiles`): the scores of the whole blocks computed, no
tensor of more than 10 x the larger of an input and a block of scores (a strip of scores is
>= 100 x), and in causal mode no product beyond the blocks on or below the diagonal. The
values it returns stay in the kernel: they are the values checks' (``tiles``, within
``tolerances.VALUES_TOL``), so a values mistake costs no footprint point and a correct
answer meets one threshold only.
"""

from attncourse.judge.checks import answer, call, generator, randn, rng_for
from attncourse.judge.footprint import Footprint
from attncourse.judge.remote import Remote, StudentNamespace
from attncourse.judge.rulebook import FOOTPRINT, NO_FUSED, Rule, prove, proves
from attncourse.judge.tiling import Tiles, judge_tiles, tile_sizes

PART = "Part 3"
NAME = "flash_forward"


def _recorded(ns: StudentNamespace, func: Remote, t: Tiles, test_id: str) -> Footprint:
    """The footprint of one call on the sizes ``t`` (its value left in the kernel)."""
    gen = generator(test_id)
    Q, K, V = (randn(gen, t.B, t.H, t.L, t.d) for _ in range(3))
    args = (*(ns.on_device(x) for x in (Q, K, V)), t.block_q, t.block_k, t.causal)
    what = f"{PART}: {NAME}({t.describe()})"
    _, footprint = call(func, args, what, no_grad=True, footprint=True, ref=True)
    return footprint


@proves(
    Rule(FOOTPRINT, NAME, PART),
    Rule(NO_FUSED, NAME, PART),
)
def check_tiles_footprint(ns: StudentNamespace) -> None:
    """No intermediate above a block of scores; causal mode computes no block above the
    diagonal; the whole blocks' scores computed (a forward that computes nothing forms
    nothing)."""
    prove(check_tiles_footprint.rules, ns)
    func = answer(ns, NAME, PART)
    rng = rng_for("p3_tiles_footprint/sizes")
    d = rng.choice([2, 3])
    for wide_queries in (True, False):
        for causal in (False, True):
            t = tile_sizes(rng, d, wide_queries, causal)
            test_id = f"p3_tiles_footprint/{wide_queries}/{causal}"
            judge_tiles(_recorded(ns, func, t, test_id), t, PART, NAME)
