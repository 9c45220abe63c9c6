"""Hidden checks of assignment 1, the attention worksheet (shapes, toy forward passes, block matrices).

Conventions of this worksheet: row vectors, ``Q = X W`` with ``W`` of shape
(d_in, d_out), unscaled by nothing but ``1/sqrt(d_k)``.

The checks run in the judge, never in the student's kernel (see
:mod:`attncourse.judge`). Each receives the notebook's namespace as a
:class:`~attncourse.judge.remote.StudentNamespace`: typed answers (``Q``,
``SLOTS``, ``Y_mha``...) come back as plain data, and the student's functions
are called in the kernel on inputs drawn from the run's secret
(:func:`attncourse.judge.checks.rng_for`, :func:`~attncourse.judge.checks.generator`), as
float64 tensors on the kernel's CPU (every function here is a few small matrix
products). Every reference is computed here in float64 on the CPU from the
worksheet's numbers or from those inputs; the notebook's own cells are never
trusted. The margins beside each threshold were measured over 500 secrets with
``tests/margins_attention_worksheet.py``.
"""

import math
from functools import partial

import numpy as np
import torch

from attncourse.judge.checks import (
    GradingError,
    answer,
    as_shape,
    call,
    check_close,
    check_shape,
    closest_mistake,
    describe,
    distinct_dims,
    fail,
    generator,
    rel_error,
    rng_for,
    tensor,
)
from attncourse.judge.remote import Remote

get = answer  # the answer lookup under its old name (kept for modules that import it)


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
    "q1d": ("H", "W^(o)", "Y = H W^(o)"),
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


def _q1_draws(part):
    """Two draws of distinct (B, n, d) that differ in every dimension.

    With independent draws a hard-coded answer such as ``((5, 5),) * 3`` passed when
    both draws had d = 5 (about 1 secret in 121; measured: 1 of 500); two draws that
    differ in each dimension cannot both match a constant.
    """
    rng = rng_for(f"worksheet-{part}")
    first = distinct_dims(rng, ["B", "n", "d"])
    while True:
        second = distinct_dims(rng, ["B", "n", "d"])
        if all(second[k] != first[k] for k in first):
            return first, second


def check_q1_shapes(ns, part):
    """Evaluate a Q1 shape function at two draws of distinct (B, n, d) and compare each shape."""
    fn = get(ns, Q1_FUNCTIONS[part], f"Q1 {part}")
    names = Q1_QUANTITIES[part]
    for dims in _q1_draws(part):
        B, n, d = dims["B"], dims["n"], dims["d"]
        got = call(fn, (B, n, d), f"{Q1_FUNCTIONS[part]}({B}, {n}, {d})")
        if type(got) not in (tuple, list) or len(got) != 3:
            fail(
                f"Q1 {part}: return one shape per quantity {names}",
                "a tuple of three shape tuples",
                describe(got),
            )
        for name, shape, expected in zip(names, got, _q1_expected(part, B, n, d), strict=True):
            what = f"Q1 {part}: shape of {name} for B={B}, n={n}, d={d}"
            got_shape = as_shape(shape, what)
            check_shape(what, got_shape, expected, _q1_cause(got_shape, expected, B, n, d))


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
PATH_ROLE = {
    "q": "the right path enters the first MatMul as it is: it carries the queries",
    "k": "the middle path is transposed before the first MatMul: it carries the keys",
    "v": "the left path meets the softmax weights in the second MatMul: it carries the values",
}
SLOT_GROUPS = {
    "projections": ("G", "A", "D"),
    "activations": ("E", "C", "H", "I"),
    "combination": ("B", "F"),
}
_VOCAB_BY_LOWER = {v.lower(): v for v in VOCABULARY}


