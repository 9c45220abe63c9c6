"""The worksheet's numbers, its answer keys and float64 references, with the named mistakes.

Conventions of this worksheet: row vectors, ``Q = X W`` with ``W`` of shape (d_in, d_out),
unscaled by nothing but ``1/sqrt(d_k)``. Every reference is computed here in float64 on the
CPU from the student's own instance (``instance_of``) or from inputs drawn from the run's
secret; the notebook's own cells are never trusted. Named mistakes are dicts from the mistake's description to the
wrong output it gives.
"""

import functools
import hashlib

import numpy as np
import torch
from torch import Tensor

from attncourse.judge.checks import distinct_dims, generator, rng_for


def matrix64(rows: list[list[float]] | np.ndarray) -> Tensor:
    """Nested rows of numbers as a float64 tensor."""
    return torch.tensor(rows, dtype=torch.float64)


# ---------------------------------------------------------------- each student's own numbers
# ``worksheet_instance`` is also the body of the notebook's provided cell ``student_instance``
# (the student runs it on their id; ``tests/grading/test_instances.py`` keeps the two the same). The
# judge draws the instance of the id nbgrader grades the submission under (``ns.student``),
# never of an id the notebook names.
#
# Equal difficulty: every instance has the same shapes, integers from the same ranges and the
# same structure: in Q3 X is invertible and not symmetric, no weight is symmetric or commutes
# with X, and X^T W, X * W differ from X W (so every named mistake gives another matrix);
# one row of the attention weights is a tie (0.5, 0.5) and the other decided by a score gap of at least 8 (weights 1.00, 0.00 within
# 3.5e-3, so ``A_approx`` is the rounded softmax and Y from it is within 3e-3 of the exact Y);
# in Q5 the eight entries of each of Q, K, V are distinct and W^(o) holds two ones in every row
# and column, with H_0 != H_1. Drawn by rejection from a generator seeded with the SHA-256 of
# (assignment, id).


