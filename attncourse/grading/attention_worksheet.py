"""Hidden checks of assignment 2, the attention worksheet (shapes, toy forward passes, block matrices).

Conventions of this worksheet: row vectors, ``Q = X W`` with ``W`` of shape
(d_in, d_out), unscaled by nothing but ``1/sqrt(d_k)``. Every reference here is
computed independently in float64 from the worksheet's numbers or from random
instances the check draws itself; the notebook's own cells are never trusted.

Every check starts with :func:`attncourse.checks.restore_pristine` (through
:func:`get`), so a student cell that rebinds torch, numpy or builtins cannot
change what the check computes.
"""

import math

import numpy as np
import torch

from attncourse.checks import (
    GradingError,
    answer,
    as_shape,
    call,
    check_close,
    check_shape,
    distinct_dims,
    fail,
    rng_for,
    tensor,
)

get = answer


# ---------------------------------------------------------------- Q1 shapes

Q1_FUNCTIONS = {
    "q1a": "projection_weight_shapes",
    "q1b": "activation_shapes",
    "q1c": "score_shapes",
    "q1d": "output_shapes",
}
Q1_QUANTITIES = {
    "q1a": ("W^(q)", "W^(k)", "W^(v)"),
    "q1b": ("Q", "K", "V"),
    "q1c": ("Q K^T", "Q K^T / sqrt(d)", "Softmax(Q K^T / sqrt(d))"),
    "q1d": ("Y", "W^(o)", "Y W^(o)"),
}


def _q1_expected(part, B, n, d):
    return {
        "q1a": ((d, d), (d, d), (d, d)),
        "q1b": ((B, n, d), (B, n, d), (B, n, d)),
        "q1c": ((B, n, n), (B, n, n), (B, n, n)),
        "q1d": ((B, n, d), (d, d), (B, n, d)),
    }[part]


def _q1_cause(shape, expected, B, n, d):
    """Name the mistake behind a wrong shape, from the dimensions it mixes up."""
    if len(expected) == 2:  # a weight matrix
        return {
            (n, d): "a projection weight does not depend on the sequence length n",
            (B, d, d): "the weights are shared by the whole batch: no batch axis",
            (B, n, d): "that is an activation: a weight matrix has no batch or sequence axis",
            (d,): "a projection maps d features to d features: a (d, d) matrix",
        }.get(shape)
    causes = {
        (n, d): "the batch axis B is missing: the input is batched",
        (n, n): "the batch axis B is missing: the input is batched",
        (B, d, n): "transposed: rows are positions (n), columns are features (d)",
        (B, d, d): "features against features: Q K^T compares positions with positions",
        (B, n): "a reduced axis: every query keeps one weight per key",
        (B, d): "the sequence axis n is missing",
    }
    if expected == (B, n, n) and shape == (B, n, d):
        return "Q K^T compares every query with every key: (B, n, n), one row per query"
    if expected == (B, n, d) and shape == (B, n, n):
        return "(B, n, n) is the attention weights; this quantity has d features per position"
    return causes.get(shape)


def check_q1_shapes(ns, part):
    """Evaluate a Q1 shape function at two draws of distinct (B, n, d) and compare each shape."""
    fn = get(ns, Q1_FUNCTIONS[part], f"Q1 {part}")
    names = Q1_QUANTITIES[part]
    for draw in range(2):
        dims = distinct_dims(rng_for(f"worksheet-{part}-{draw}"), ["B", "n", "d"])
        B, n, d = dims["B"], dims["n"], dims["d"]
        got = call(fn, (B, n, d), f"{Q1_FUNCTIONS[part]}({B}, {n}, {d})")
        if type(got) not in (tuple, list) or len(got) != 3:
            fail(
                f"Q1 {part}: return one shape per quantity {names}",
                "a tuple of three shape tuples",
                f"{type(got).__name__} {repr(got)[:80]}",
            )
        for name, shape, expected in zip(names, got, _q1_expected(part, B, n, d), strict=True):
            what = f"Q1 {part}: shape of {name} for B={B}, n={n}, d={d}"
            got_shape = as_shape(shape, what)
            check_shape(what, got_shape, expected, _q1_cause(got_shape, expected, B, n, d))


