"""Float64 references of Part 13 of ``attention_variants``: the reduced matrices of Part 12.

``reference_reduced`` computes them per head, as the task asks or as a named mistake
(``variant``, a frozen dataclass that is the task's at its defaults); the mistakes are split
by the equation of Part 12 they show in, and ``score_maps``/``value_maps`` turn any four
reduced matrices into the per-head maps those equations compare.
"""

import math
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class Reduced:
    """The reduced matrices as Part 12 derives them, or a named wrong one (defaults: the task's)."""

    scale: str = "sqrt(r/d)"  # the factor of W_Q_MLA_hat: "none", "sqrt(d/r)"
    uk_heads: str = "blocks"  # "interleaved": head h takes every H-th row of W_UK
    wo_heads: str = "columns"  # "rows": head h takes a block of rows of W_O, transposed
    o_blocks: str = "side by side"  # "stacked": W_O_hat's blocks stacked, then reshaped


TASK_REDUCED = Reduced()


def reference_reduced(
    W_DKV: Tensor,
    W_UK: Tensor,
    W_UV: Tensor,
    W_Q: Tensor,
    W_O: Tensor,
    H: int,
    variant: Reduced = TASK_REDUCED,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Per-head float64 reduced matrices (Part 12), as ``variant`` computes them."""
    r, D = W_DKV.shape
    d = D // H
    scales = {"sqrt(r/d)": math.sqrt(r / d), "none": 1.0, "sqrt(d/r)": math.sqrt(d / r)}
    scale = scales[variant.scale]
    q_blocks, o_blocks = [], []
    for h in range(H):
        rows = slice(h * d, (h + 1) * d)
        uk = W_UK[h::H] if variant.uk_heads == "interleaved" else W_UK[rows]  # (d, r)
        wo = W_O[h * d : (h + 1) * d, :].T if variant.wo_heads == "rows" else W_O[:, rows]  # (D, d)
        q_blocks.append(scale * uk.T @ W_Q[rows])  # (r, D)
        o_blocks.append(wo @ W_UV[rows])  # (D, r)
    W_Q_hat = torch.cat(q_blocks, 0)  # (H*r, D)
    if variant.o_blocks == "stacked":
        W_O_hat = torch.cat(o_blocks, 0).reshape(D, H * r)  # blocks stacked, then reshaped
    else:
        W_O_hat = torch.cat(o_blocks, 1)  # (D, H*r)
    return W_DKV, W_DKV, W_Q_hat, W_O_hat


# mistakes that show in equation (1), the reduced logits
SCORE_MISTAKES = {
    "missing the sqrt(r/d) factor in W_Q_MLA_hat": Reduced(scale="none"),
    "sqrt(d/r) instead of sqrt(r/d) in W_Q_MLA_hat": Reduced(scale="sqrt(d/r)"),
    "wrong head split of W_UK: head h owns rows h*d..(h+1)*d-1": Reduced(uk_heads="interleaved"),
}
# mistakes that show in equation (2), the value-to-output maps
VALUE_MISTAKES = {
    "wrong head split of W_O: head h owns columns h*d..(h+1)*d-1": Reduced(wo_heads="rows"),
    "per-head blocks W_O_h W_UV_h stacked along rows and reshaped; "
    "place them side by side (concatenate along axis 1)": Reduced(o_blocks="stacked"),
}


def score_maps(W_K_hat: Tensor, W_Q_hat: Tensor, H: int) -> Tensor:
    """Per head, the D x D bilinear form of the reduced logits: W_Q_hat_h^T W_K_hat / sqrt(r)."""
    r = W_K_hat.shape[0]
    return torch.stack([W_Q_hat[h * r : (h + 1) * r].T @ W_K_hat / math.sqrt(r) for h in range(H)])


def value_maps(W_V_hat: Tensor, W_O_hat: Tensor, H: int) -> Tensor:
    """Per head, the D x D map y -> W_O_hat_h W_V_hat y that carries values into the output."""
    r = W_V_hat.shape[0]
    return torch.stack([W_O_hat[:, h * r : (h + 1) * r] @ W_V_hat for h in range(H)])
