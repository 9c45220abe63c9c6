# Generated from the course's judge by the release build: do not edit.
"""What a tiled attention forward may form, judged on its footprint (names and shapes only).

:func:`tile_sizes` picks the sizes of one footprint call so that the named mistakes stand
far from what is allowed: with one block side ``wide`` >= 100 d and the other ``narrow`` with
L >= 100 narrow, a strip of scores (a wide block against every position) and the full L x L
matrix exceed the largest allowed tensor (an input, the output, or a block of scores) at
least 100-fold. :func:`judge_tiles` decides one call: no tensor above :data:`SLACK` times the
allowed size, the fused-attention family absent, few values taken out as Python numbers, the
scores of every pair of whole blocks (wholly below the diagonal in causal mode: the pairs any
tiled forward computes, whatever it does with the partial last blocks) computed by products
the footprint recognises (a forward that computes nothing forms nothing, and earns nothing),
and in causal mode no score product beyond the blocks on or below the diagonal. The values
are the values checks' (a values mistake costs no footprint point). Shipped to students for
the visible check.
"""

import math
import random
from dataclasses import dataclass

from .failure import fail
from .footprint import Footprint, blocks, causal_blocks
from .rules import FUSED_WORDS

# A tensor may be this many times the largest allowed size: an honest forward pads an input
# to whole blocks (< 2x), appends a column to V or stacks K and V (2x); the nearest mistake,
# a strip of scores, is >= 100x by the sizes of :func:`tile_sizes`: 10x on either side.
SLACK = 10
MARGIN = 100


@dataclass(frozen=True)
class Tiles:
    """One footprint call: inputs (B, H, L, d), the block sizes, causal or not."""

    B: int
    H: int
    L: int
    d: int
    block_q: int
    block_k: int
    causal: bool = False

    @property
    def allowed(self) -> int:
        """Elements of the largest tensor the task allows: an input or the output (B H L d),
        or a block of scores for every batch and head (B H block_q block_k)."""
        return self.B * self.H * max(self.L * self.d, self.block_q * self.block_k)

    @property
    def limit(self) -> int:
        return SLACK * self.allowed

    @property
    def margin(self) -> float:
        """How far the named mistakes are above ``allowed``: a strip of scores along the wide
        block (its block against every position) and the full L x L matrix."""
        strip = self.B * self.H * self.L * max(self.block_q, self.block_k)
        return min(strip, self.B * self.H * self.L * self.L) / self.allowed

    def describe(self) -> str:
        mode = "causal" if self.causal else "not causal"
        return (
            f"B={self.B}, H={self.H}, L={self.L}, d={self.d}, block_q={self.block_q}, "
            f"block_k={self.block_k}, {mode}"
        )


def tile_sizes(
    rng: random.Random, d: int, wide_queries: bool, causal: bool, B: int = 1, H: int = 3
) -> Tiles:
    """Sizes with every named mistake >= :data:`MARGIN` times the allowed size and partial
    last blocks of at least 2 rows, no block (nor partial block) of ``d`` rows (so a product
    of probabilities and values never reads as one of scores)."""
    for _ in range(10_000):
        wide = rng.randint(MARGIN * d, MARGIN * d + 20)
        narrow = rng.randint(3, 4)
        low = max(MARGIN * narrow, wide + 2)
        L = rng.randint(low, low + 30)
        rows = {wide, narrow, L % wide, L % narrow}
        if min(L % wide, L % narrow) >= 2 and d not in rows:
            bq, bk = (wide, narrow) if wide_queries else (narrow, wide)
            tiles = Tiles(B, H, L, d, bq, bk, causal)
            if tiles.margin >= MARGIN:
                return tiles
    raise RuntimeError(f"no tile sizes for d={d}")


def whole_block_scores(t: Tiles) -> int:
    """Scores of the pairs of a whole query block and a whole key block (in causal mode only
    the pairs wholly below the diagonal, every key before every query): every tiled forward
    computes them, for every batch entry and head."""
    rows = [(q0, q1) for q0, q1 in blocks(t.L, t.block_q) if q1 - q0 == t.block_q]
    cols = [(k0, k1) for k0, k1 in blocks(t.L, t.block_k) if k1 - k0 == t.block_k]
    pairs = sum(1 for q0, _ in rows for _, k1 in cols if not t.causal or k1 - 1 <= q0)
    return t.B * t.H * pairs * t.block_q * t.block_k