# ---------------------------------------------------------------- Q2 slots of the figure

VOCABULARY = ("X", "W_q_h", "W_k_h", "W_v_h", "Q_h", "K_h", "V_h", "H_h", "concat", "W_o", "Y")
SLOT_KEY = {
    "D": "W_q_h",
    "A": "W_k_h",
    "G": "W_v_h",
    "H": "Q_h",
    "C": "K_h",
    "E": "V_h",
    "I": "H_h",
    "B": "concat",
    "F": "W_o",
}
SLOT_GROUPS = {
    "projections": ("D", "A", "G"),
    "activations": ("H", "C", "E", "I"),
    "combination": ("B", "F"),
}
_VOCAB_BY_LOWER = {str.lower(v): v for v in VOCABULARY}


def _normalised_slots(slots):
    """The answered slot dict with upper-case letters and canonical vocabulary names."""
    if type(slots) is not dict:
        fail(
            "Q2: SLOTS must be a dict from slot letter to quantity",
            "a dict such as {'A': 'W_k_h', ...}",
            type(slots).__name__,
        )
    out = {}
    for key, value in dict.items(slots):
        if type(key) is not str or type(value) is not str:
            fail("Q2: slot letters and quantities are strings", "str: str", f"{key!r}: {value!r}")
        name = _VOCAB_BY_LOWER.get(str.lower(str.strip(value)))
        if name is None:
            fail(f"Q2: slot {key!r} holds an unknown quantity", f"one of {VOCABULARY}", repr(value))
        out[str.upper(str.strip(key))] = name
    return out


def _slot_cause(slot, got):
    expected = SLOT_KEY[slot]
    if got is None:
        return "this slot was left out of SLOTS"
    if got.startswith("W_") and expected.startswith("W_"):
        return "the right kind (a projection weight) but the wrong path: follow the arrow"
    if got.startswith("W_") != expected.startswith("W_"):
        return "a weight matrix and the activation it produces are swapped"
    return "follow the arrows: what enters and what leaves this slot?"


def check_q2_slots(ns, group):
    """Each slot of ``group`` holds the quantity that belongs there in the figure."""
    answered = _normalised_slots(get(ns, "SLOTS", "Q2"))
    wrong = []
    for slot in SLOT_GROUPS[group]:
        got = answered.get(slot)
        if got != SLOT_KEY[slot]:
            wrong.append(f"slot {slot}: {got} ({_slot_cause(slot, got)})")
    if wrong:
        fail(f"Q2 ({group}): wrong quantities in " + "; ".join(wrong))


# ---------------------------------------------------------------- Q3 toy single-head forward pass

TOY_X = ((1.0, 1.0), (0.0, 1.0))
TOY_WQ = ((3.0, -1.0), (1.0, 1.0))
TOY_WK = ((2.0, -2.0), (1.0, 3.0))
TOY_WV = ((2.0, -2.0), (0.0, 2.0))
TOY_WO = ((2.0, 0.0), (0.0, 1.0))
TOY_WEIGHTS = ((1.0, 0.0), (0.5, 0.5))  # the worksheet's rounded softmax

# Integer answers typed by hand are exact; float64 computations are within 1e-15.
EXACT_TOL = 1e-9
# Y computed from the rounded weights is [[4, 0], [2, 1]]; from the exact softmax it is
# [[3.986, 0.007], [2, 1]] (relative distance 3.4e-3); typed to 2 decimals, 3.1e-3.
# The nearest wrong answer (forgot W^(o)) is at 0.45: 1e-2 leaves a 3x margin above the
# exact answer and 45x below the nearest mistake.
APPROX_TOL = 1e-2
# nn.Linear holds float32 by default: a correct weight copied from float64 is off by ~3e-8
# (measured); every named mistake of Q3(c) is off by more than 0.1.
FLOAT32_TOL = 1e-5


