"""Part 3 of ``attention_at_scale``: the tiled forward's values (O and lse, plain and causal),
its rules and the count of causal score blocks; the tiled reference that makes its named
mistakes (``Tiles``, beside the check that uses it: ``references`` holds the exact one). The footprint proof (no intermediate larger
than a block of scores, no block above the diagonal) is ``footprint_checks``'s."""

import math
from dataclasses import dataclass

import torch

from attncourse.judge.checks import answer, call, fail, generator, integer, randn, rng_for
from attncourse.judge.remote import StudentNamespace
from attncourse.judge.rulebook import NO_FUSED, Rule, prove, proves

from .references import F64, attention_reference
from .softmax import close

PART = "Part 3(a)"


@dataclass(frozen=True)
class Tiles:
    """Part 3's tiled forward; fields at their defaults are the task's."""

    rescale_sum: bool = True  # ell scaled by exp(m_old - m_new) when the max changes
    rescale_out: bool = True  # the output accumulator likewise
    lse: str = "m + log l"  # or "m", "log l"
    scaled: bool = True  # scores scaled by 1/sqrt(d)
    causal_stop: str = "diagonal"  # "one short": diagonal block skipped; "one long": one more
    mask_inside: bool = True  # the diagonal block masked inside
    drop_partial: bool = False  # the last, shorter blocks of queries and keys dropped


