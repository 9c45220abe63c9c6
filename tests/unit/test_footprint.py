"""The footprint of a tiled attention forward, judged in this process (``LocalChannel``).

Honest tiled forwards (matmul, einsum, bmm batched over heads, float32 inside, blocks
concatenated; the sizes drawn from the secret, partial last blocks) pass, and so do tiled
forwards with wrong values (the values checks' mistakes); each named mistake (the L x L
matrix, a strip, blocks stacked into L x L, an L x L buffer filled in place, blocks above
the diagonal computed then masked, a causal loop one block too far, a forward that computes
nothing) fails naming it; every attack that hides the matrix from the record (numpy,
``torch.compile``, a popped dispatch mode, ``torch._C`` guards, checkpointing, ``torch.jit``, ``torch.ops``, a
tensor subclass, a mode in another cell) is refused by the footprint rule before any call,
beside its control (the same matrix formed plainly), which the record catches. The
record's own parsing refuses what is not a record.
"""

import numpy as np
import pytest
import torch
from footprintcases import ATTACKS, FIRST, HONEST, MISTAKES, NOTHING, VALUES_MISTAKES

from attncourse.grading.attention_at_scale.footprint_checks import check_tiles_footprint
from attncourse.judge import footprint, verdict
from attncourse.judge.channel import LocalChannel
from attncourse.judge.checks import single_threaded
from attncourse.judge.remote import KernelFault, Remote, Session, StudentNamespace
from attncourse.judge.tiling import MARGIN, tile_sizes

CHECK = single_threaded(check_tiles_footprint)


def judge(answer, cell="", secret="footprint"):
    """The check's verdict on a notebook of the first cell, ``cell`` and ``answer``; only the
    answer's definitions run here (an attack's own cell is read, never run)."""
    names = {}
    exec(FIRST, names)
    exec(answer, names)
    sources = [FIRST, cell, answer] if cell else [FIRST, answer]
    ns = StudentNamespace(Session(LocalChannel(names)), sources)
    return verdict.run_check(CHECK, ns, secret)


@pytest.mark.parametrize("name", HONEST)
def test_honest_tiled_forwards_pass(name):
    assert judge(HONEST[name]) is None


def test_honest_forward_passes_under_other_secrets():
    """Other block sizes and partial blocks (the sizes come from the secret)."""
    for secret in ("a", "b", "c"):
        assert judge(HONEST["einsum"], secret=secret) is None


@pytest.mark.parametrize("name", VALUES_MISTAKES)
def test_a_values_mistake_costs_no_footprint_point(name):
    """The values checks judge the values; the footprint check only what is formed."""
    assert judge(VALUES_MISTAKES[name]) is None


def test_a_forward_that_computes_nothing_earns_no_footprint_point():
    assert judge(HONEST["matmul"]) is None
    message = judge(NOTHING)
    assert message is not None and "score products were not found" in message, message


@pytest.mark.parametrize("name", MISTAKES)
def test_named_mistake_fails_naming_it(name):
    answer, words = MISTAKES[name]
    message = judge(answer)
    assert message is not None and words in message, message


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_attack_is_refused_beside_its_caught_control(attack):
    control = judge(MISTAKES["the full L x L matrix"][0])
    assert control is not None and "L x L" in control
    message = judge(attack.answer, attack.cell)
    assert message is not None and "cannot verify" in message and "cell" in message, message


def test_the_sizes_keep_every_named_mistake_100_times_above_the_allowed():
    import random

    for seed in range(200):
        rng = random.Random(seed)
        d = rng.choice([2, 3])
        for wide in (True, False):
            t = tile_sizes(rng, d, wide, False)
            assert t.margin >= MARGIN and t.L % t.block_q >= 2 and t.L % t.block_k >= 2


def test_causal_blocks_count_pairs_on_and_below_the_diagonal():
    assert footprint.causal_blocks(5, 2, 2) == (6, 3, 4 + 4 + 4 + 2 + 2 + 1)
    below, above, entries = footprint.causal_blocks(7, 3, 2)
    assert below + above == 3 * 4 and entries == sum(
        (min(q + 3, 7) - q) * (min(k + 2, 7) - k)
        for q in range(0, 7, 3)
        for k in range(0, 7, 2)
        if k <= min(q + 3, 7) - 1
    )


def test_scores_are_counted_for_einsum_matmul_and_broadcast_products():
    q, k, v = torch.randn(1, 3, 5, 2), torch.randn(1, 3, 7, 2), torch.randn(1, 3, 7, 4)
    forms = {
        "matmul": lambda: q @ k.transpose(-2, -1),
        "einsum": lambda: torch.einsum("bhid,bhjd->bhij", q, k),
        "keys first": lambda: torch.einsum("bhjd,bhid->bhji", k, q),
        "broadcast": lambda: (q[..., :, None, :] * k[..., None, :, :]).sum(-1),
    }
    for name, form in forms.items():
        names = {"f": form}
        ns = StudentNamespace(Session(LocalChannel(names)))
        _, fp = ns["f"].call(footprint=True)
        assert fp.scores(2) == 3 * 5 * 7, name
    names = {"f": lambda: torch.softmax(q @ k.transpose(-2, -1), -1) @ v}
    _, fp = StudentNamespace(Session(LocalChannel(names)))["f"].call(footprint=True)
    assert fp.scores(2) == 3 * 5 * 7  # P @ V is no score product


def test_a_reply_that_is_not_a_record_is_a_kernel_fault():
    good = {"names": ["aten.mm.default"], "codes": np.array([0, 0, 1, 2, 3, 4]), "truncated": False}
    assert footprint.from_wire(good).ops[0].outputs == ((3, 4),)
    ones = {**good, "codes": np.array([0, 0, 1, 1, 1])}  # the booleans' record, as integers
    assert footprint.from_wire(ones).ops[0].outputs == ((1,),)
    for bad in (
        {**good, "codes": np.array([1, 0, 1, 2, 3, 4])},  # a name that is not there
        {**good, "codes": np.array([0, 0, 1, 2, 3])},  # cut short
        {**good, "codes": np.array([0, 0, 1, 99, 3])},  # too many dims
        {**good, "codes": np.array([0.0, 0, 1, 2, 3, 4])},  # codes that are not integers
        {**good, "codes": np.array([False, False, True, True, True])},  # nor booleans
        {**good, "codes": np.array([[0, 0, 1, 2, 3, 4]])},  # not flat
        {**good, "names": "aten.mm"},
        {**good, "extra": 1},
        [1, 2],
    ):
        with pytest.raises(ValueError):
            footprint.from_wire(bad)

    class Forged:
        def send(self, text, arrays=()):
            return '{"seq": 0, "value": {"t": "none"}, "footprint": {"t": "int", "v": 1}}', []

    with pytest.raises(KernelFault, match="footprint"):
        Remote(Session(Forged()), 0, "f", "f", True).call(footprint=True)


def test_the_students_visible_check_uses_the_same_record_and_verdict():
    from attncourse.judge.tilecheck import check_tiles

    honest, wrong = {}, {}
    exec(FIRST + HONEST["matmul"], honest)
    exec(FIRST + MISTAKES["blocks above the diagonal computed and masked"][0], wrong)
    check_tiles(honest["flash_forward"])
    with pytest.raises(AssertionError, match="above the diagonal"):
        check_tiles(wrong["flash_forward"])
