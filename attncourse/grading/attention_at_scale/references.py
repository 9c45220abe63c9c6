"""Float64 references of ``attention_at_scale`` and its named mistakes; each student's numbers.

Conventions: scores ``s`` reduce over their last axis; a partial result over a set of keys is
``(m, l, o)`` with ``m`` the largest score, ``l = sum_j exp(s_j - m)`` and ``o = sum_j exp(s_j -
m) v_j`` (unnormalised); attention takes ``Q, K, V`` of shape (B, H, L, d), scale 1/sqrt(d), and
returns ``(O, lse)`` with ``lse`` the natural log of the softmax's denominator. A reference that
can make a mistake takes ``variant``, a frozen dataclass whose defaults are the task's
(:func:`attncourse.judge.checks.named_mistakes`).
"""

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from attncourse.judge.checks import named_mistakes, rel_error

IGNORE = -100  # Part 6: the target of a position that is not a query (no loss, no accuracy)

F64 = torch.float64
Partial = tuple[Tensor, Tensor, Tensor]  # (m, l, o) over a set of keys

# ---------------------------------------------------------------- each student's own numbers
# ``scale_instance`` is also the body of the notebook's provided cell ``student_instance``
# (``tests/grading/attention_at_scale/test_attention_at_scale.py`` keeps the two the same). The judge draws the instance of
# the id nbgrader grades the submission under (``ns.student``), never an id the notebook names.
# Equal difficulty: five distinct integer scores in [-40, 130], the largest above float16's
# overflow point and the second 1 or 2 below it (so lse - m is 0.13 to 0.31), at least one shifted score below float16's underflow point, and no score or
# shifted score within 1 of a threshold (so no rounding subtlety decides a count).
FP16_OVERFLOW = math.log(65504.0)  # 11.09: exp(x) > float16's largest finite value
BF16_OVERFLOW = math.log(torch.finfo(torch.bfloat16).max)  # 88.72
FP16_UNDERFLOW = math.log(2.0**-25)  # -17.33: below half float16's smallest subnormal 2^-24
BF16_UNDERFLOW = math.log(2.0**-134)  # -92.88: below half bfloat16's smallest subnormal 2^-133
FP16_NORMAL = math.log(2.0**-14)  # -9.70: float16's smallest normal (the flush-to-zero mistake)
BF16_NORMAL = math.log(2.0**-126)  # -87.34