def tiles_reference(
    Q: torch.Tensor,
    K: torch.Tensor,
    V: torch.Tensor,
    block_q: int,
    block_k: int,
    causal: bool = False,
    variant: Tiles = Tiles(),
) -> tuple[torch.Tensor, torch.Tensor]:
    """(out, lse) of the tiled forward in float64, as the variant computes it."""
    Q, K, V = Q.to(F64), K.to(F64), V.to(F64)
    B, H, L_q, d = Q.shape
    L_k = K.shape[2]
    out, lse = torch.zeros(B, H, L_q, d, dtype=F64), torch.zeros(B, H, L_q, dtype=F64)
    q_end = L_q - L_q % block_q if variant.drop_partial else L_q
    k_end = L_k - L_k % block_k if variant.drop_partial else L_k
    scale = 1 / math.sqrt(d) if variant.scaled else 1.0
    for i in range(0, q_end, block_q):
        q = Q[:, :, i : i + block_q] * scale  # (B, H, n, d)
        n = q.shape[2]
        m = torch.full((B, H, n), -math.inf, dtype=F64)
        ell, acc = torch.zeros(B, H, n, dtype=F64), torch.zeros(B, H, n, d, dtype=F64)
        stop = k_end
        if causal:
            extra = {"diagonal": 0, "one short": -block_k, "one long": block_k}[variant.causal_stop]
            stop = min(k_end, max(0, i + n + extra) if extra >= 0 else max(0, i + extra + 1))
        for j in range(0, stop, block_k):
            s = q @ K[:, :, j : j + block_k].transpose(-2, -1)  # (B, H, n, b)
            on_diagonal = j <= i + n - 1 and j + s.shape[-1] > i
            if causal and variant.mask_inside and on_diagonal:
                rows = torch.arange(i, i + n)[:, None]
                cols = torch.arange(j, j + s.shape[-1])[None, :]
                s = s.masked_fill(cols > rows, -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            p = torch.exp(s - m_new[..., None])
            alpha = torch.exp(m - m_new)
            ell = ell * (alpha if variant.rescale_sum else 1) + p.sum(-1)
            acc = (
                acc * (alpha[..., None] if variant.rescale_out else 1)
                + p @ V[:, :, j : j + block_k]
            )
            m = m_new
        out[:, :, i : i + n] = acc / ell[..., None]
        lse[:, :, i : i + n] = {"m + log l": m + torch.log(ell), "m": m, "log l": torch.log(ell)}[
            variant.lse
        ]
    return out, lse


TILES_MISTAKES = {
    "the running sum not rescaled when the max changes: l = l * exp(m_old - m_new) + rowsum(P)": (
        Tiles(rescale_sum=False)
    ),
    "the output accumulator not rescaled when the max changes": Tiles(rescale_out=False),
    "scores not scaled by 1/sqrt(d)": Tiles(scaled=False),
    "the partial last blocks dropped: L need not be a multiple of the block sizes": Tiles(
        drop_partial=True
    ),
}
LSE_TILE_MISTAKES = {
    "lse is the max alone: lse = m + log(l)": Tiles(lse="m"),
    "lse is log(l) alone: the running max must be added back": Tiles(lse="log l"),
}
CAUSAL_MISTAKES = {
    "the causal block mask off by one block: the key block after the diagonal is computed "
    "unmasked (query i sees keys j <= i only)": Tiles(causal_stop="one long"),
    "the diagonal block not masked inside: query i sees keys j <= i only": Tiles(mask_inside=False),
}


def _inputs(gen, B, H, L_q, L_k, d, drift):
    """Q, K, V with later keys scoring higher (``drift``): the running maximum moves."""
    Q, K, V = randn(gen, B, H, L_q, d), randn(gen, B, H, L_k, d), randn(gen, B, H, L_k, d)
    ramp = torch.linspace(0, drift, L_k, dtype=F64)[:, None]  # (L_k, 1)
    return Q, K + ramp * Q.mean(2, keepdim=True), V


def _compare(what, got, Q, K, V, block_q, block_k, causal, mistakes):
    """O and lse of ``got`` against the float64 reference and the named mistakes' outputs."""
    if type(got) not in (tuple, list) or len(got) != 2:
        fail(f"{what}: return value", "a pair (O, lse)", type(got).__name__)
    ref_O, ref_lse = attention_reference(Q, K, V, causal)
    wrong = {
        name: tiles_reference(Q, K, V, block_q, block_k, causal, variant)
        for name, variant in mistakes.items()
    }
    close(
        f"{what}: O",
        got[0],
        ref_O,
        {n: w[0] for n, w in wrong.items()},
        "O has Q's shape (B, H, L_q, d)",
        Q.dtype,
    )
    close(
        f"{what}: lse",
        got[1],
        ref_lse,
        {n: w[1] for n, w in wrong.items()},
        "lse is (B, H, L_q): one log-sum-exp per query",
    )


def check_tiles_values(ns: StudentNamespace) -> None:
    """Part 3(a): flash_forward's O and lse for blocks that do not divide L_q or L_k."""
    fn = answer(ns, "flash_forward", PART)
    rng = rng_for("p3_tiles_values")
    gen = generator("p3_tiles_values")
    B, H, d = rng.sample(range(2, 7), 3)
    trials = [
        (rng.randint(17, 30), rng.randint(17, 30), rng.randint(3, 7), rng.randint(3, 7), 6.0),
        (rng.randint(9, 16), rng.randint(30, 45), rng.randint(2, 5), rng.randint(8, 12), -6.0),
        (rng.randint(5, 9), rng.randint(5, 9), 16, 16, 3.0),  # one block holds everything
    ]
    mistakes = {**TILES_MISTAKES, **LSE_TILE_MISTAKES}
    for L_q, L_k, bq, bk, drift in trials:
        Q, K, V = _inputs(gen, B, H, L_q, L_k, d, drift)
        what = (
            f"{PART}: flash_forward, B, H, L_q, L_k, d = {B, H, L_q, L_k, d}, blocks ({bq}, {bk})"
        )
        _compare(what, call(fn, (Q, K, V, bq, bk), what), Q, K, V, bq, bk, False, mistakes)
    Q, K, V = (t.float() * 40 for t in _inputs(gen, B, H, 13, 11, d, 0.0))
    what = f"{PART}: flash_forward, float32 scores in the hundreds, blocks (4, 3)"
    _compare(what, call(fn, (Q, K, V, 4, 3), what), Q, K, V, 4, 3, False, mistakes)


def check_tiles_causal(ns: StudentNamespace) -> None:
    """Part 3(a): causal flash_forward: query i sees keys j <= i, blocks of several sizes."""
    fn = answer(ns, "flash_forward", PART)
    rng = rng_for("p3_tiles_causal")
    gen = generator("p3_tiles_causal")
    B, H, d = rng.sample(range(2, 7), 3)
    b = rng.randint(3, 6)
    trials = [(rng.randint(4 * b + 1, 5 * b - 1), b, b), (rng.randint(19, 29), 0, 0), (7, 7, 7)]
    mistakes = {**CAUSAL_MISTAKES, **TILES_MISTAKES, **LSE_TILE_MISTAKES}
    for L, bq, bk in trials:
        if bq == 0:
            bq, bk = rng.sample(range(2, 8), 2)
        Q, K, V = _inputs(gen, B, H, L, L, d, 4.0)
        what = f"{PART}: causal flash_forward, B, H, L, d = {B, H, L, d}, blocks ({bq}, {bk})"
        got = call(fn, (Q, K, V, bq, bk), what, causal=True)
        _compare(what, got, Q, K, V, bq, bk, True, mistakes)


@proves(Rule(NO_FUSED, "flash_forward", PART))
def check_tiles_rules(ns: StudentNamespace) -> None:
    """Part 3(a): flash_forward uses no fused attention, also not in helpers it calls."""
    fn = answer(ns, "flash_forward", PART)
    x = torch.ones(1, 1, 3, 2, dtype=F64)
    call(fn, (x, x, x, 2, 2), f"{PART}: flash_forward (rules are checked on a working answer)")
    prove(check_tiles_rules.rules, ns)


def causal_block_count(L: int, block_q: int, block_k: int) -> int:
    """(query block, key block) pairs on and below the diagonal."""
    return sum((min(i + block_q, L) - 1) // block_k + 1 for i in range(0, L, block_q))


def check_causal_blocks(ns: StudentNamespace) -> None:
    """Part 3(b): causal_blocks counts the score blocks a causal forward computes."""
    part = "Part 3(b)"
    fn = answer(ns, "causal_blocks", part)
    rng = rng_for("p3_causal_blocks")
    for _ in range(6):
        L, bq, bk = rng.randint(20, 500), rng.randint(2, 40), rng.randint(2, 40)
        what = f"{part}: causal_blocks({L}, {bq}, {bk})"
        got = integer(call(fn, (L, bq, bk), what), what, "an integer count")
        expected = causal_block_count(L, bq, bk)
        if got != expected:
            causes = {
                math.ceil(L / bq) * math.ceil(L / bk): "the blocks above the diagonal counted",
                causal_block_count(L, bq, bk) - math.ceil(L / bq): "the diagonal blocks left out",
            }
            fail(f"{what}: wrong count", expected, got, causes.get(got))