def _as_plain_dict(slots):
    """``SLOTS`` as a plain dict: a dict subclass (OrderedDict...) is copied by the kernel's dict.

    A dict whose keys are all strings arrives as data; a dict subclass arrives as a
    handle, and ``dict(SLOTS)`` in the kernel (``dict`` found in the class's MRO)
    turns it into data. Only the data is judged, so a subclass that lies about its
    items can only misstate its own answer.
    """
    if not isinstance(slots, Remote):
        return slots
    try:
        mro = slots.attr("__class__").attr("__mro__")
    except AttributeError:
        return slots
    if type(mro) is not tuple:
        return slots
    base = next(
        (
            c
            for c in mro
            if isinstance(c, Remote) and c.cls == "builtins.type" and c.__name__ == "dict"
        ),
        None,
    )
    if base is None or not slots.is_a(base):
        return slots
    return call(base, (slots,), "Q2: dict(SLOTS)")


def _normalised_slots(slots):
    """The answered slot dict with upper-case letters and canonical vocabulary names.

    ``SLOTS`` arrives as plain data: a dict whose keys are all strings comes back as
    a dict, a dict subclass is copied into one (:func:`_as_plain_dict`); anything
    else (a list of pairs, a dict keyed by other objects) is not a slot dict.
    """
    slots = _as_plain_dict(slots)
    if type(slots) is not dict:
        fail(
            "Q2: SLOTS must be a dict from slot letter to quantity",
            "a dict such as {'A': 'W_k_h', ...}",
            describe(slots),
            "keys that are not all strings: the keys are the slot letters 'A' .. 'I'"
            if isinstance(slots, Remote)
            else None,
        )
    out = {}
    for key, value in slots.items():
        if type(value) is not str:
            fail(
                "Q2: slot letters and quantities are strings",
                "str: str",
                f"{key!r}: {describe(value)}",
            )
        name = _VOCAB_BY_LOWER.get(value.strip().lower())
        if name is None:
            fail(f"Q2: slot {key!r} holds an unknown quantity", f"one of {VOCABULARY}", repr(value))
        out[key.strip().upper()] = name
    return out


def _slot_cause(slot, got):
    expected = SLOT_KEY[slot]
    if got is None:
        return "this slot was left out of SLOTS"
    roles = {"W_q_h": "q", "W_k_h": "k", "W_v_h": "v", "Q_h": "q", "K_h": "k", "V_h": "v"}
    if got in roles and expected in roles and got.startswith("W_") == expected.startswith("W_"):
        return f"query, key and value paths mixed up: {PATH_ROLE[roles[expected]]}"
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

# Integer answers typed by hand are exact; float64 computations are within 1e-15 (measured,
# 500 secrets: Q4(c) at most 2.6e-16, Q3(a) and Q5 exactly 0). The nearest mistakes of the
# case table are at 0.17 (Q5(a) interleaved, Q5(b) a mistyped entry), 0.22 (Q3(a) a typo)
# and 0.69 (Q4(c), over 500 secrets).
EXACT_TOL = 1e-9
# Y computed from the rounded weights is [[4, 0], [2, 1]]; from the exact softmax it is
# [[3.986, 0.007], [2, 1]] (relative distance 3.4e-3); typed to 2 decimals, 3.1e-3.
# The nearest wrong answers of the case table (column order W^(o) H, one mistyped entry)
# are at 0.22 from both references, forgot W^(o) at 0.49 (measured): 1e-2 leaves a 3x
# margin above the exact answer and 22x below the nearest mistake.
APPROX_TOL = 1e-2
# nn.Linear holds float32 by default: over 500 secrets a correct weight copied from float64
# and the layer's output on a float32 input were within 1.6e-7 of W^T and X W (measured);
# every wrong weight or forward of the case table was off by more than 0.19.
FLOAT32_TOL = 1e-5


def _t(rows):
    return torch.tensor(rows, dtype=torch.float64)