def scale_instance(student: str) -> dict[str, Any]:
    """Part 1's five scores and Part 4's (N, d, M) for ``student``: the same on every call."""
    seed = hashlib.sha256(f"attention_at_scale:{student}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(seed[:8], "little"))
    edges = (11.09, 88.72, -17.33, -92.88)  # where float16 / bfloat16 overflow or underflow
    while True:
        top = int(rng.integers(13, 131))  # the largest score: exp(top) overflows float16
        second = top - int(rng.integers(1, 3))  # close below it: lse - m is visible
        scores = rng.permutation([top, second, *rng.integers(-40, second, 3)])  # five scores
        shifted = scores - top  # what a stable softmax exponentiates
        clear = all(abs(v - e) >= 1 for v in (*scores, *shifted) for e in edges)
        if clear and len(set(scores.tolist())) == 5 and (shifted < -17.33).any():
            break
    N = int(rng.choice([4096, 8192, 16384, 32768]))  # sequence length
    d = int(rng.choice([64, 128]))  # head dimension
    M = int(rng.choice([24576, 49152, 98304]))  # fast memory, in elements
    return {"scores": scores, "N": N, "d": d, "M": M}


def own_answers(student: str) -> dict[str, float]:
    """The answers of Part 1(b) and Part 4(b) for ``student``'s instance (plain numbers)."""
    data = scale_instance(student)
    s = data["scores"].astype(np.float64)
    shifted = s - s.max()
    N, d, M = data["N"], data["d"], data["M"]
    B = block_rows(M, d)
    return {
        "lse_mine": float(s.max() + np.log(np.exp(shifted).sum())),
        "fp16_overflows": int((s > FP16_OVERFLOW).sum()),
        "bf16_overflows": int((s > BF16_OVERFLOW).sum()),
        "fp16_underflows": int((shifted < FP16_UNDERFLOW).sum()),
        "bf16_underflows": int((shifted < BF16_UNDERFLOW).sum()),
        "B_mine": B,
        "io_ratio_mine": standard_io(N, d) / tiled_io(N, d, B),
    }


def own_mistakes(student: str) -> dict[str, dict[float, str]]:
    """answer name -> {wrong value: the mistake that gives it} for ``student``'s instance."""
    data = scale_instance(student)
    s = data["scores"].astype(np.float64)
    shifted = s - s.max()
    N, d, M = data["N"], data["d"], data["M"]
    B = block_rows(M, d)
    return {
        "lse_mine": {
            float(s.max()): "the max alone: lse = m + log(sum exp(s - m)), and the sum is >= 1",
            float(np.log(np.exp(shifted).sum())): "the max left out: lse = m + log(...)",
            float(np.log10(np.exp(shifted).sum()) + s.max()): "log10 instead of the natural log",
        },
        "fp16_underflows": {
            int((shifted < FP16_NORMAL).sum()): "underflow taken at float16's smallest normal "
            "2^-14; subnormals reach 2^-24",
        },
        "bf16_underflows": {
            int((shifted < BF16_NORMAL).sum()): "underflow taken at bfloat16's smallest normal "
            "2^-126; subnormals reach 2^-133",
        },
        "B_mine": {
            M // (2 * d): "two blocks of B d counted: Q_i, O_i, K_j and V_j are four",
            M // d: "one block of B d counted: Q_i, O_i, K_j and V_j are four",
        },
        "io_ratio_mine": {
            tiled_io(N, d, B) / standard_io(N, d): "the ratio upside down: standard over tiled",
            standard_io(N, d) / (4 * N * d + N): "K and V counted once: the tiled forward reads "
            "them once per query block",
        },
    }


def instance_json(student: str) -> dict[str, Any]:
    """The instance of ``student`` and its expected answers, as plain lists (for JSON)."""
    data = scale_instance(student)
    return {
        "assignment": "attention_at_scale",
        "student": student,
        "instance": {k: np.asarray(v).tolist() for k, v in data.items()},
        "answers": own_answers(student),
    }


# ================================================================= Parts 1-2: softmax


@dataclass(frozen=True)
class Softmax:
    """Part 1(a)'s softmax and log-sum-exp; fields at their defaults are the task's."""

    shift: str = "max"  # "none", "min", "mean"
    add_back: bool = True  # lse = m + log(ell): False leaves m out


def softmax_reference(s: Tensor, dim: int = -1, variant: Softmax = Softmax()) -> Tensor:
    """softmax(s) along ``dim`` in float64 with the variant's shift."""
    s = s.to(F64)
    shift = {
        "max": s.amax(dim, keepdim=True),
        "none": torch.zeros_like(s.amax(dim, keepdim=True)),
        "min": s.amin(dim, keepdim=True),
        "mean": s.mean(dim, keepdim=True),
    }[variant.shift]
    e = torch.exp(s - shift)
    return e / e.sum(dim, keepdim=True)


def lse_reference(s: Tensor, dim: int = -1, variant: Softmax = Softmax()) -> Tensor:
    """log(sum(exp(s))) along ``dim`` in float64, with the variant's shift and add-back."""
    s = s.to(F64)
    m = s.amax(dim) if variant.shift == "max" else torch.zeros_like(s.amax(dim))
    lse = torch.log(torch.exp(s - m.unsqueeze(dim)).sum(dim))
    return lse + m if variant.add_back else lse


SOFTMAX_MISTAKES = {
    "no shift: exp(s) overflows for large scores; subtract the max first": Softmax(shift="none"),
    "the minimum subtracted: exp(s - min) overflows; subtract the max": Softmax(shift="min"),
    "the mean subtracted: exp(s - mean) still overflows; subtract the max": Softmax(shift="mean"),
}
LSE_MISTAKES = {
    **SOFTMAX_MISTAKES,
    "the max not added back: lse = m + log(sum exp(s - m))": Softmax(add_back=False),
}


@dataclass(frozen=True)
class Online:
    """Part 2's running statistics and merge; fields at their defaults are the task's."""

    rescale_sum: bool = True  # ell scaled by exp(m_old - m_new) when the max changes
    rescale_out: bool = True  # o scaled likewise
    weight_by: str = "own"  # "own": exp(m_x - m); "other": exp(m - m_x), the wrong way round


def online_reference(s: Tensor, block: int, variant: Online = Online()) -> tuple[Tensor, Tensor]:
    """(m, ell) of ``s`` (..., N) after one pass over blocks of ``block`` columns."""
    s = s.to(F64)
    m = torch.full(s.shape[:-1], -math.inf, dtype=F64)
    ell = torch.zeros(s.shape[:-1], dtype=F64)
    for start in range(0, s.shape[-1], block):
        blk = s[..., start : start + block]
        m_new = torch.maximum(m, blk.amax(-1))
        alpha = torch.exp(m - m_new) if variant.rescale_sum else torch.ones_like(m)
        ell = ell * alpha + torch.exp(blk - m_new[..., None]).sum(-1)
        m = m_new
    return m, ell


def merge_reference(a: Partial, b: Partial, variant: Online = Online()) -> Partial:
    """Merge two partial results (m, ell, o) over disjoint keys, in float64."""
    (m_a, l_a, o_a), (m_b, l_b, o_b) = ((t.to(F64) for t in x) for x in (a, b))
    m = torch.maximum(m_a, m_b)
    if variant.weight_by == "own":
        w_a, w_b = torch.exp(m_a - m), torch.exp(m_b - m)
    elif variant.weight_by == "other":
        w_a, w_b = torch.exp(m - m_a), torch.exp(m - m_b)
    else:  # "none": partials added as they are
        w_a, w_b = torch.ones_like(m), torch.ones_like(m)
    out_a, out_b = (w_a, w_b) if variant.rescale_out else (torch.ones_like(m), torch.ones_like(m))
    return m, l_a * w_a + l_b * w_b, o_a * out_a[..., None] + o_b * out_b[..., None]


ONLINE_MISTAKES = {
    "the running sum not rescaled when the max changes: l = l * exp(m_old - m_new) + ...": Online(
        rescale_sum=False
    ),
}
MERGE_MISTAKES = {
    "weighted by the wrong maximum: exp(m - m_a) instead of exp(m_a - m)": Online(
        weight_by="other"
    ),
    "partials added without rescaling to the common maximum": Online(weight_by="none"),
    "the outputs not rescaled (only the sums)": Online(rescale_out=False),
}


def online_l_mistakes(s: Tensor, block: int) -> dict[str, Tensor]:
    """The l of each named mistake of online_softmax."""
    return {k: v[1] for k, v in named_mistakes(online_reference, ONLINE_MISTAKES, s, block).items()}


def merge_mistakes(pa: tuple, pb: tuple, ref: tuple, index: int) -> dict[str, Tensor]:
    """Output ``index`` (m, l or o) of each named mistake of merge that differs from ``ref``'s."""
    wrong = named_mistakes(merge_reference, MERGE_MISTAKES, pa, pb)
    return {key: w[index] for key, w in wrong.items() if rel_error(w[index], ref[index]) > 0}


def partial_reference(s: Tensor, v: Tensor) -> Partial:
    """The partial result (m, ell, o) of scores ``s`` (..., n) over values ``v`` (..., n, d)."""
    s, v = s.to(F64), v.to(F64)
    m = s.amax(-1)
    p = torch.exp(s - m[..., None])
    return m, p.sum(-1), (p.unsqueeze(-2) @ v).squeeze(-2)


# ================================================================= Part 4: the IO argument


def standard_io(N: int, d: int) -> int:
    """Elements read and written by standard attention (the FlashAttention paper's Algorithm 0)."""
    return 4 * N * d + 4 * N * N


def tiled_io(N: int, d: int, block_q: int) -> int:
    """Elements read and written by the tiled forward: Q once, K and V once per query block,
    O and lse written once."""
    return 2 * N * d + 2 * N * d * math.ceil(N / block_q) + N


def block_rows(M: int, d: int) -> int:
    """Rows B of a query block and of a key/value block such that Q_i, O_i, K_j and V_j (4 B d
    elements) fit in fast memory of M elements: B = floor(M / 4d)."""
    return M // (4 * d)


# ================================================================= Parts 3 and 5: attention


def attention_reference(
    Q: Tensor, K: Tensor, V: Tensor, causal: bool = False
) -> tuple[Tensor, Tensor]:
    """(out, lse) of softmax(Q K^T / sqrt(d)) V in float64, query i seeing keys j <= i if causal."""
    Q, K, V = Q.to(F64), K.to(F64), V.to(F64)
    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])  # (B, H, L_q, L_k)
    if causal:
        L_q, L_k = s.shape[-2:]
        s = s.masked_fill(torch.ones(L_q, L_k, dtype=torch.bool).triu(1), -math.inf)
    lse = torch.logsumexp(s, -1)  # (B, H, L_q)
    return torch.exp(s - lse[..., None]) @ V, lse