def _t(rows):
    return torch.tensor(rows, dtype=torch.float64)


def as_matrix(value, what):
    """A typed or computed matrix as a float64 tensor: tensor, ndarray or nested lists of numbers."""
    if type(value) in (list, tuple):
        rows = []
        for row in value:
            if type(row) not in (list, tuple):
                fail(f"{what}: a matrix is a list of rows", "[[a, b], [c, d]]", repr(value)[:80])
            items = []
            for item in row:
                if type(item) in (int, float) or isinstance(item, (np.integer, np.floating)):
                    items.append(float(item))
                else:
                    fail(f"{what}: entries must be numbers", "int or float", repr(item)[:40])
            rows.append(items)
        lengths = {len(r) for r in rows}
        if len(lengths) != 1:
            fail(f"{what}: rows of different lengths", "a rectangular matrix", repr(value)[:80])
        return _t(rows)
    return tensor(value, what)


def _toy_reference():
    X, Wq, Wk, Wv, Wo = map(_t, (TOY_X, TOY_WQ, TOY_WK, TOY_WV, TOY_WO))
    return X, Wq, Wk, Wv, Wo


def _projection_mistakes(X, W):
    return {
        "column-vector convention W X: here activations are X W (rows are tokens)": torch.matmul(
            W, X
        ),
        "X W^T: the worksheet's W maps features by right multiplication, X W": torch.matmul(X, W.T),
        "X^T W: X is already (n, d), rows are tokens": torch.matmul(X.T, W),
        "element-wise product X * W instead of the matrix product X @ W": X * W,
    }


def check_q3_toy_qkv(ns):
    """Q, K, V of the toy example, typed or computed, equal X W^(q), X W^(k), X W^(v)."""
    X, Wq, Wk, Wv, _ = _toy_reference()
    for name, W in (("Q", Wq), ("K", Wk), ("V", Wv)):
        check_close(
            f"Q3(a): {name}",
            as_matrix(get(ns, name, "Q3(a)"), f"Q3(a): {name}"),
            torch.matmul(X, W),
            EXACT_TOL,
            mistakes=_projection_mistakes(X, W),
        )


def check_q3_toy_output(ns):
    """Y of the toy example from the given (rounded) weights, or from the exact softmax."""
    X, Wq, Wk, Wv, Wo = _toy_reference()
    A = _t(TOY_WEIGHTS)
    V = torch.matmul(X, Wv)
    H = torch.matmul(A, V)
    exact = torch.softmax(
        torch.matmul(torch.matmul(X, Wq), torch.matmul(X, Wk).T) / math.sqrt(2.0), dim=-1
    )
    mistakes = {
        "forgot the output projection: that is H, not Y = H W^(o)": H,
        "weights applied transposed: A^T V instead of A V": torch.matmul(torch.matmul(A.T, V), Wo),
        "column-vector order W^(o) H instead of H W^(o)": torch.matmul(Wo, H),
        "used X instead of V = X W^(v)": torch.matmul(torch.matmul(A, X), Wo),
        "softmax over the wrong axis (columns)": torch.matmul(
            torch.matmul(
                torch.softmax(
                    torch.matmul(torch.matmul(X, Wq), torch.matmul(X, Wk).T) / math.sqrt(2.0), 0
                ),
                V,
            ),
            Wo,
        ),
    }
    got = as_matrix(get(ns, "Y", "Q3(b)"), "Q3(b): Y")
    try:
        check_close("Q3(b): Y", got, torch.matmul(H, Wo), APPROX_TOL, mistakes=mistakes)
    except GradingError:
        check_close(
            "Q3(b): Y", got, torch.matmul(torch.matmul(exact, V), Wo), APPROX_TOL, mistakes=mistakes
        )