def as_matrix(value, what):
    """A typed or computed matrix as a float64 tensor: tensor, ndarray or nested lists of numbers."""
    if type(value) in (list, tuple):
        rows = []
        for row in value:
            if type(row) in (torch.Tensor, np.ndarray) and row.ndim == 1:  # list(array)
                rows.append(tensor(row, what).tolist())
                continue
            if type(row) not in (list, tuple):
                fail(f"{what}: a matrix is a list of rows", "[[a, b], [c, d]]", describe(value))
            items = []
            for item in row:
                if type(item) in (int, float):  # numpy scalars arrive as int and float
                    items.append(float(item))
                else:
                    fail(f"{what}: entries must be numbers", "int or float", describe(item))
            rows.append(items)
        lengths = {len(r) for r in rows}
        if len(lengths) != 1:
            fail(f"{what}: rows of different lengths", "a rectangular matrix", describe(value))
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


def _linear_weight_mistakes(W):
    """Weights of the named wrong layers that have the right shape (d_out, d_in)."""
    d_in, d_out = W.shape
    return {
        "reshaped W to (d_out, d_in) instead of transposing it: reshape keeps the memory "
        "order, W.T swaps the axes": W.reshape(d_out, d_in),
        "used the pseudo-inverse of W: nn.Linear's weight is simply W^T": torch.linalg.pinv(W),
    }


def check_q3_linear_bridge(ns):
    """linear_from_row_weight(W) is a bias-free nn.Linear computing X W for W (d_in, d_out).

    The layer stays in the kernel: its attributes come back as data, and it is
    called there on an input of its own dtype; its output must be X W.
    """
    fn = get(ns, "linear_from_row_weight", "Q3(c)")
    dims = distinct_dims(rng_for("worksheet-q3c"), ["n", "d_in", "d_out"])
    n, d_in, d_out = dims["n"], dims["d_in"], dims["d_out"]
    gen = generator("worksheet-q3c-data")
    W = torch.randn(d_in, d_out, generator=gen, dtype=torch.float64)
    X = torch.randn(n, d_in, generator=gen, dtype=torch.float64)
    layer = call(fn, (W,), f"linear_from_row_weight(W of shape ({d_in}, {d_out}))")
    if not (isinstance(layer, Remote) and layer.is_a("linear")):
        fail(
            "Q3(c): return an nn.Linear",
            "torch.nn.Linear",
            describe(layer),
            "returned the weight tensor (or another object) instead of the layer",
        )
    if getattr(layer, "bias", None) is not None:
        fail("Q3(c): the layer has a bias", "bias=False", "a bias", "Q = X W has no bias term")
    features = (getattr(layer, "in_features", None), getattr(layer, "out_features", None))
    if features != (d_in, d_out):
        fail(
            f"Q3(c): in_features, out_features for W of shape ({d_in}, {d_out})",
            (d_in, d_out),
            features,
            "nn.Linear(in, out): W's rows are the input features",
        )
    stored = getattr(layer, "weight", None)
    if type(stored) is not torch.Tensor:
        tensor(stored, "Q3(c): layer.weight")  # names what it is instead
        fail("Q3(c): layer.weight must be a tensor", "torch.Tensor", describe(stored))
    weight = tensor(stored, "Q3(c): layer.weight")
    if tuple(weight.shape) != (d_out, d_in):
        fail(
            "Q3(c): nn.Linear stores its weight as (out_features, in_features)",
            (d_out, d_in),
            tuple(weight.shape),
            "stored W itself: nn.Linear's weight is W^T",
        )
    err = rel_error(weight, W.T)
    if not err <= FLOAT32_TOL:
        fail(
            "Q3(c): layer.weight against W^T: values differ",
            f"relative error <= {FLOAT32_TOL:.1e}",
            f"relative error {err:.3e}",
            closest_mistake(weight, _linear_weight_mistakes(W), FLOAT32_TOL)
            or "the weight is not W^T: nn.Linear starts from random weights until W^T is "
            "copied into it",
        )
    out = call(
        layer,
        (X.to(stored.dtype),),
        f"layer(X) for X of shape ({n}, {d_in})",
        no_grad=True,
    )
    out = tensor(out, "Q3(c): layer(X)")
    if tuple(out.shape) != (n, d_out):
        fail(
            "Q3(c): layer(X) has the wrong shape",
            (n, d_out),
            tuple(out.shape),
            "the layer's forward was changed: an (n, d_in) input must give (n, d_out)",
        )
    err = rel_error(out, torch.matmul(X, W))
    if not err <= FLOAT32_TOL:
        fail(
            "Q3(c): layer(X) against X W: values differ",
            f"relative error <= {FLOAT32_TOL:.1e}",
            f"relative error {err:.3e}",
            "layer.weight is W^T, yet layer(X) is not X W: the layer's forward was changed",
        )