def _mistake(shape: tuple[int, ...], t: Tiles) -> str:
    dims = list(shape)
    if dims.count(t.L) >= 2:
        return "the full L x L score matrix formed after all"
    if t.L in dims and t.block_q in dims:
        return "a strip of scores: a query block against every key"
    if t.L in dims and t.block_k in dims:
        return "a strip of scores: every query against a key block"
    return "an intermediate that grows with the sequence, larger than a block"


def judge_tiles(fp: Footprint, t: Tiles, part: str, name: str = "flash_forward") -> None:
    """Fail unless the footprint of ``name`` on sizes ``t`` is that of a tiled forward."""
    what = f"{part}: {name}({t.describe()})"
    if fp.truncated:
        fail(
            f"{what}: the record of its operations hit its bound",
            "a loop over blocks, not over positions",
            f"{len(fp.ops)} operations or more",
            "a loop over single positions, heads or batches",
        )
    fused = fp.named(FUSED_WORDS)
    if fused is not None:
        fail(f"{what}: a fused attention kernel", "your own tiles", fused.name)
    largest = fp.largest()
    if largest is not None and largest.largest_output > t.limit:
        shape = max(largest.outputs, key=math.prod)
        fail(
            f"{what}: an intermediate larger than a block of scores",
            f"no tensor above {t.limit:,} elements ({SLACK} x the larger of B*H*L*d and "
            f"B*H*block_q*block_k, {t.allowed:,})",
            f"a tensor of shape {tuple(shape)} ({math.prod(shape):,} elements) formed by "
            f"{largest.name}",
            _mistake(shape, t),
        )
    n_q, n_k = len(blocks(t.L, t.block_q)), len(blocks(t.L, t.block_k))
    if fp.scalars() > n_q * n_k:
        fail(
            f"{what}: values taken out of tensors as Python numbers",
            f"at most one per pair of blocks ({n_q * n_k})",
            f"{fp.scalars()} (.item(), float(t), int(t))",
            "computing with Python numbers where the record cannot see",
        )
    scores, needed = fp.scores(t.d), whole_block_scores(t)
    if scores < needed:
        where = " wholly below the diagonal" if t.causal else ""
        fail(
            f"{what}: the score products were not found",
            f"query-key products (@, matmul, einsum, bmm) for at least the {needed:,} scores of "
            f"the pairs of whole blocks{where}",
            f"products for {scores:,} scores",
            "no scores computed, or scores computed by an operation other than a matrix or "
            "broadcast product",
        )
    batch = t.B * t.H
    below, above, entries = causal_blocks(t.L, t.block_q, t.block_k)
    once = batch * (entries if t.causal else t.L * t.L)  # each block of scores formed once
    extra = scores - once
    second_pass = (
        f"each block of scores formed {scores / once:.1f} times: a second pass over the key "
        "blocks (the forward is one pass, each block formed once and rescaled as it goes)"
    )
    if t.causal and extra > 0:
        fail(
            f"{what}: scores computed above the diagonal, or blocks formed twice",
            f"products only for the {below} pairs of blocks on or below the diagonal, each once "
            f"({batch * entries:,} scores; {above} pairs lie above it)",
            f"products for {scores:,} scores: about {extra / (batch * t.block_q * t.block_k):.1f} "
            "blocks more",
            second_pass
            if scores >= 2 * once
            else "blocks above the diagonal computed and masked off, or the loop over key blocks "
            "running one block too far",
        )
    # Not causal: only a whole second pass is refused (a last block padded to full size adds
    # less than one pass: the text asks for shorter last blocks, not for this count).
    if scores >= 2 * once:
        fail(
            f"{what}: blocks of scores formed more than once",
            f"products for the {once:,} scores of the L x L pairs, each block once",
            f"products for {scores:,} scores",
            second_pass,
        )
