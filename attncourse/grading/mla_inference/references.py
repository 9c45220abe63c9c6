"""Float64 references of ``mla_inference`` and the named mistakes beside them.

Written independently of the model answer: RoPE from explicit block rotation matrices, MLA
head by head with an explicit causal mask, decoding against the full forward (the cache
sizes, counted per kind, are in ``references_cache``). A reference that can make a named
mistake takes ``variant``, a frozen dataclass that is the task's at its defaults
(:class:`Rope`, :class:`Variant`); a table maps each mistake's description to its variant
(:func:`attncourse.judge.checks.named_mistakes`). Positions (``q_pos``, ``k_pos``,
``q_off``) are arguments, not variants.
"""

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from attncourse.judge.checks import named_mistakes

F64 = torch.float64
BASE = 10000.0
Tensor = torch.Tensor
Rotate = Callable[[Tensor, Tensor], Tensor]  # (x (..., d), positions) -> R_t x
Weights = dict[str, Tensor]  # W_Q, W_QR, W_DKV, W_UK, W_UV, W_KR, W_O
Dims = dict[str, int]  # H, d_h, d_R, r...


# ---------------------------------------------------------------- RoPE, block by block


@dataclass(frozen=True)
class Rope:
    """The task's rotation, or a named wrong one (every field at its default is the task's)."""

    pairing: str = "neighbours"  # or "halves": i with i + d/2
    sign: int = 1  # -1 rotates the other way (R_{-t})
    exponent: float = 2.0  # theta_i = base^(-exponent * i / d)
    first_index: int = 0  # 1: theta indexed from i = 1
    offset: int = 0  # angle (t + offset) theta_i
    base: float | None = None  # a base other than the one asked for
    swap_outputs: bool = False  # writes the rotated pair in the wrong order


TASK_ROPE = Rope()