def worksheet_instance(student):
    """The numbers of Q3 and Q5 for ``student``: the same on every call, different between ids."""
    seed = hashlib.sha256(f"attention_worksheet:{student}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(seed[:8], "little"))
    while True:  # Q3: every named mistake of the checks gives another matrix
        X = rng.integers(-2, 3, (2, 2))
        W_q, W_k, W_v, W_o = rng.integers(-3, 4, (4, 2, 2))
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        gaps = (Q @ K.T) @ np.array([1, -1])  # row i: score of key 0 minus score of key 1
        weights = np.exp(Q @ K.T / np.sqrt(2))
        columns = weights  # exp of the scores; normalised over the wrong axis below
        weights = weights / weights.sum(axis=1, keepdims=True)
        A_approx = np.round(weights, 1)
        Y = A_approx @ V @ W_o
        plain = (
            round(np.linalg.det(X)) != 0
            and (X != X.T).any()
            and all(
                (W != W.T).any()
                and (W @ X != X @ W).any()
                and (X * W != X @ W).any()
                and (X.T @ W != X @ W).any()
                for W in (W_q, W_k, W_v)
            )
            and sorted(abs(gaps)) == [0, max(abs(gaps))]
            and max(abs(gaps)) >= 8
            and (np.diag(W_o) != 0).all()
            and (Y != 0).all()
            and np.abs(weights @ V @ W_o - Y).max() <= 3e-3 * np.abs(Y).max()
            and all(  # each named mistake of (b) is 1 or more off, in some entry, both ways
                min(np.abs(M - Y).max(), np.abs(M - weights @ V @ W_o).max()) >= 1
                for M in (
                    A_approx @ V,
                    A_approx.T @ V @ W_o,
                    W_o @ A_approx @ V,
                    A_approx @ X @ W_o,
                    columns / columns.sum(axis=0) @ V @ W_o,
                )
            )
        )
        if plain:
            break
    while True:  # Q5: entries of Q, K, V distinct; W^(o) a permuted ring of two ones a row
        Q_mha, K_mha, V_mha = (rng.choice(10, 8, replace=False).reshape(2, 4) for _ in range(3))
        H_0, H_1 = rng.integers(0, 4, (2, 2, 2))
        ring = np.eye(4, dtype=int) + np.roll(np.eye(4, dtype=int), 1, axis=1)
        W_o_mha = ring[rng.permutation(4)][:, rng.permutation(4)]
        H = np.concatenate([H_0, H_1], axis=1)
        plain = (
            (H_0 != H_1).any()
            and (
                np.concatenate([H_0 @ W_o_mha[:2, :2], H_1 @ W_o_mha[2:, 2:]], 1) != H @ W_o_mha
            ).any()
            and (np.concatenate([H_1, H_0], axis=1) @ W_o_mha != H @ W_o_mha).any()
        )
        if plain:
            break
    return {
        "X": X,
        "W_q": W_q,
        "W_k": W_k,
        "W_v": W_v,
        "W_o": W_o,
        "A_approx": A_approx,
        "Q_mha": Q_mha,
        "K_mha": K_mha,
        "V_mha": V_mha,
        "H_0": H_0,
        "H_1": H_1,
        "W_o_mha": W_o_mha,
    }


@functools.lru_cache(maxsize=4096)
def _drawn(student: str) -> dict[str, np.ndarray]:
    """``worksheet_instance(student)``, drawn once per process (9 ms an id, rosters searched)."""
    return worksheet_instance(student)


def instance_of(student: str) -> dict[str, np.ndarray]:
    """``worksheet_instance(student)`` as float64 numpy arrays (fresh copies)."""
    return {k: np.asarray(v, dtype=np.float64) for k, v in _drawn(student).items()}


def instance_json(student: str) -> dict[str, object]:
    """The instance of ``student`` and its expected answers, as plain lists (for JSON)."""
    data = instance_of(student)
    Q, K, V = data["X"] @ data["W_q"], data["X"] @ data["W_k"], data["X"] @ data["W_v"]
    H = np.concatenate([data["H_0"], data["H_1"]], axis=1)
    answers = {
        "Q": Q,
        "K": K,
        "V": V,
        "Y": data["A_approx"] @ V @ data["W_o"],
        **{f"{m}_{h}": data[f"{m}_mha"][:, 2 * h : 2 * h + 2] for m in "QKV" for h in (0, 1)},
        "H_concat": H,
        "Y_mha": H @ data["W_o_mha"],
    }
    return {
        "assignment": "attention_worksheet",
        "student": student,
        "instance": {k: v.tolist() for k, v in data.items()},
        "answers": {k: v.tolist() for k, v in answers.items()},
    }


# ---------------------------------------------------------------- Q1 shapes


def q1_expected(part: str, B: int, n: int, d: int) -> tuple[tuple[int, ...], ...]:
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


def toy_reference(student: str) -> tuple[Tensor, ...]:
    """X, W^(q), W^(k), W^(v), W^(o) and the rounded weights A_approx of ``student``'s Q3."""
    data = instance_of(student)
    return tuple(matrix64(data[k]) for k in ("X", "W_q", "W_k", "W_v", "W_o", "A_approx"))


def projection_mistakes(X: Tensor, W: Tensor) -> dict[str, Tensor]:
    """Named wrong projections of X by W."""
    return {
        "column-vector convention W X: here activations are X W (rows are tokens)": torch.matmul(
            W, X
        ),
        "X W^T: the worksheet's W maps features by right multiplication, X W": torch.matmul(X, W.T),
        "X^T W: X is already (n, d), rows are tokens": torch.matmul(X.T, W),
        "element-wise product X * W instead of the matrix product X @ W": X * W,
    }


def linear_weight_mistakes(W: Tensor) -> dict[str, Tensor]:
    """Weights of the named wrong layers that have the right shape (d_out, d_in)."""
    d_in, d_out = W.shape
    return {
        "reshaped W to (d_out, d_in) instead of transposing it: reshape keeps the memory "
        "order, W.T swaps the axes": W.reshape(d_out, d_in),
        "used the pseudo-inverse of W: nn.Linear's weight is simply W^T": torch.linalg.pinv(W),
    }


# ---------------------------------------------------------------- Q4 block matrices, numerically


def q4_instance(name: str) -> tuple[int, int, int, Tensor, Tensor]:
    """n, H, d_h, X (n, H d_h), W (H d_h, H d_h) of one secret Q4 instance."""
    dims = distinct_dims(rng_for(f"worksheet-q4-{name}"), ["n", "H", "d_h"])
    n, H, d_h = dims["n"], dims["H"], dims["d_h"]
    gen = generator(f"worksheet-q4-{name}-data")
    X = torch.randn(n, H * d_h, generator=gen, dtype=torch.float64)
    W = torch.randn(H * d_h, H * d_h, generator=gen, dtype=torch.float64)
    return n, H, d_h, X, W


def q4_reference(X: Tensor, W: Tensor, d_h: int) -> Tensor:
    """Head h is X W[:, h d_h:(h+1) d_h]: W's contiguous column blocks, one batched product."""
    return torch.matmul(X, torch.stack(W.split(d_h, dim=1)))


def q4_mistakes(X: Tensor, W: Tensor, H: int, d_h: int, reference: Tensor) -> dict[str, Tensor]:
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


def two_head_reference(student: str) -> tuple[Tensor, ...]:
    """Q, K, V (2, 4), H_0, H_1 (2, 2) and W^(o) (4, 4) of ``student``'s Q5."""
    data = instance_of(student)
    names = ("Q_mha", "K_mha", "V_mha", "H_0", "H_1", "W_o_mha")
    return tuple(matrix64(data[k]) for k in names)
