"""Float64 references of ``attention_variants`` and the named mistakes beside them.

Every input is drawn from the run's secret; every reference is computed here on the CPU in
float64 (per-head loops), written independently of the model answer. A reference that can
make a named mistake takes ``variant``, a frozen dataclass that is the task's at its
defaults; a table maps each mistake's description to its variant
(:func:`attncourse.judge.checks.named_mistakes`). Part 13's reduced matrices are in
``references_reduced``.
"""

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from attncourse.judge.checks import Deferred, distinct_dims, named_mistakes, randn, rng_for, tensor

from .tolerances import ROUNDING_ETA, ROWS_TOL

F64 = torch.float64


# ---------------------------------------------------------------------- the secret draws


def draw_dims(test_id: str, names: list[str], low: int = 2) -> dict[str, int]:
    """Secret, pairwise distinct dimensions for ``names``, drawn from low .. low + 7 + len(names)."""
    return distinct_dims(rng_for(test_id), names, low=low, high=low + 7)


def draw_gqa_heads(test_id: str, avoid: Collection[int]) -> tuple[int, int]:
    """(H, G) with 1 < G < H, G dividing H, and neither equal to a dimension in ``avoid``."""
    pairs = [(h, g) for h in range(4, 13) for g in range(2, h) if h % g == 0]
    pairs = [(h, g) for h, g in pairs if h not in avoid and g not in avoid]
    return rng_for(test_id).choice(pairs)


def draw_weights(gen: torch.Generator, rows: int, cols: int) -> Tensor:
    """A well-conditioned weight matrix: entries ~ N(0, 1/cols)."""
    return randn(gen, rows, cols, scale=1.0 / math.sqrt(cols))


# ------------------------------------------------------- MHA and GQA (Parts 5, 7, 8 and 13)


def reference_attention(
    x: Tensor, y: Tensor, W_Q: Tensor, W_K: Tensor, W_V: Tensor, W_O: Tensor, H: int, G: int
) -> Tensor:
    """Float64 GQA with interleaved groups (query head h uses kv head h mod G), one head at a time.

    With G = H this is MHA. Weights follow the column-vector convention
    (rows = outputs), so one head's projection is a block of rows and W^O_h
    a block of columns.
    """
    x, y = x.to(F64), y.to(F64)
    D_qk = W_Q.shape[0] // H
    D_v = W_O.shape[1] // H
    out = torch.zeros(x.shape[0], x.shape[1], W_O.shape[0], dtype=F64, device=x.device)
    for h in range(H):
        g = h % G
        q = x @ W_Q[h * D_qk : (h + 1) * D_qk].T  # (B, L_1, D_qk)
        k = y @ W_K[g * D_qk : (g + 1) * D_qk].T  # (B, L_2, D_qk)
        v = y @ W_V[g * D_v : (g + 1) * D_v].T  # (B, L_2, D_v)
        logits = q @ k.transpose(1, 2) / math.sqrt(D_qk)  # (B, L_1, L_2)
        weights = torch.exp(logits - logits.amax(-1, keepdim=True))
        weights = weights / weights.sum(-1, keepdim=True)  # (B, L_1, L_2)
        out += (weights @ v) @ W_O[:, h * D_v : (h + 1) * D_v].T  # (B, L_1, D_1)
    return out


@dataclass(frozen=True)
class Attention:
    """MHA/GQA as the task asks, or a named wrong one (every field at its default is the task's)."""

    scale: str = "sqrt(D_qk)"  # the logits' divisor: "sqrt(D_v)", "D_qk", "none"
    softmax_dim: int = -1  # -2: over the queries (L_1); 1: over the heads
    merge: str = "standard"  # "no_transpose": (B, H, L_1, D_v) reshaped straight to (B, L_1, H*D_v)
    split: str = (
        "standard"  # "head_fastest": every H-th row; "no_transpose": straight to (B, H, L, D)
    )
    grouping: str = "interleaved"  # "contiguous": query head h uses kv head h // (H/G)