@functools.lru_cache(maxsize=8192)
def rotation(t: int, d: int, base: float = BASE, variant: Rope = TASK_ROPE) -> Tensor:
    """R_t (d, d) in float64, one 2x2 block at a time (planes (2i, 2i+1) for the task)."""
    R = torch.zeros(d, d, dtype=F64)
    base = variant.base if variant.base is not None else base
    for i in range(d // 2):
        theta = base ** (-variant.exponent * (i + variant.first_index) / d)
        angle = variant.sign * (t + variant.offset) * theta
        c, s = math.cos(angle), math.sin(angle)
        a, b = (2 * i, 2 * i + 1) if variant.pairing == "neighbours" else (i, i + d // 2)
        out_a, out_b = (b, a) if variant.swap_outputs else (a, b)
        R[out_a, a], R[out_a, b] = c, -s
        R[out_b, a], R[out_b, b] = s, c
    return R


def rope_reference(
    x: Tensor, positions: object, base: float = BASE, variant: Rope = TASK_ROPE
) -> Tensor:
    """R_t x for every vector of x (..., d), t its entry of ``positions`` (broadcast), float64."""
    x = x.to(F64)
    d = x.shape[-1]
    pos = torch.broadcast_to(torch.as_tensor(positions), x.shape[:-1]).reshape(-1)
    flat = x.reshape(-1, d)
    unique, index = torch.unique(pos, return_inverse=True)
    mats = torch.stack([rotation(int(t), d, float(base), variant) for t in unique.tolist()])
    return torch.einsum("kij,kj->ki", mats[index], flat).reshape(x.shape)


ROPE_MISTAKES = {
    "rotate-half pairing: coordinate i paired with i + d/2; this task pairs neighbours "
    "(2i, 2i+1)": Rope(pairing="halves"),
    "rotated the wrong way (R_{-t}): the first coordinate is x_2i cos - x_2i+1 sin": Rope(sign=-1),
    "theta_i = base^(-i/d): the exponent is -2i/d": Rope(exponent=1.0),
    "theta indexed from i = 1: the first pair rotates by t * base^0 = t": Rope(first_index=1),
    "positions off by one: rotated by (t + 1) theta_i": Rope(offset=1),
    "positions off by one: rotated by (t - 1) theta_i": Rope(offset=-1),
    "the rotated pair is written back in the wrong order": Rope(swap_outputs=True),
}


def rope_mistakes(x: Tensor, positions: object, base: float) -> dict[str, Tensor]:
    """Named wrong rotations of x (the table, no rotation at all, and a base ignored)."""
    out = named_mistakes(rope_reference, ROPE_MISTAKES, x, positions, base)
    out["positions ignored (nothing rotated)"] = x.to(F64)
    if base != BASE:
        out["the base argument is ignored (10000 used)"] = rope_reference(
            x, positions, base, Rope(base=BASE)
        )
    return out


# ---------------------------------------------------------------- MLA with decoupled RoPE


@dataclass(frozen=True)
class Variant:
    """The task's MLA, or a named wrong one (every field at its default is the task's)."""

    mask: str = "causal"  # "none": no mask; "strict": s < t (the token does not see itself)
    # "sum": 1/sqrt(d_h + d_R); "d_h", "d_R", "none"; "separate": content and rotary apart
    scale: str = "sum"
    rotary: bool = True  # False: q^R and k^R never rotated
    rotate_content: bool = False  # True: q^C and k^C rotated too
    swap_up: bool = False  # W_UV for keys and W_UK for values
    heads: str = "contiguous"  # "interleaved": head h owns features h, h + H, ...
    softmax_dim: int = -1  # -2: softmax over the queries


TASK = Variant()


def head_rows(h: int, H: int, size: int, heads: str) -> Tensor:
    """The rows of head h in a projection of H heads of ``size`` (contiguous or interleaved)."""
    if heads == "contiguous":
        return torch.arange(h * size, (h + 1) * size)
    return torch.arange(size) * H + h


def mla_reference(
    x: Tensor,
    w: Weights,
    dims: Dims,
    rotate: Rotate = rope_reference,
    variant: Variant = TASK,
    q_pos: Tensor | None = None,
    k_pos: Tensor | None = None,
) -> Tensor:
    """Decoupled-RoPE MLA of x (B, L, D) in float64, head by head, with an explicit mask.

    ``q_pos``/``k_pos`` are the positions the queries and the keys are rotated at
    (default 0 .. L-1); a decoder's off-by-one mistakes are references with other ones.
    """
    B, L, D = x.shape
    H, d_h, d_R = dims["H"], dims["d_h"], dims["d_R"]
    q_pos = torch.arange(L) if q_pos is None else q_pos
    k_pos = torch.arange(L) if k_pos is None else k_pos
    v = variant
    c = x @ w["W_DKV"].T  # (B, L, r)
    k_r = x @ w["W_KR"].T  # (B, L, d_R)
    if v.rotary:
        k_r = rotate(k_r, k_pos)
    W_UK, W_UV = (w["W_UV"], w["W_UK"]) if v.swap_up else (w["W_UK"], w["W_UV"])
    t_idx, s_idx = torch.arange(L)[:, None], torch.arange(L)[None, :]
    allowed = {"causal": s_idx <= t_idx, "strict": s_idx < t_idx, "none": s_idx >= 0}[v.mask]
    y = torch.zeros(B, L, D, dtype=F64)
    for h in range(H):
        rows = head_rows(h, H, d_h, v.heads)
        q_c = x @ w["W_Q"][rows].T  # (B, L, d_h)
        k_c = c @ W_UK[rows].T  # (B, L, d_h)
        val = c @ W_UV[rows].T  # (B, L, d_h)
        q_r = x @ w["W_QR"][head_rows(h, H, d_R, v.heads)].T  # (B, L, d_R)
        if v.rotary:
            q_r = rotate(q_r, q_pos)
        if v.rotate_content:
            q_c, k_c = rotate(q_c, q_pos), rotate(k_c, k_pos)
        content = q_c @ k_c.transpose(1, 2)  # (B, L, L): [t, s]
        rot = q_r @ k_r.transpose(1, 2)  # (B, L, L)
        if v.scale == "separate":
            scores = content / math.sqrt(d_h) + rot / math.sqrt(d_R)
        else:
            divisor = {"sum": d_h + d_R, "d_h": d_h, "d_R": d_R, "none": 1}[v.scale]
            scores = (content + rot) / math.sqrt(divisor)
        scores = scores.masked_fill(~allowed, -math.inf)
        alpha = torch.nan_to_num(torch.softmax(scores, dim=v.softmax_dim))  # empty rows: 0
        y += (alpha @ val) @ w["W_O"][:, rows].T
    return y


MLA_MISTAKES = {
    "no causal mask: position t also reads the tokens after it": Variant(mask="none"),
    "scores scaled by 1/sqrt(d_h) only: the dot product has d_h + d_R terms": Variant(scale="d_h"),
    "scores scaled by 1/sqrt(d_R)": Variant(scale="d_R"),
    "scores not scaled: divide by sqrt(d_h + d_R)": Variant(scale="none"),
    "content and rotary parts scaled separately (1/sqrt(d_h), 1/sqrt(d_R)): one scale "
    "1/sqrt(d_h + d_R) for their sum": Variant(scale="separate"),
    "RoPE applied to the content part too: q^C and k^C are never rotated": Variant(
        rotate_content=True
    ),
    "the rotary query and key are not rotated": Variant(rotary=False),
    "W_UK and W_UV swapped: keys come from W_UK, values from W_UV": Variant(swap_up=True),
    "heads split interleaved: head h owns a contiguous block of rows": Variant(heads="interleaved"),
    "softmax over the queries: normalise over the keys s (last axis)": Variant(softmax_dim=-2),
}


def mla_mistakes(x: Tensor, w: Weights, dims: Dims, rotate: Rotate) -> dict[str, Tensor]:
    """Named wrong MLA outputs: the table, and rotary queries one position ahead."""
    out = named_mistakes(mla_reference, MLA_MISTAKES, x, w, dims, rotate)
    shifted = torch.arange(x.shape[1]) + 1
    out["rotary queries rotated one position ahead of the keys: both use the token's t"] = (
        mla_reference(x, w, dims, rotate, TASK, q_pos=shifted)
    )
    return out


def latent_query_reference(
    x: Tensor,
    w: Weights,
    dims: Dims,
    t: int,
    rotate: Rotate,
    variant: Variant = TASK,
    q_off: int = 0,
) -> tuple[Tensor, Tensor]:
    """The absorbed query of x_t (B, D) per head: (W_UK_h^T W_Q_h x_t, R_{t + q_off} W_QR_h x_t)."""
    H, d_h, d_R = dims["H"], dims["d_h"], dims["d_R"]
    W_UK = w["W_UV"] if variant.swap_up else w["W_UK"]
    q_lat, q_rope = [], []
    for h in range(H):
        rows = head_rows(h, H, d_h, variant.heads)
        q_c = x @ w["W_Q"][rows].T  # (B, d_h)
        q_lat.append(q_c @ W_UK[rows])  # (B, r): W_UK_h^T q_c
        q_r = x @ w["W_QR"][head_rows(h, H, d_R, variant.heads)].T  # (B, d_R)
        q_rope.append(rotate(q_r, torch.tensor(t + q_off)))
    return torch.stack(q_lat, 1), torch.stack(q_rope, 1)


DECODE_MISTAKES = {
    name: variant
    for name, variant in MLA_MISTAKES.items()
    if variant not in (Variant(rotate_content=True), Variant(mask="none"))
}
DECODE_MISTAKES["the token does not attend to itself: append it to the cache before attending"] = (
    Variant(mask="strict")
)


def decode_mistakes(
    x: Tensor, w: Weights, dims: Dims, rotate: Rotate, step: bool = False
) -> dict[str, Tensor]:
    """Named wrong decoders: the MLA mistakes, and positions off by one.

    ``step``: the mistakes of one step from the judge's cache (only the last token, at the
    last row, is the student's); otherwise every token was decoded by the student, and a
    key rotated at t + 1 is the same mistake as a query at t - 1 (only offsets count).
    """
    out = named_mistakes(mla_reference, DECODE_MISTAKES, x, w, dims, rotate)
    base = torch.arange(x.shape[1])
    if not step:
        out[
            "queries and keys rotated one position apart (the new token's key at t + 1, or its "
            "query at t - 1): both belong at t, the number of cached tokens"
        ] = mla_reference(x, w, dims, rotate, TASK, k_pos=base + 1)
        return out
    ahead, behind = base.clone(), base.clone()
    ahead[-1] += 1
    behind[-1] -= 1
    named = {
        "the new token's rotary key rotated at t + 1: the token at position t is rotated by "
        "R_t": dict(k_pos=ahead),
        "the query rotated at t - 1: the new token is at t = number of cached tokens": dict(
            q_pos=behind
        ),
        "positions counted from 1: the new token is at t = number of cached tokens": dict(
            q_pos=ahead, k_pos=ahead
        ),
    }
    for name, positions in named.items():
        out[name] = mla_reference(x, w, dims, rotate, TASK, **positions)
    return {k: v[:, -1] for k, v in out.items()}
