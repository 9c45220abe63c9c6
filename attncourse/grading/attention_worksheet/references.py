"""The worksheet's numbers, its answer keys and float64 references, with the named mistakes.

Conventions of this worksheet: row vectors, ``Q = X W`` with ``W`` of shape (d_in, d_out),
unscaled by nothing but ``1/sqrt(d_k)``. Every reference is computed here in float64 on the
CPU from the student's own instance (:mod:`.instance`) or from inputs drawn from the run's secret; the notebook's
own cells are never trusted. Named mistakes are dicts from the mistake's description to the
wrong output it gives.
"""

import torch

from attncourse.judge.checks import distinct_dims, generator, rng_for

from .instance import instance_of


def matrix64(rows):
    """Nested rows of numbers as a float64 tensor."""
    return torch.tensor(rows, dtype=torch.float64)


# ---------------------------------------------------------------- Q1 shapes


def q1_expected(part, B, n, d):
    """The shapes of the quantities of Q1 ``part`` for dimensions B, n, d."""
    return {
        "q1a": ((d, d), (d, d), (d, d)),
        "q1b": ((B, n, d), (B, n, d), (B, n, d)),
        "q1c": ((B, n, n), (B, n, n), (B, n, n)),
        "q1d": ((B, n, d), (d, d), (B, n, d)),
    }[part]


# ---------------------------------------------------------------- Q2 slots of the figure

VOCABULARY = ("X", "W_q_h", "W_k_h", "W_v_h", "Q_h", "K_h", "V_h", "H_h", "concat", "W_o", "Y")
# The figure draws the per-head attention out (transpose, MatMul, scale, softmax, MatMul), so the
# roles of its three paths follow from the computation, not from their order: the middle path is
# transposed before the first MatMul (keys), the right one enters it as it is (queries), the left
# one meets the softmax weights in the second MatMul (values). Left to right they read V, K, Q,
# the order of the multi-head figure of Vaswani et al. (2017).
SLOT_KEY = {
    "D": "W_v_h",
    "A": "W_k_h",
    "G": "W_q_h",
    "H": "V_h",
    "C": "K_h",
    "E": "Q_h",
    "I": "H_h",
    "B": "concat",
    "F": "W_o",
}
SLOT_GROUPS = {
    "projections": ("G", "A", "D"),
    "activations": ("E", "C", "H", "I"),
    "combination": ("B", "F"),
}


# ---------------------------------------------------------------- Q3 toy single-head forward pass


def toy_reference(student):
    """X, W^(q), W^(k), W^(v), W^(o) and the rounded weights A_approx of ``student``'s Q3."""
    data = instance_of(student)
    return tuple(matrix64(data[k]) for k in ("X", "W_q", "W_k", "W_v", "W_o", "A_approx"))


def projection_mistakes(X, W):
    """Named wrong projections of X by W."""
    return {
        "column-vector convention W X: here activations are X W (rows are tokens)": torch.matmul(
            W, X
        ),
        "X W^T: the worksheet's W maps features by right multiplication, X W": torch.matmul(X, W.T),
        "X^T W: X is already (n, d), rows are tokens": torch.matmul(X.T, W),
        "element-wise product X * W instead of the matrix product X @ W": X * W,
    }


def linear_weight_mistakes(W):
    """Weights of the named wrong layers that have the right shape (d_out, d_in)."""
    d_in, d_out = W.shape
    return {
        "reshaped W to (d_out, d_in) instead of transposing it: reshape keeps the memory "
        "order, W.T swaps the axes": W.reshape(d_out, d_in),
        "used the pseudo-inverse of W: nn.Linear's weight is simply W^T": torch.linalg.pinv(W),
    }


# ---------------------------------------------------------------- Q4 block matrices, numerically


def q4_instance(name):
    """n, H, d_h, X (n, H d_h), W (H d_h, H d_h) of one secret Q4 instance."""
    dims = distinct_dims(rng_for(f"worksheet-q4-{name}"), ["n", "H", "d_h"])
    n, H, d_h = dims["n"], dims["H"], dims["d_h"]
    gen = generator(f"worksheet-q4-{name}-data")
    X = torch.randn(n, H * d_h, generator=gen, dtype=torch.float64)
    W = torch.randn(H * d_h, H * d_h, generator=gen, dtype=torch.float64)
    return n, H, d_h, X, W


def q4_reference(X, W, d_h):
    """Head h is X W[:, h d_h:(h+1) d_h]: W's contiguous column blocks, one batched product."""
    return torch.matmul(X, torch.stack(W.split(d_h, dim=1)))


def q4_mistakes(X, W, H, d_h, reference):
    """Named wrong head splits of X W."""
    n = X.shape[0]
    Q = torch.matmul(X, W)
    return {
        "reshaped (n, d) straight to (H, n, d_h): rows get mixed across heads": Q.reshape(
            H, n, d_h
        ),
        "interleaved split: head h took every H-th column, not a contiguous block": Q.reshape(
            n, d_h, H
        ).permute(2, 0, 1),
        "heads in reverse order": reference.flip(0),
        "used X W^T": q4_reference(X, W.T, d_h),
    }


# ---------------------------------------------------------------- Q5 toy two-head forward pass


def two_head_reference(student):
    """Q, K, V (2, 4), H_0, H_1 (2, 2) and W^(o) (4, 4) of ``student``'s Q5."""
    data = instance_of(student)
    names = ("Q_mha", "K_mha", "V_mha", "H_0", "H_1", "W_o_mha")
    return tuple(matrix64(data[k]) for k in names)