# ---------------------------------------------------------------- Q4 block matrices, numerically


def _q4_instance(name):
    dims = distinct_dims(rng_for(f"worksheet-q4-{name}"), ["n", "H", "d_h"])
    n, H, d_h = dims["n"], dims["H"], dims["d_h"]
    gen = generator(f"worksheet-q4-{name}-data")
    X = torch.randn(n, H * d_h, generator=gen, dtype=torch.float64)
    W = torch.randn(H * d_h, H * d_h, generator=gen, dtype=torch.float64)
    return n, H, d_h, X, W


def _q4_reference(X, W, d_h):
    """Head h is X W[:, h d_h:(h+1) d_h]: W's contiguous column blocks, one batched product."""
    return torch.matmul(X, torch.stack(W.split(d_h, dim=1)))


def _q4_mistakes(X, W, H, d_h, reference):
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
        "used X W^T": _q4_reference(X, W.T, d_h),
    }


def check_q4_split(ns, which):
    """``which``(X, W, n_heads) returns (n_heads, n, d_h), head h = X W[:, h d_h:(h+1) d_h]."""
    fn = get(ns, which, "Q4(c)")
    n, H, d_h, X, W = _q4_instance(which)
    got = call(fn, (X, W, H), f"{which}(X, W, {H})")
    if type(got) in (tuple, list) and got and all(type(g) is torch.Tensor for g in got):
        fail(
            f"Q4(c): {which}(X, W, n_heads={H}) must return one tensor",
            f"a tensor of shape (n_heads, n, d_h) = ({H}, {n}, {d_h})",
            f"a {type(got).__name__} of {len(got)} tensors",
            "the heads were not stacked: torch.stack(heads) puts the head axis first",
        )
    reference = _q4_reference(X, W, d_h)
    check_close(
        f"Q4(c): {which}(X, W, n_heads={H}) with n={n}, d_h={d_h}",
        got,
        reference,
        EXACT_TOL,
        mistakes=_q4_mistakes(X, W, H, d_h, reference),
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


# grade_id of each test cell -> the check the judge runs for it (tests/test_judge.py: one each)
CHECKS = {
    "q1a_projection_weight_shapes": partial(check_q1_shapes, part="q1a"),
    "q1b_activation_shapes": partial(check_q1_shapes, part="q1b"),
    "q1c_score_shapes": partial(check_q1_shapes, part="q1c"),
    "q1d_output_shapes": partial(check_q1_shapes, part="q1d"),
    "q2_projection_slots": partial(check_q2_slots, group="projections"),
    "q2_activation_slots": partial(check_q2_slots, group="activations"),
    "q2_combination_slots": partial(check_q2_slots, group="combination"),
    "q3a_toy_qkv": check_q3_toy_qkv,
    "q3b_toy_output": check_q3_toy_output,
    "q3c_linear_bridge": check_q3_linear_bridge,
    "q4c_chunk_after_projection": partial(check_q4_split, which="chunk_after_projection"),
    "q4c_project_per_head": partial(check_q4_split, which="project_per_head"),
    "q5a_head_splits": check_q5_head_splits,
    "q5b_concat_output": check_q5_concat_output,
}