TASK = Attention()


def attention(
    x: Tensor,
    y: Tensor,
    W_Q: Tensor,
    W_K: Tensor,
    W_V: Tensor,
    W_O: Tensor,
    H: int,
    G: int,
    variant: Attention = TASK,
) -> Tensor:
    """Vectorised attention as ``variant`` computes it (for naming wrong answers)."""
    B, L_1, _ = x.shape
    L_2 = y.shape[1]
    D_qk = W_Q.shape[0] // H
    D_v = W_O.shape[1] // H
    split = variant.split

    def heads(t: Tensor, L: int, n: int, count: int) -> Tensor:
        if split == "head_fastest":
            return t.reshape(B, L, n, count).permute(0, 3, 1, 2)
        if split == "no_transpose":
            return t.reshape(B, count, L, n)
        return t.reshape(B, L, count, n).transpose(1, 2)

    Q = heads(x @ W_Q.T, L_1, D_qk, H)  # (B, H, L_1, D_qk)
    K = heads(y @ W_K.T, L_2, D_qk, G)  # (B, G, L_2, D_qk)
    V = heads(y @ W_V.T, L_2, D_v, G)  # (B, G, L_2, D_v)
    if variant.grouping == "contiguous":
        index = torch.arange(H, device=x.device) // (H // G)
    else:
        index = torch.arange(H, device=x.device) % G
    K, V = K[:, index], V[:, index]  # (B, H, L_2, .)
    scale = {
        "sqrt(D_qk)": 1 / math.sqrt(D_qk),
        "none": 1.0,
        "sqrt(D_v)": 1 / math.sqrt(D_v),
        "D_qk": 1 / D_qk,
    }[variant.scale]
    logits = Q @ K.transpose(-2, -1) * scale
    weights = torch.softmax(logits, dim=variant.softmax_dim)
    out = weights @ V  # (B, H, L_1, D_v)
    if variant.merge == "no_transpose":
        out = out.reshape(B, L_1, H * D_v)
    elif split == "head_fastest":
        out = out.permute(0, 2, 3, 1).reshape(B, L_1, H * D_v)
    else:
        out = out.transpose(1, 2).reshape(B, L_1, H * D_v)
    return out @ W_O.T


ATTENTION_MISTAKES = {
    "missing the 1/sqrt(D_qk) scaling of the logits": Attention(scale="none"),
    "logits scaled by 1/sqrt(D_v) instead of 1/sqrt(D_qk)": Attention(scale="sqrt(D_v)"),
    "logits divided by D_qk instead of sqrt(D_qk)": Attention(scale="D_qk"),
    "softmax over the query axis (L_1) instead of the key axis (L_2)": Attention(softmax_dim=-2),
    "softmax over the head axis instead of the key axis (L_2)": Attention(softmax_dim=1),
    "heads merged without moving the head axis back next to D_v "
    "(reshape of (B, H, L_1, D_v) straight to (B, L_1, H*D_v))": Attention(merge="no_transpose"),
    "heads split the wrong way: head h must be the h-th block of D_qk consecutive "
    "rows of W^Q, not every H-th row": Attention(split="head_fastest"),
    "projections reshaped straight to (B, H, L, D) instead of (B, L, H, D) "
    "followed by a transpose": Attention(split="no_transpose"),
}
# a mistake only a GQA with 1 < G < H can make
GROUPING_MISTAKES = {
    "contiguous grouping h // (H/G); the task groups heads with h = g (mod G)": Attention(
        grouping="contiguous"
    ),
}


def attention_mistakes(args: Sequence[Tensor], H: int, G: int) -> Deferred:
    """Named wrong outputs of MHA/GQA for the inputs and weights in ``args`` (computed lazily)."""
    table = ATTENTION_MISTAKES | (GROUPING_MISTAKES if G not in (1, H) else {})
    return Deferred(named_mistakes, attention, table, *args, H, G)