def check_q3_linear_bridge(ns):
    """linear_from_row_weight(W) is a bias-free nn.Linear computing X W for W (d_in, d_out)."""
    fn = get(ns, "linear_from_row_weight", "Q3(c)")
    dims = distinct_dims(rng_for("worksheet-q3c"), ["n", "d_in", "d_out"])
    n, d_in, d_out = dims["n"], dims["d_in"], dims["d_out"]
    gen = torch.Generator().manual_seed(3)
    W = torch.randn(d_in, d_out, generator=gen, dtype=torch.float64)
    X = torch.randn(n, d_in, generator=gen, dtype=torch.float64)
    layer = call(fn, (W.clone(),), f"linear_from_row_weight(W of shape ({d_in}, {d_out}))")
    if type(layer) is not torch.nn.Linear:
        fail(
            "Q3(c): return an nn.Linear",
            "torch.nn.Linear",
            type(layer).__name__,
            "returned the weight tensor (or a subclass) instead of the layer",
        )
    if layer.bias is not None:
        fail("Q3(c): the layer has a bias", "bias=False", "a bias", "Q = X W has no bias term")
    if (layer.in_features, layer.out_features) != (d_in, d_out):
        fail(
            f"Q3(c): in_features, out_features for W of shape ({d_in}, {d_out})",
            (d_in, d_out),
            (layer.in_features, layer.out_features),
            "nn.Linear(in, out): W's rows are the input features",
        )
    weight = tensor(layer.weight, "Q3(c): layer.weight")
    if tuple(weight.shape) != (d_out, d_in):
        fail(
            "Q3(c): nn.Linear stores its weight as (out_features, in_features)",
            (d_out, d_in),
            tuple(weight.shape),
            "stored W itself: nn.Linear's weight is W^T",
        )
    check_close(
        "Q3(c): layer(X) against X W",
        torch.nn.functional.linear(X, weight.to(torch.float64)),
        torch.matmul(X, W),
        FLOAT32_TOL,
    )


# ---------------------------------------------------------------- Q4 block matrices, numerically


def _q4_instance(name):
    dims = distinct_dims(rng_for(f"worksheet-q4-{name}"), ["n", "H", "d_h"])
    n, H, d_h = dims["n"], dims["H"], dims["d_h"]
    gen = torch.Generator().manual_seed(4)
    X = torch.randn(n, H * d_h, generator=gen, dtype=torch.float64)
    W = torch.randn(H * d_h, H * d_h, generator=gen, dtype=torch.float64)
    return n, H, d_h, X, W


def _q4_reference(X, W, H, d_h):
    return torch.stack([torch.matmul(X, W[:, h * d_h : (h + 1) * d_h]) for h in range(H)])


def _q4_mistakes(X, W, H, d_h):
    n = X.shape[0]
    Q = torch.matmul(X, W)
    return {
        "reshaped (n, d) straight to (H, n, d_h): rows get mixed across heads": Q.reshape(
            H, n, d_h
        ),
        "interleaved split: head h took every H-th column, not a contiguous block": Q.reshape(
            n, d_h, H
        ).permute(2, 0, 1),
        "heads in reverse order": _q4_reference(X, W, H, d_h).flip(0),
        "used X W^T": _q4_reference(X, W.T, H, d_h),
    }


def check_q4_split(ns, which):
    """``which``(X, W, n_heads) returns (n_heads, n, d_h), head h = X W[:, h d_h:(h+1) d_h]."""
    fn = get(ns, which, "Q4(c)")
    n, H, d_h, X, W = _q4_instance(which)
    got = call(fn, (X.clone(), W.clone(), H), f"{which}(X, W, {H})")
    check_close(
        f"Q4(c): {which}(X, W, n_heads={H}) with n={n}, d_h={d_h}",
        got,
        _q4_reference(X, W, H, d_h),
        EXACT_TOL,
        mistakes=_q4_mistakes(X, W, H, d_h),
        shape_cause="expected (n_heads, n, d_h): move the head axis first",
    )


