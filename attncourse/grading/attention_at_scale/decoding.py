"""Part 5 of ``attention_at_scale``: decoding with a split cache (FlashDecoding), and the split
reference that makes its named mistakes (``Split``)."""

import math
from dataclasses import dataclass

import torch

from attncourse.judge.checks import answer, call, fail, generator, randn, rng_for
from attncourse.judge.remote import StudentNamespace
from attncourse.judge.rulebook import NO_FUSED, USES, Rule, prove, proves

from .references import (
    F64,
    MERGE_MISTAKES,
    Online,
    attention_reference,
    merge_reference,
    partial_reference,
)
from .softmax import close

PART = "Part 5"


@dataclass(frozen=True)
class Split:
    """Part 5's split-cache decoding; fields at their defaults are the task's."""

    mask_padding: bool = True  # padded key slots of the last chunk masked out
    drop_last: bool = False  # the last, shorter chunk left out
    merge: Online = Online()


def split_reference(
    q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, chunks: int, variant: Split = Split()
) -> tuple[torch.Tensor, torch.Tensor]:
    """(o (B, H, d), lse (B, H)) of one query per head against the cache, split and merged."""
    q, K, V = q.to(F64), K.to(F64), V.to(F64)
    B, H, L, d = K.shape
    size = math.ceil(L / chunks)
    parts = []
    for start in range(0, L, size):
        k, v = K[:, :, start : start + size], V[:, :, start : start + size]
        if k.shape[2] < size and variant.drop_last:
            continue
        s = torch.einsum("bhd,bhnd->bhn", q, k) / math.sqrt(d)
        if k.shape[2] < size and not variant.mask_padding:
            s = torch.cat([s, torch.zeros(B, H, size - k.shape[2], dtype=F64)], -1)
            v = torch.cat([v, torch.zeros(B, H, size - k.shape[2], d, dtype=F64)], 2)
        parts.append(partial_reference(s, v))
    m, ell, o = parts[0]
    for part in parts[1:]:
        m, ell, o = merge_reference((m, ell, o), part, variant.merge)
    return o / ell[..., None], m + torch.log(ell)


SPLIT_MISTAKES = {
    "the padded slots of the last chunk not masked: they count as keys with score 0": Split(
        mask_padding=False
    ),
    "the last, shorter chunk left out": Split(drop_last=True),
    **{name: Split(merge=v) for name, v in MERGE_MISTAKES.items()},
}


def check_split_decode(ns: StudentNamespace) -> None:
    """Part 5: split_decode's o and lse for chunk counts that do not divide L."""
    fn = answer(ns, "split_decode", PART)
    rng = rng_for("p5_split_decode")
    gen = generator("p5_split_decode")
    B, H, d = rng.sample(range(2, 7), 3)
    for L, chunks in ((rng.randint(30, 60), 0), (rng.randint(8, 20), 1), (7, 7)):
        drawn = chunks == 0
        while drawn and (chunks == 0 or (chunks - 1) * -(-L // chunks) >= L or L % chunks == 0):
            chunks = rng.randint(3, 9)  # every chunk holds a key, the last one fewer
        q, K, V = randn(gen, B, H, d), randn(gen, B, H, L, d), randn(gen, B, H, L, d)
        K = K + torch.linspace(-3, 3, L, dtype=F64)[:, None] * q[:, :, None]  # maxima differ
        what = f"{PART}: split_decode, B, H, L, d = {B, H, L, d}, {chunks} chunks"
        got = call(fn, (q, K, V, chunks), what)
        if type(got) not in (tuple, list) or len(got) != 2:
            fail(f"{what}: return value", "a pair (o, lse)", type(got).__name__)
        ref_o, ref_lse = attention_reference(q[:, :, None], K, V)
        wrong = {n: split_reference(q, K, V, chunks, v) for n, v in SPLIT_MISTAKES.items()}
        close(
            f"{what}: o",
            got[0],
            ref_o[:, :, 0],
            {n: w[0] for n, w in wrong.items()},
            "o is (B, H, d)",
            q.dtype,
        )
        close(
            f"{what}: lse",
            got[1],
            ref_lse[:, :, 0],
            {n: w[1] for n, w in wrong.items()},
            "lse is (B, H)",
        )


@proves(
    Rule(
        USES,
        "split_decode",
        PART,
        word="merge",
        expected="combine the chunks' partial results with merge (Part 2(b))",
    ),
    Rule(NO_FUSED, "split_decode", PART),
)
def check_split_rules(ns: StudentNamespace) -> None:
    """Part 5: split_decode uses merge and no fused attention."""
    fn = answer(ns, "split_decode", PART)
    x = torch.ones(1, 1, 4, 2, dtype=F64)
    call(fn, (x[:, :, 0], x, x, 2), f"{PART}: split_decode (rules are checked on a working answer)")
    prove(check_split_rules.rules, ns)