# ----------------------------------------------------------------- Part 13: the experiment

EXPERIMENT = {"D": 1024, "H": 32, "r": 50, "B": 32, "L_1": 100, "L_2": 300}
MLA_DATA = ("W_DKV", "W_UK", "W_UV", "W_Q", "W_O")


def mla_rows(x: Tensor, y: Tensor, w: Mapping[str, Tensor], H: int) -> tuple[Tensor, Tensor]:
    """The vanilla MLA in float64 on x (n, L_1, D) over y (n, L_2, D), and per output row
    the most that float32 rounding of the logits can move it (to first order).

    A logit computed in float32 is off by at most ROUNDING_ETA * |q_h| max_l |k_{h,l}| /
    sqrt(d) (vanilla path) or the same with the reduced query and latent key (reduced
    path). Moving the logits by delta_l changes head h's contribution to the output by
    sum_l p_l delta_l (u_l - u_bar), u_l = W^O_h v_{h,l}, so a row moves by at most
    sum_h eps_h sum_l p_l |u_l - u_bar|: next to nothing where the softmax is one-hot or
    smooth, a lot where two keys nearly tie in a saturated softmax.
    """
    W_DKV, W_UK, W_UV, W_Q, W_O = (w[k] for k in MLA_DATA)
    r, D = W_DKV.shape
    d = D // H
    n, L_1, _ = x.shape
    L_2 = y.shape[1]
    x, y = x.to(F64), y.to(F64)
    latent = y @ W_DKV.T  # (n, L_2, r)
    q = (x @ W_Q.T).view(n, L_1, H, d).transpose(1, 2)  # (n, H, L_1, d)
    k = (latent @ W_UK.T).view(n, L_2, H, d).transpose(1, 2)  # (n, H, L_2, d)
    v = (latent @ W_UV.T).view(n, L_2, H, d).transpose(1, 2)  # (n, H, L_2, d)
    p = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), -1)  # (n, H, L_1, L_2)
    o = p @ v  # (n, H, L_1, d)
    W_O_h = W_O.view(D, H, d).transpose(0, 1)  # (H, D, d)
    out = torch.einsum("nhld,hed->nle", o, W_O_h)  # (n, L_1, D)
    # |u_l - u_bar|^2 through the Gram matrices W^O_h^T W^O_h (d x d), not D-vectors
    gram = W_O_h.transpose(1, 2) @ W_O_h  # (H, d, d)
    v_gram = torch.einsum("nhjd,hde->nhje", v, gram)  # (n, H, L_2, d)
    uu = (v_gram * v).sum(-1)  # (n, H, L_2)
    uo = torch.einsum("nhje,nhle->nhlj", v_gram, o)  # (n, H, L_1, L_2)
    oo = torch.einsum("nhld,hde,nhle->nhl", o, gram, o)  # (n, H, L_1)
    spread = (uu[:, :, None, :] - 2 * uo + oo[..., None]).clamp_min(0).sqrt()
    sensitivity = (p * spread).sum(-1)  # (n, H, L_1)
    q_hat = math.sqrt(r / d) * torch.einsum("nhld,hdr->nhlr", q, W_UK.view(H, d, r))
    scale = torch.maximum(
        q.norm(dim=-1) * k.norm(dim=-1).amax(-1)[..., None] / math.sqrt(d),
        q_hat.norm(dim=-1) * latent.norm(dim=-1).amax(-1)[:, None, None] / math.sqrt(r),
    )  # (n, H, L_1)
    return out, (ROUNDING_ETA * scale * sensitivity).sum(1)


def row_ratios(got: object, ref: Tensor, slack: Tensor) -> Tensor:
    """Per row: |got - ref| / (ROWS_TOL * |ref| + slack); a row passes at <= 1 (NaN never)."""
    deviation = torch.linalg.vector_norm(tensor(got, "output") - ref, dim=-1)
    return deviation / (ROWS_TOL * torch.linalg.vector_norm(ref, dim=-1) + slack)