# ---------------------------------------------------------------- Q5 toy two-head forward pass

MH_Q = ((1.0, 2.0, 3.0, 4.0), (5.0, 6.0, 7.0, 8.0))
MH_K = ((2.0, 0.0, 1.0, 1.0), (1.0, 3.0, 0.0, 2.0))
MH_V = ((1.0, 0.0, 2.0, 1.0), (3.0, 1.0, 0.0, 2.0))
MH_H0 = ((1.0, 0.0), (0.0, 1.0))
MH_H1 = ((2.0, 1.0), (1.0, 2.0))
MH_WO = (
    (1.0, 0.0, 1.0, 0.0),
    (0.0, 1.0, 0.0, 1.0),
    (1.0, 0.0, 0.0, 1.0),
    (0.0, 1.0, 1.0, 0.0),
)


def check_q5_head_splits(ns):
    """The per-head blocks Q_0 .. V_1 are the first and last two columns of Q, K, V."""
    answers = {m: tuple(get(ns, f"{m}_{h}", "Q5(a)") for h in (0, 1)) for m in "QKV"}
    for name, full in (("Q", MH_Q), ("K", MH_K), ("V", MH_V)):
        M = _t(full)
        for h in range(2):
            other = M[:, 2 * (1 - h) : 2 * (2 - h)]
            mistakes = {
                f"heads swapped: {name}_{h} is the other head's block": other,
                "interleaved columns (every other column) instead of a contiguous block": M[
                    :, h::2
                ],
                "split along the rows (positions) instead of the feature columns": M.reshape(
                    2, 2, 2
                )[h].T,
                "transposed block": M[:, 2 * h : 2 * h + 2].T,
            }
            what = f"Q5(a): {name}_{h}"
            check_close(
                what,
                as_matrix(answers[name][h], what),
                M[:, 2 * h : 2 * h + 2],
                EXACT_TOL,
                mistakes=mistakes,
                shape_cause="each head's block is (n, d_h) = (2, 2)",
            )


def check_q5_concat_output(ns):
    """H_concat = [H_0 | H_1] along the features, Y_mha = H W^(o)."""
    H_concat, Y_mha = get(ns, "H_concat", "Q5(b)"), get(ns, "Y_mha", "Q5(b)")
    H0, H1, Wo = _t(MH_H0), _t(MH_H1), _t(MH_WO)
    H = torch.cat([H0, H1], dim=1)
    check_close(
        "Q5(b): H = Concat[H_0, H_1]",
        as_matrix(H_concat, "Q5(b): H_concat"),
        H,
        EXACT_TOL,
        mistakes={
            "concatenated in the order [H_1 | H_0]": torch.cat([H1, H0], dim=1),
            "interleaved the heads' columns": torch.stack([H0, H1], dim=2).reshape(2, 4),
        },
        shape_cause="concatenate along the feature axis: (n, n_heads d_h) = (2, 4)",
    )
    check_close(
        "Q5(b): Y = H W^(o)",
        as_matrix(Y_mha, "Q5(b): Y_mha"),
        torch.matmul(H, Wo),
        EXACT_TOL,
        mistakes={
            "each head projected by its own diagonal block of W^(o)": torch.cat(
                [torch.matmul(H0, Wo[:2, :2]), torch.matmul(H1, Wo[2:, 2:])], dim=1
            ),
            "heads concatenated in the wrong order before W^(o)": torch.matmul(
                torch.cat([H1, H0], dim=1), Wo
            ),
            "forgot the output projection": H,
        },
        shape_cause="Y = H W^(o) has shape (2, 4)",
    )
