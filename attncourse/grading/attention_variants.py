"""Hidden tests of the ``attention_variants`` assignment (MHA, GQA, MLA), run by the judge.

Each ``check_*`` function takes the student's notebook as a
:class:`~attncourse.judge.remote.StudentNamespace` and runs in the grader's own
process, never in the student's kernel: it picks its own dimensions and inputs
from the run's secret (:func:`checks.rng_for`, :func:`checks.generator`), sets
every weight itself, calls the student's code in the kernel and compares what
comes back, as plain data, with an independent float64 reference computed here
on the CPU (per-head loops). Wrong answers fail with a message that names the
mistake whenever the answer reproduces one of the known wrong references
computed beside the right one. Source rules (no loops, no torch, one statement
per output) are judged from the cells the student wrote, by name.

Thresholds, with the margins measured by ``tests/margins_attention_variants.py``
and quoted beside each constant, hold on the CPU and on CUDA (TF32 off).
"""

import math
import re

import numpy as np
import torch

from attncourse.judge import checks, rules
from attncourse.judge.checks import (
    GradingError,
    call,
    check_close,
    describe,
    fail,
    layer_weight,
    load_linear,
    randn,
    rel_error,
    rng_for,
    shape_mistake,
    submodule,
    tensor,
    to_grading,
)
from attncourse.judge.remote import Remote

F64 = torch.float64

# Relative error allowed on values computed in float64 from well-conditioned data
# (weights ~ randn/sqrt(fan_in), so logits are O(1) and no softmax saturates).
# Measured by tests/margins_attention_variants.py --secrets 3 over the mutation table, twice
# (the dimensions come from each run's secret, so the size of a bug varies with them; the
# worst of both runs):
#   Part 2 projections: correct <= 2.0e-16, smallest bug 0.33 (a ReLU);
#   Part 3: correct <= 2.8e-8 (a float32 sqrt constant), smallest bug 0.13 (sqrt(L_2));
#   Part 5: correct <= 8.2e-8 (softmax in float32), smallest bug 4.3e-2 (scale by sqrt(D_v));
#   Part 7: correct <= 4.9e-16, smallest bug 0.16 (scale by sqrt(D_v));
#   Part 8: correct <= 5.2e-16, smallest bug 4.0e-2 (scale by sqrt(D_v), D_v near D_qk).
# 3e-5 is >= 365x above every correct answer and >= 1300x below every bug.
VALUES_TOL = 3e-5

# Part 10 reconstruction, numpy. Measured: SVD, QR, eigh, pinv and the identity
# factorisation (W, tile(I)) <= 3.4e-15 relative error in float64, also on a
# rank-deficient input, and <= 4.4e-8 when the factors are returned in float32; the
# smallest bug (singular values dropped) 0.83, np.repeat instead of tiling >= 1.
# 1e-5 is >= 225x above the worst correct answer and >= 8e4x below the smallest bug.
RECONSTRUCTION_TOL = 1e-5

# Part 13 experiment (check_experiment). The student runs it in float32 on their
# grading device with the course's data (seeded, weights ~ randn/sqrt(fan_in): logits of
# std 1.0, attention weights <= 0.39, so a missing sqrt(r/d) moves relative_error to 0.21;
# with the original problem's unscaled randn data the logits have std ~7e3, every softmax
# is one-hot and the same mistake moves it by 2e-3 only). Nothing here compares two
# float32 computations with each other, and nothing depends on the batch shape or on
# which matmul kernel the device picked (issue 16):
# * relative_error must be what the judge computes, in float64, from the student's
#   own output_vanilla and output_reduced (RELATIVE_ERROR_TOL);
# * the models' weights, read as data, are compared in float64 with what the student's
#   matrices give (EXPERIMENT_WEIGHT_TOL): model_MHA_vanilla's directly, the reduced
#   model's through equations (1) and (2) of Part 12, head by head, through
#   EXPERIMENT_PROBES random probes a side;
# * the MyMHA class itself is checked in float64 in the two shapes the experiment
#   builds (D_qk = D_v = d with H*d = D, and D_qk = D_v = r), as in Part 5 (VALUES_TOL;
#   measured: correct <= 8.5e-16, smallest bug >= 0.36, D_qk instead of sqrt(D_qk));
# * the outputs' rows of EXPERIMENT_BATCHES secret batch elements are compared with the
#   vanilla MLA recomputed here in float64 from the student's data (ROWS_TOL, with a
#   per-row allowance for what float32 rounding of the logits can move: ROUNDING_ETA).
# The judge never requires the course's data: it recomputes from whatever data the
# notebook holds, so the same answer on the original's saturating data also passes.
# All measured by tests/margins_attention_variants.py --experiment --rounding --secrets 2
# (CPU, float32; the course's scaled data, the original's randn data, a float64 run).
#
# relative_error: the student's float32 means over 3.3M squares against the float64
# recomputation. Measured: correct <= 9.5e-8 relative (the value itself is 6.8e-7 with
# the course's data); the smallest mistake (the mean-squared error not square-rooted)
# 1.0. 1e-3 is 1e4x and 1000x away.
RELATIVE_ERROR_TOL = 1e-3
# Loaded weights, float64. Measured: the float32 products W_UK @ W_DKV, W_UV @ W_DKV
# <= 1.3e-7 off and the reduced maps, through the probes, <= 1.1e-7; the smallest
# mistake, an extra sqrt(d/r) on W_Q_MLA_hat (as is a missing sqrt(r/d)), 0.20 off,
# a wrong loading (repeat_interleave, swapped projections, W_UV for W_UK) >= 1.4:
# margins >= 75x and >= 2e4x.
EXPERIMENT_WEIGHT_TOL = 1e-5
EXPERIMENT_PROBES = 16  # random probe vectors per side for equations (1) and (2)
# Float32 rounding of a logit, relative to |q_h| |k_{h,l}| / sqrt(d) of the vanilla or
# of the reduced path (the larger of the two). Measured on the CPU for the instructor's
# experiment, both paths, 4 x 32 x 100 x 300 logits a run, 3 seeds each: <= 3.8e-7
# with the course's scaled data and <= 3.9e-7 with the original's randn data (logits
# ~7e3, errors up to 0.02). mla_rows takes max_l |k_{h,l}| for the scale and 1e-5 for
# the rounding, >= 25x above, for the GPU's summation orders.
ROUNDING_ETA = 1e-5
# Rows of output_vanilla / output_reduced against the float64 MLA: a row may differ by
# ROWS_TOL * |row| plus its rounding allowance (mla_rows), so a row whose attention has a
# near-tie (a saturated softmax with two logits within rounding of each other) may round
# either way. With the course's data the allowance is ~3e-3 of a row (no near-ties, but
# every head's smooth softmax may move a little); with the randn data it is ~2e-8 of a
# row without a near-tie and up to 9e-2 on one with it. Measured, worst row deviation /
# its allowance: correct <= 2.5e-4 with the course's data, <= 7.8e-3 with the randn data
# (<= 5.2e-7 relative on rows without a near-tie), 8.9e-13 in float64; the smallest
# mistake that only this comparison catches (output_vanilla computed before the weights
# were loaded) 3.7e2. A row passes at <= 1: margins 128x and 370x. (Mistakes caught
# earlier also show here, from 52 for a bias in MyMHA up to 1.7e3.)
ROWS_TOL = 1e-4
EXPERIMENT_BATCHES = 2  # batch elements whose rows the judge recomputes in float64

# Part 13 properties (1) and (2), float64 inputs. Measured: correct (batched matmul,
# einsum, block-diagonal, rescaled latent) <= 2.5e-16; smallest bug (missing
# sqrt(r/d), r = 5, d = 6) 9.5e-2, wrong head splits >= 1.4. 3e-5 also accepts
# an answer that rounds through float32 (~1e-7) and stays >= 3000x below the bug.
PROPERTY_TOL = 3e-5


# --------------------------------------------------------------------------- helpers


def _get(ns, name, part):
    """The student's ``name`` (data, or a handle to an object in the kernel); fail when missing.

    checks.answer, with one request instead of two (``name in ns`` then ``ns[name]``
    transfers a tensor twice: 2 x 39 MB for the experiment's ``y``).
    """
    try:
        return ns[name]
    except KeyError:
        fail(f"{part}: `{name}` is not defined", f"`{name}` defined in the answer cell", "nothing")


def _dims(test_id, names, low=2):
    """Secret, pairwise distinct dimensions for ``names``, drawn from low .. low + 7 + len(names)."""
    return checks.distinct_dims(rng_for(test_id), names, low=low, high=low + 7)


def _gqa_heads(test_id, avoid):
    """(H, G) with 1 < G < H, G dividing H, and neither equal to a dimension in ``avoid``."""
    pairs = [(h, g) for h in range(4, 13) for g in range(2, h) if h % g == 0]
    pairs = [(h, g) for h, g in pairs if h not in avoid and g not in avoid]
    return rng_for(test_id).choice(pairs)


def _gen(test_id):
    """A torch generator for one test, seeded from the run's secret."""
    return checks.generator(test_id)


def _weights(gen, rows, cols):
    """A well-conditioned weight matrix: entries ~ N(0, 1/cols)."""
    return randn(gen, rows, cols, scale=1.0 / math.sqrt(cols))


def _check_shape(what, got, expected, mistakes=None):
    """check_shape that also recognises a transposed answer and named wrong shapes."""
    shape = checks.as_shape(got, what)
    expected = tuple(expected)
    if shape == expected:
        return
    cause = shape_mistake(shape, mistakes or {})
    if cause is None and len(expected) == 2 and shape == expected[::-1]:
        cause = "rows and columns swapped: with q = W x, a matrix is (output dim, input dim)"
    fail(f"{what}: wrong shape", expected, shape, cause)


def _as_tuple(value, n, what):
    if type(value) not in (tuple, list) or len(value) != n:
        fail(f"{what}: expected a tuple of {n} answers", f"a tuple of {n} shapes", describe(value))
    return tuple(value)


def _int_answer(value, what):
    """An integer answer (a numpy integer arrives as an int; a float only if it is whole)."""
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    fail(f"{what}: expected an integer", "an int", describe(value))


def _forward(ns, model, x, y, what):
    """``model(x, y)`` in the kernel without autograd, x and y sent to the grading device."""
    return call(model, (ns.on_device(x), ns.on_device(y)), what, no_grad=True)


# --------------------------------------------------------------- Parts 1, 2 and 4: shapes

SHAPE_TRIALS = 3
SHAPE_NAMES = ["D_1", "D_2", "D_qk", "D_v", "H"]


def _shape_trials(test_id):
    for trial in range(SHAPE_TRIALS):
        dims = _dims(f"{test_id}/{trial}", SHAPE_NAMES)
        yield dims, tuple(dims[n] for n in SHAPE_NAMES)


def check_head_shapes(ns):
    """Part 1: head_shapes(D_1, D_2, D_qk, D_v, H) -> shapes of W^Q_h, W^K_h, W^V_h."""
    func = _get(ns, "head_shapes", "Part 1")
    for _, args in _shape_trials("p1_head_shapes"):
        got = _as_tuple(call(func, args, "head_shapes"), 3, "head_shapes")
        D_1, D_2, D_qk, D_v, H = args
        many = "that is all H heads stacked (Part 2), not one head's block"
        _check_shape(
            "shape of W^Q_h",
            got[0],
            (D_qk, D_1),
            {many: (H * D_qk, D_1), "a query is computed from x (D_1), not y (D_2)": (D_qk, D_2)},
        )
        _check_shape(
            "shape of W^K_h",
            got[1],
            (D_qk, D_2),
            {
                many: (H * D_qk, D_2),
                "a key is computed from y (D_2), not x (D_1)": (D_qk, D_1),
                "a key has D_qk entries (it meets a query in a dot product), not D_v": (D_v, D_2),
            },
        )
        _check_shape(
            "shape of W^V_h",
            got[2],
            (D_v, D_2),
            {
                many: (H * D_v, D_2),
                "a value has D_v entries, not D_qk": (D_qk, D_2),
                "a value is computed from y (D_2), not x (D_1)": (D_v, D_1),
            },
        )


def check_stacked_shapes(ns):
    """Part 2: stacked_shapes(...) -> shapes of W^Q, W^K, W^V, q_l1, k_l2, v_l2."""
    func = _get(ns, "stacked_shapes", "Part 2")
    for _, args in _shape_trials("p2_stacked_shapes"):
        got = _as_tuple(call(func, args, "stacked_shapes"), 6, "stacked_shapes")
        D_1, D_2, D_qk, D_v, H = args
        one = "that is one head's block; stacking H blocks along axis 0 multiplies the rows by H"
        axis = "stacking along axis 0 keeps a 2-D matrix with H times the rows, not a new head axis"
        vec = "the concatenated vector is 1-D, shape (n,)"
        for what, g, rows, cols in (
            ("W^Q", got[0], D_qk, D_1),
            ("W^K", got[1], D_qk, D_2),
            ("W^V", got[2], D_v, D_2),
        ):
            _check_shape(
                f"shape of {what}",
                g,
                (H * rows, cols),
                {
                    one: (rows, cols),
                    axis: (H, rows, cols),
                    "stacked along axis 1": (rows, H * cols),
                },
            )
        for what, g, n in (("q_l1", got[3], D_qk), ("k_l2", got[4], D_qk), ("v_l2", got[5], D_v)):
            _check_shape(
                f"shape of {what}",
                g,
                (H * n,),
                {
                    vec + ", not a column matrix": (H * n, 1),
                    vec + ", not (H, n)": (H, n),
                    "that is one head's vector; concatenating H of them": (n,),
                },
            )


def check_projections(ns):
    """Part 2: query_vector / key_vector / value_vector compute W x (or W y)."""
    funcs = {
        name: _get(ns, name, "Part 2") for name in ("query_vector", "key_vector", "value_vector")
    }
    gen = _gen("p2_projections")
    for trial in range(SHAPE_TRIALS):
        D_1, D_2, D_qk, D_v, H = _dims(f"p2_projections/{trial}", SHAPE_NAMES).values()
        x = randn(gen, D_1)
        y = randn(gen, D_2)
        for name, W, inp, arg in (
            ("query_vector", randn(gen, H * D_qk, D_1), x, "x"),
            ("key_vector", randn(gen, H * D_qk, D_2), y, "y"),
            ("value_vector", randn(gen, H * D_v, D_2), y, "y"),
        ):
            got = call(
                funcs[name],
                (W, inp),
                f"{name}(W, {arg}) with W of shape {tuple(W.shape)} and {arg} of shape "
                f"{tuple(inp.shape)}",
                "a shape mismatch means the matrix is used transposed: the vector is W times the input",
            )
            check_close(f"{name}", got, W @ inp, VALUES_TOL)


# ---------------------------------------------------------------------------- Part 3


def _softmax_argument_inputs(trial):
    D_qk, L_2 = _dims(f"p3_softmax_argument/{trial}", ["D_qk", "L_2"], low=3).values()
    gen = _gen(f"p3_softmax_argument/{trial}")
    return randn(gen, D_qk), randn(gen, L_2, D_qk), D_qk, L_2


def check_softmax_argument_shape(ns):
    """Part 3: softmax_argument(q, K) returns a vector with one entry per key (L_2,)."""
    func = _get(ns, "softmax_argument", "Part 3")
    for trial in range(SHAPE_TRIALS):
        q, K, D_qk, L_2 = _softmax_argument_inputs(trial)
        got = tensor(call(func, (q, K), "softmax_argument(q, K)"), "softmax_argument")
        shape = tuple(got.shape)
        if shape != (L_2,):
            fail(
                "softmax_argument: wrong shape",
                (L_2,),
                shape,
                "one score per key position l_2: a vector of length L_2"
                if got.numel() == L_2
                else "q (D_qk,) times K_h^T (D_qk, L_2) gives a vector of length L_2",
            )


def check_softmax_argument_values(ns):
    """Part 3: softmax_argument(q, K) = q^T K^T / sqrt(D_qk), for any q and K."""
    func = _get(ns, "softmax_argument", "Part 3")
    for trial in range(SHAPE_TRIALS):
        q, K, D_qk, L_2 = _softmax_argument_inputs(trial)
        got = tensor(call(func, (q, K), "softmax_argument(q, K)"), "softmax_argument")
        if got.numel() == L_2:  # a shape slip costs the shape test only
            got = got.reshape(L_2)
        ref = torch.stack([torch.dot(q, K[l2]) for l2 in range(L_2)]) / math.sqrt(D_qk)
        raw = ref * math.sqrt(D_qk)
        check_close(
            "softmax_argument",
            got,
            ref,
            VALUES_TOL,
            {
                "missing the 1/sqrt(D_qk) scaling": raw,
                "divided by D_qk instead of sqrt(D_qk)": raw / D_qk,
                "multiplied by sqrt(D_qk) instead of dividing": raw * math.sqrt(D_qk),
                "divided by sqrt(L_2) instead of sqrt(D_qk)": raw / math.sqrt(L_2),
                "returned the softmax itself, not its argument": torch.softmax(ref, 0),
            },
        )


# ---------------------------------------------------------------------------- Part 4


def check_output_shapes(ns):
    """Part 4: output_shapes(...) -> shapes of o_{h,l1}, o_l1, W^O_h, W^O."""
    func = _get(ns, "output_shapes", "Part 4")
    for _, args in _shape_trials("p4_output_shapes"):
        got = _as_tuple(call(func, args, "output_shapes"), 4, "output_shapes")
        D_1, D_2, D_qk, D_v, H = args
        _check_shape(
            "shape of o_{h,l1}",
            got[0],
            (D_v,),
            {
                "o is a weighted sum of values, so it has D_v entries, not D_qk": (D_qk,),
                "that is the stacked o_l1 of all heads": (H * D_v,),
            },
        )
        _check_shape(
            "shape of o_l1",
            got[1],
            (H * D_v,),
            {
                "the concatenated vector is 1-D, shape (H*D_v,)": (H, D_v),
                "that is one head's o": (D_v,),
            },
        )
        _check_shape(
            "shape of W^O_h",
            got[2],
            (D_1, D_v),
            {
                "the output lives in the attending sequence's space D_1, not D_2": (D_2, D_v),
                "that is the whole W^O": (D_1, H * D_v),
            },
        )
        _check_shape(
            "shape of W^O",
            got[3],
            (D_1, H * D_v),
            {
                "the output lives in the attending sequence's space D_1, not D_2": (D_2, H * D_v),
                "that is one head's block W^O_h; W^O has H blocks side by side": (D_1, D_v),
            },
        )


# ------------------------------------------------------------ attention references


def reference_attention(x, y, W_Q, W_K, W_V, W_O, H, G):
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


def _attention_variant(x, y, W_Q, W_K, W_V, W_O, H, G, **mistake):
    """Vectorised attention with one deliberate mistake switched on (for naming wrong answers)."""
    B, L_1, _ = x.shape
    L_2 = y.shape[1]
    D_qk = W_Q.shape[0] // H
    D_v = W_O.shape[1] // H
    split = mistake.get("split", "standard")

    def heads(t, L, n, count):
        if split == "head_fastest":
            return t.reshape(B, L, n, count).permute(0, 3, 1, 2)
        if split == "no_transpose":
            return t.reshape(B, count, L, n)
        return t.reshape(B, L, count, n).transpose(1, 2)

    Q = heads(x @ W_Q.T, L_1, D_qk, H)  # (B, H, L_1, D_qk)
    K = heads(y @ W_K.T, L_2, D_qk, G)  # (B, G, L_2, D_qk)
    V = heads(y @ W_V.T, L_2, D_v, G)  # (B, G, L_2, D_v)
    if mistake.get("grouping") == "contiguous":
        index = torch.arange(H, device=x.device) // (H // G)
    else:
        index = torch.arange(H, device=x.device) % G
    K, V = K[:, index], V[:, index]  # (B, H, L_2, .)
    logits = Q @ K.transpose(-2, -1) * mistake.get("scale", 1 / math.sqrt(D_qk))
    weights = torch.softmax(logits, dim=mistake.get("softmax_dim", -1))
    out = weights @ V  # (B, H, L_1, D_v)
    merge = mistake.get("merge", "standard")
    if merge == "no_transpose":
        out = out.reshape(B, L_1, H * D_v)
    elif split == "head_fastest":
        out = out.permute(0, 2, 3, 1).reshape(B, L_1, H * D_v)
    else:
        out = out.transpose(1, 2).reshape(B, L_1, H * D_v)
    return out @ W_O.T


def _attention_mistakes(args, H, G, D_qk, D_v):
    """Named wrong outputs of MHA/GQA for the weights in ``args``."""
    named = {
        "missing the 1/sqrt(D_qk) scaling of the logits": {"scale": 1.0},
        "logits scaled by 1/sqrt(D_v) instead of 1/sqrt(D_qk)": {"scale": 1 / math.sqrt(D_v)},
        "logits divided by D_qk instead of sqrt(D_qk)": {"scale": 1 / D_qk},
        "softmax over the query axis (L_1) instead of the key axis (L_2)": {"softmax_dim": -2},
        "softmax over the head axis instead of the key axis (L_2)": {"softmax_dim": 1},
        "heads merged without moving the head axis back next to D_v "
        "(reshape of (B, H, L_1, D_v) straight to (B, L_1, H*D_v))": {"merge": "no_transpose"},
        "heads split the wrong way: head h must be the h-th block of D_qk consecutive "
        "rows of W^Q, not every H-th row": {"split": "head_fastest"},
        "projections reshaped straight to (B, H, L, D) instead of (B, L, H, D) "
        "followed by a transpose": {"split": "no_transpose"},
    }
    if G not in (1, H):
        named["contiguous grouping h // (H/G); the task groups heads with h = g (mod G)"] = {
            "grouping": "contiguous"
        }
    return {name: _attention_variant(*args, H, G, **flags) for name, flags in named.items()}


def _set_linear(model, name, weight, part):
    """Load ``weight`` into the student's ``model.<name>`` in the kernel (bias zeroed if any)."""

    def shape_cause(current):
        rows, cols = current
        copies = name in ("W_K", "W_V") and cols == weight.shape[1] and rows % weight.shape[0] == 0
        if copies and rows > weight.shape[0]:
            return f"{rows // weight.shape[0]} copies of the {name[-1]} projection; store only its G heads"
        return "see the attribute test of this part"

    load_linear(model, name, weight, part, shape_cause=shape_cause)


def _linear_shapes(spec):
    """Expected (out, in) shapes of the four projections of MyMHA/MyGQA."""
    D_1, D_2, D_qk, D_v, H, G = (spec[k] for k in ("D_1", "D_2", "D_qk", "D_v", "H", "G"))
    return {
        "W_Q": (H * D_qk, D_1),
        "W_K": (G * D_qk, D_2),
        "W_V": (G * D_v, D_2),
        "W_O": (D_1, H * D_v),
    }


def _check_values(ns, name, spec, part, ctor_args, test_id, trials=2):
    """Outputs of the student's model with the test's weights vs the float64 reference."""
    cls = _get(ns, name, part)
    H, G = spec["H"], spec["G"]
    for trial in range(trials):
        built = call(cls, ctor_args, f"{name}{ctor_args}")
        model = to_grading(ns, built, f"{part}: {name}{ctor_args}")
        gen = _gen(f"{test_id}/{trial}")
        weights = {n: _weights(gen, *s) for n, s in _linear_shapes(spec).items()}
        for layer, weight in weights.items():
            _set_linear(model, layer, weight, part)
        B, L_1, L_2 = _dims(f"{test_id}/BL{trial}", ["B", "L_1", "L_2"], low=16).values()
        x = randn(gen, B, L_1, spec["D_1"])
        y = randn(gen, B, L_2, spec["D_2"])
        got = _forward(ns, model, x, y, f"{name}.forward(x, y)")
        args = (x, y, *weights.values())
        ref = reference_attention(*args, H, G)
        check_close(
            f"{part}: {name}.forward(x, y) with the test's weights",
            got,
            ref,
            VALUES_TOL,
            _attention_mistakes(args, H, G, spec["D_qk"], spec["D_v"]),
            shape_cause="the output must be (B, L_1, D_1)",
        )


# ---------------------------------------------------------------------------- Part 5


def _mha_spec(test_id):
    spec = _dims(test_id, ["D_1", "D_2", "D_qk", "D_v", "H"], low=2)
    spec["G"] = spec["H"]
    return spec


def _mha_args(spec):
    return tuple(spec[k] for k in ("D_1", "D_2", "D_qk", "D_v", "H"))


def check_mha_attributes(ns):
    """Part 5: MyMHA's attributes, bias-free nn.Linear layers of the right shapes, output shape."""
    spec = _mha_spec("p5_mha_attributes")
    attrs = {k: spec[k] for k in ("D_1", "D_2", "D_qk", "D_v", "H")}
    _check_model_attributes(ns, "MyMHA", attrs, spec, "Part 5", _mha_args(spec))


def _check_model_attributes(ns, name, attrs, spec, part, ctor_args):
    """Attribute values (``attrs``), bias-free layer shapes and the output shape of a model."""
    cls = _get(ns, name, part)
    model = call(cls, ctor_args, f"{name}{ctor_args}")
    if not (isinstance(model, Remote) and model.is_a("module")):
        fail(f"{part}: {name} must subclass nn.Module", "nn.Module", describe(model))
    for key, value in attrs.items():
        got = getattr(model, key, None)
        if type(got) is not int or got != value:
            fail(
                f"{part}: attribute `{key}`",
                value,
                describe(got) if isinstance(got, Remote) else repr(got)[:80],
                "store the constructor's arguments under the names given in the task",
            )
    H, G = spec["H"], spec["G"]
    for layer_name, shape in _linear_shapes(spec).items():
        layer = submodule(model, layer_name)
        if not (isinstance(layer, Remote) and layer.is_a("linear")):
            fail(f"{part}: `{layer_name}` must be an nn.Linear", "nn.Linear", describe(layer))
        weight = layer_weight(layer)
        if weight is None:
            fail(f"{part}: `{layer_name}.weight` must be a plain tensor", "a Parameter", "none")
        rows, cols = shape
        mistakes = {}
        if layer_name in ("W_K", "W_V") and G != H:
            copies = (
                f"H/G = {H // G} copies of the {layer_name[-1]} projection; store only its G heads"
            )
            mistakes[copies] = (rows // G * H, cols)
        _check_shape(f"{part}: {layer_name}.weight", tuple(weight.shape), shape, mistakes)
        if getattr(layer, "bias", None) is not None:
            fail(
                f"{part}: `{layer_name}` has a bias", "bias=False", "a bias vector", "bias present"
            )
    B, L_1, L_2 = _dims(f"{part}/BL", ["B", "L_1", "L_2"], low=16).values()
    model = to_grading(ns, model, f"{part}: {name}{ctor_args}")
    gen = _gen(f"{part}/shape")
    x = randn(gen, B, L_1, spec["D_1"])
    y = randn(gen, B, L_2, spec["D_2"])
    out = tensor(_forward(ns, model, x, y, f"{name}.forward(x, y)"), "forward")
    _check_shape(f"{part}: output of forward(x, y)", tuple(out.shape), (B, L_1, spec["D_1"]))


def check_mha_values(ns):
    """Part 5: MyMHA.forward matches a float64 per-head reference, built by hand."""
    _get(ns, "MyMHA", "Part 5")
    rules.assert_no_fused_attention("MyMHA", ns, "Part 5")
    spec = _mha_spec("p5_mha_values")
    _check_values(ns, "MyMHA", spec, "Part 5", _mha_args(spec), "p5_mha_values")


def _runs(ns, name, ctor_args, D_1, D_2, part):
    """The rule points are for a model that was built: its forward must run."""
    model = call(_get(ns, name, part), ctor_args, f"{part}: {name}{ctor_args}")
    gen = _gen(f"{part}/runs")
    call(
        model,
        (torch.randn(2, 3, D_1, generator=gen), torch.randn(2, 5, D_2, generator=gen)),
        f"{part}: {name}.forward (the rule is checked on a working answer)",
        no_grad=True,
    )


def check_mha_no_loops(ns):
    """Part 5: no for/while loop or comprehension in MyMHA or the helpers it calls."""
    _runs(ns, "MyMHA", (3, 5, 2, 4, 2), 3, 5, "Part 5")
    rules.assert_no_loops("MyMHA", ns, "Part 5")


# ---------------------------------------------------------------------------- Part 7


def _gqa_spec(test_id):
    spec = _dims(test_id, ["D_1", "D_2", "D_qk", "D_v"], low=2)
    spec["H"], spec["G"] = _gqa_heads(test_id, set(spec.values()))
    return spec


def _gqa_args(spec):
    return tuple(spec[k] for k in ("D_1", "D_2", "D_qk", "D_v", "H", "G"))


def check_gqa_attributes(ns):
    """Part 7: MyGQA's attributes; W_K, W_V hold G heads (no copies); output shape."""
    spec = _gqa_spec("p7_gqa_attributes")
    _check_model_attributes(ns, "MyGQA", dict(spec), spec, "Part 7", _gqa_args(spec))


def check_gqa_values(ns):
    """Part 7: MyGQA.forward with interleaved groups (h = g mod G) matches the reference."""
    _get(ns, "MyGQA", "Part 7")
    rules.assert_no_fused_attention("MyGQA", ns, "Part 7")
    for test_id in ("p7_gqa_values/a", "p7_gqa_values/b"):
        spec = _gqa_spec(test_id)
        _check_values(ns, "MyGQA", spec, "Part 7", _gqa_args(spec), test_id, trials=1)


def check_gqa_no_loops(ns):
    """Part 7: no for/while loop or comprehension in MyGQA or the helpers it calls."""
    _runs(ns, "MyGQA", (3, 5, 2, 4, 4, 2), 3, 5, "Part 7")
    rules.assert_no_loops("MyGQA", ns, "Part 7")


# ---------------------------------------------------------------------------- Part 6


def check_tilde_rank(ns):
    """Part 6: rank of H/G stacked copies of W^{M,GQA} equals rank(W^{M,GQA})."""
    func = _get(ns, "tilde_rank", "Part 6")
    rng = rng_for("p6_tilde_rank")
    for _ in range(4):
        G = rng.randint(2, 6)
        H = G * rng.randint(2, 5)
        rank = rng.randint(1, 12)
        got = _int_answer(call(func, (rank, H, G), f"tilde_rank({rank}, {H}, {G})"), "tilde_rank")
        if got != rank:
            cause = {
                rank * H // G: "copies of rows add no new independent rows: the rank does not grow",
                rank * G: "copies of rows add no new independent rows: the rank does not grow",
                rank * H: "copies of rows add no new independent rows: the rank does not grow",
            }.get(got)
            fail(f"tilde_rank({rank}, H={H}, G={G})", rank, got, cause)


# ---------------------------------------------------------------------------- Part 8


def _is_instance(obj, cls):
    """The kernel's isinstance(obj, cls), for a class ``cls`` the notebook defines."""
    return (
        isinstance(obj, Remote) and isinstance(cls, Remote) and cls.is_a("type") and obj.is_a(cls)
    )


def check_mha_as_gqa(ns):
    """Part 8: mha_as_gqa(...) returns a MyGQA that computes MHA (G = H)."""
    func = _get(ns, "mha_as_gqa", "Part 8")
    cls = _get(ns, "MyGQA", "Part 8")
    spec = _mha_spec("p8_mha_as_gqa")
    model = call(func, _mha_args(spec), f"mha_as_gqa{_mha_args(spec)}")
    if not _is_instance(model, cls):
        fail("Part 8: mha_as_gqa must return a MyGQA", "a MyGQA instance", describe(model))
    G = getattr(model, "G", None)
    if type(G) is not int or G != spec["H"]:
        cause = "G = 1 is multi-query attention (one shared key/value head)" if G == 1 else None
        fail("Part 8: the GQA that equals MHA has G = H", spec["H"], repr(G)[:40], cause)
    model = to_grading(ns, model, "Part 8: the MyGQA of mha_as_gqa")
    gen = _gen("p8_mha_as_gqa")
    weights = {n: _weights(gen, *s) for n, s in _linear_shapes(spec).items()}
    for name, weight in weights.items():
        _set_linear(model, name, weight, "Part 8")
    x = randn(gen, 3, 7, spec["D_1"])
    y = randn(gen, 3, 11, spec["D_2"])
    got = _forward(ns, model, x, y, "MyGQA.forward(x, y)")
    ref = reference_attention(x, y, *weights.values(), spec["H"], spec["H"])
    check_close(
        "Part 8: the GQA with G = H against MHA",
        got,
        ref,
        VALUES_TOL,
        _attention_mistakes(
            (x, y, *weights.values()), spec["H"], spec["H"], spec["D_qk"], spec["D_v"]
        ),
    )


# --------------------------------------------------------------------------- Part 10


def _tile(W, copies):
    return np.concatenate([W] * copies, axis=0)


def _gqa_2_mla_inputs():
    gen = np.random.default_rng(checks.seed_for("p10_gqa_2_mla"))
    full = [
        gen.standard_normal((3, 12)),
        gen.standard_normal((5, 20)),
        gen.standard_normal((4, 24)),
    ]
    deficient = gen.standard_normal((4, 2)) @ gen.standard_normal((2, 16))  # rank 2 < r = 4
    return full + [deficient]


def _run_gqa_2_mla(ns, W):
    """GQA_2_MLA(W) called in the kernel: ((W_DKV_MLA, W_UM_MLA), what it printed)."""
    func = _get(ns, "GQA_2_MLA", "Part 10")
    result, printed = call(func, (W,), f"GQA_2_MLA(W) with W of shape {W.shape}", stdout=True)
    if type(result) not in (tuple, list) or len(result) != 2:
        fail(
            "GQA_2_MLA must return (W_DKV_MLA, W_UM_MLA)",
            "a tuple of two numpy arrays",
            describe(result),
        )
    for item, name in zip(result, ("W_DKV_MLA", "W_UM_MLA"), strict=True):
        if type(item) is not np.ndarray:
            fail(f"GQA_2_MLA: {name} must be a numpy array", "numpy.ndarray", describe(item))
    return result, printed


def check_gqa_2_mla_shapes(ns):
    """Part 10: GQA_2_MLA returns W_DKV (r, D) and W_UM (D, r)."""
    for W in _gqa_2_mla_inputs():
        (dkv, um), _ = _run_gqa_2_mla(ns, W)
        r, D = W.shape
        swapped = "outputs returned in the wrong order: (W_DKV_MLA, W_UM_MLA)"
        _check_shape("GQA_2_MLA: W_DKV_MLA", dkv.shape, (r, D), {swapped: (D, r)})
        _check_shape("GQA_2_MLA: W_UM_MLA", um.shape, (D, r), {swapped: (r, D)})


def check_gqa_2_mla_reconstruction(ns):
    """Part 10: W_UM @ W_DKV reproduces D/r stacked copies of W (also for rank-deficient W)."""
    for W in _gqa_2_mla_inputs():
        (dkv, um), _ = _run_gqa_2_mla(ns, W)
        r, D = W.shape
        target = _tile(W, D // r)
        if dkv.shape != (r, D) or um.shape != (D, r):
            fail(
                "GQA_2_MLA: cannot check the reconstruction, the factors have the wrong shapes",
                f"W_DKV_MLA {(r, D)} and W_UM_MLA {(D, r)}",
                f"{dkv.shape} and {um.shape}",
            )
        product = um.astype(np.float64) @ dkv.astype(np.float64)
        U, S, Vt = np.linalg.svd(target)
        check_close(
            "GQA_2_MLA: W_UM_MLA @ W_DKV_MLA against the stacked copies of W",
            product,
            target,
            RECONSTRUCTION_TOL,
            {
                "np.repeat copies each row in place; the task stacks whole copies of W "
                "(np.tile / np.concatenate along axis 0)": np.repeat(W, D // r, axis=0),
                "W_DKV lacks the singular values (use diag(S) V^T or U diag(S))": U[:, :r] @ Vt[:r],
                "truncated to D/r singular values instead of r": (U[:, : D // r] * S[: D // r])
                @ Vt[: D // r],
                "truncated to r - 1 singular values": (U[:, : r - 1] * S[: r - 1]) @ Vt[: r - 1],
            },
        )


def check_gqa_2_mla_prints(ns):
    """Part 10: GQA_2_MLA prints the shapes of what it returns and a mean-squared error."""
    W = _gqa_2_mla_inputs()[1]
    (dkv, um), printed = _run_gqa_2_mla(ns, W)
    text = printed.replace(" ", "")
    for name, shape in (("W_UM_MLA", um.shape), ("W_DKV_MLA", dkv.shape)):
        if str(shape).replace(" ", "") not in text:
            fail(
                f"GQA_2_MLA must print the shape of {name}",
                f"{shape} in the printed text",
                repr(printed[:200]),
            )
        text = text.replace(str(shape).replace(" ", ""), "", 1)
    if not re.search(r"\d", text):
        fail(
            "GQA_2_MLA must print the mean-squared error of the reconstruction",
            "a number besides the two shapes",
            repr(printed[:200]),
        )


def check_gqa_2_mla_rules(ns):
    """Part 10: GQA_2_MLA uses numpy only and no loops (also in its helpers)."""
    _run_gqa_2_mla(ns, _gqa_2_mla_inputs()[0])  # the rules are checked on a working answer
    rules.assert_no_torch("GQA_2_MLA", ns, "Part 10")
    rules.assert_no_loops("GQA_2_MLA", ns, "Part 10")


# --------------------------------------------------------------------------- Part 11


def check_mla_example(ns):
    """Part 11: W_DKV_MLA (1x2) and W_UM_MLA (2x1) whose product is not two copies of a row."""
    dkv = tensor(_get(ns, "W_DKV_MLA", "Part 11"), "W_DKV_MLA")
    um = tensor(_get(ns, "W_UM_MLA", "Part 11"), "W_UM_MLA")
    swapped = "W^DKV is the 1x2 down-projection, W^UM the 2x1 up-projection"
    _check_shape("Part 11: W_DKV_MLA", tuple(dkv.shape), (1, 2), {swapped: (2, 1)})
    _check_shape("Part 11: W_UM_MLA", tuple(um.shape), (2, 1), {swapped: (1, 2)})
    if not bool(torch.isfinite(dkv).all()) or not bool(torch.isfinite(um).all()):
        fail("Part 11: the matrices must have finite entries", "finite numbers", "NaN or inf")
    product = um @ dkv  # (2, 2)
    gap = float(torch.linalg.vector_norm(product[0] - product[1]))
    size = float(torch.linalg.vector_norm(product))
    if gap <= 1e-9 * max(size, 1.0):
        cause = (
            "W_DKV_MLA is zero, so the product is zero: two identical rows"
            if float(torch.linalg.vector_norm(dkv)) == 0
            else "the two entries of W_UM_MLA are equal, so both rows are the same multiple of "
            "W_DKV_MLA: two copies of one row, which a GQA can express"
        )
        fail(
            "Part 11: W_UM_MLA @ W_DKV_MLA must not be two copies of one 1x2 row",
            "two different rows",
            product.tolist(),
            cause,
        )


# --------------------------------------------------------------------------- Part 13


REDUCED_OUTPUTS = ("W_K_MLA_hat", "W_V_MLA_hat", "W_Q_MLA_hat", "W_O_MLA_hat")


def _reduced_inputs(test_id):
    """MLA weights with D = H*d and D, H, d, r all distinct (float64, well-conditioned)."""
    configs = {"a": (4, 6, 5), "b": (3, 7, 9), "c": (5, 3, 4)}  # (H, d, r)
    H, d, r = configs[test_id[-1]]
    D = H * d
    gen = _gen(f"p13_reduced_matrices/{test_id}")
    return {
        "W_DKV": _weights(gen, r, D),
        "W_UK": _weights(gen, D, r),
        "W_UV": _weights(gen, D, r),
        "W_Q": _weights(gen, D, D),
        "W_O": _weights(gen, D, D),
    }, H


def reference_reduced(W_DKV, W_UK, W_UV, W_Q, W_O, H, mistake=None):
    """Per-head float64 reduced matrices (Part 12); ``mistake`` switches on one named bug."""
    r, D = W_DKV.shape
    d = D // H
    scale = {"no_scale": 1.0, "inverse_scale": math.sqrt(d / r)}.get(mistake, math.sqrt(r / d))
    q_blocks, o_blocks = [], []
    for h in range(H):
        rows = slice(h * d, (h + 1) * d)
        uk = W_UK[h::H] if mistake == "uk_split" else W_UK[rows]  # (d, r)
        wo = W_O[h * d : (h + 1) * d, :].T if mistake == "wo_split" else W_O[:, rows]  # (D, d)
        q_blocks.append(scale * uk.T @ W_Q[rows])  # (r, D)
        o_blocks.append(wo @ W_UV[rows])  # (D, r)
    W_Q_hat = torch.cat(q_blocks, 0)  # (H*r, D)
    if mistake == "o_stacked":
        W_O_hat = torch.cat(o_blocks, 0).reshape(D, H * r)  # blocks stacked, then reshaped
    else:
        W_O_hat = torch.cat(o_blocks, 1)  # (D, H*r)
    return W_DKV, W_DKV, W_Q_hat, W_O_hat


def _score_maps(W_K_hat, W_Q_hat, H):
    """Per head, the D x D bilinear form of the reduced logits: W_Q_hat_h^T W_K_hat / sqrt(r)."""
    r = W_K_hat.shape[0]
    return torch.stack([W_Q_hat[h * r : (h + 1) * r].T @ W_K_hat / math.sqrt(r) for h in range(H)])


def _value_maps(W_V_hat, W_O_hat, H):
    """Per head, the D x D map y -> W_O_hat_h W_V_hat y that carries values into the output."""
    r = W_V_hat.shape[0]
    return torch.stack([W_O_hat[:, h * r : (h + 1) * r] @ W_V_hat for h in range(H)])


def check_reduced_matrices(ns):
    """Part 13: reduced_matrices satisfies equations (1) and (2) of Part 12 for every head."""
    func = _get(ns, "reduced_matrices", "Part 13")
    for test_id in ("a", "b", "c"):
        W, H = _reduced_inputs(test_id)
        r, D = W["W_DKV"].shape
        d = D // H
        args = (*W.values(), H)
        result = call(func, args, f"reduced_matrices(...) with D={D}, H={H}, r={r}")
        if type(result) not in (tuple, list) or len(result) != 4:
            fail(
                "reduced_matrices must return (W_K_MLA_hat, W_V_MLA_hat, W_Q_MLA_hat, W_O_MLA_hat)",
                "a tuple of four tensors",
                describe(result),
            )
        k_hat, v_hat, q_hat, o_hat = (
            tensor(t, n) for t, n in zip(result, REDUCED_OUTPUTS, strict=True)
        )
        for name, got, shape in zip(
            REDUCED_OUTPUTS,
            (k_hat, v_hat, q_hat, o_hat),
            ((r, D), (r, D), (H * r, D), (D, H * r)),
            strict=True,
        ):
            _check_shape(f"reduced_matrices: {name}", tuple(got.shape), shape)
        mistakes = {
            "missing the sqrt(r/d) factor in W_Q_MLA_hat": "no_scale",
            "sqrt(d/r) instead of sqrt(r/d) in W_Q_MLA_hat": "inverse_scale",
            "wrong head split of W_UK: head h owns rows h*d..(h+1)*d-1": "uk_split",
        }
        check_close(
            f"reduced_matrices, equation (1): reduced logits of each head (D={D}, H={H}, r={r})",
            _score_maps(k_hat, q_hat, H),
            torch.stack(
                [
                    W["W_Q"][h * d : (h + 1) * d].T
                    @ W["W_UK"][h * d : (h + 1) * d]
                    @ W["W_DKV"]
                    / math.sqrt(d)
                    for h in range(H)
                ]
            ),
            PROPERTY_TOL,
            {
                name: _score_maps(m[0], m[2], H)
                for name, flag in mistakes.items()
                for m in [reference_reduced(*W.values(), H, flag)]
            },
        )
        o_mistakes = {
            "wrong head split of W_O: head h owns columns h*d..(h+1)*d-1": "wo_split",
            "per-head blocks W_O_h W_UV_h stacked along rows and reshaped; "
            "place them side by side (concatenate along axis 1)": "o_stacked",
        }
        check_close(
            f"reduced_matrices, equation (2): each head's value-to-output map (D={D}, H={H}, r={r})",
            _value_maps(v_hat, o_hat, H),
            torch.stack(
                [
                    W["W_O"][:, h * d : (h + 1) * d] @ W["W_UV"][h * d : (h + 1) * d] @ W["W_DKV"]
                    for h in range(H)
                ]
            ),
            PROPERTY_TOL,
            {
                name: _value_maps(m[1], m[3], H)
                for name, flag in o_mistakes.items()
                for m in [reference_reduced(*W.values(), H, flag)]
            },
        )


def check_reduced_matrices_rules(ns):
    """Part 13: each output of reduced_matrices in one statement, no loops."""
    func = _get(ns, "reduced_matrices", "Part 13")
    W, H = _reduced_inputs("a")
    result = call(
        func, (*W.values(), H), "reduced_matrices (the rules are checked on a working answer)"
    )
    if type(result) not in (tuple, list) or len(result) != 4:
        fail(
            "reduced_matrices must return four matrices",
            "a tuple of four tensors",
            describe(result),
        )
    rules.assert_no_loops("reduced_matrices", ns, "Part 13")
    rules.assert_one_statement_per_output(
        "reduced_matrices", ns, "Part 13", REDUCED_OUTPUTS, size_params=("H",)
    )


EXPERIMENT = {"D": 1024, "H": 32, "r": 50, "B": 32, "L_1": 100, "L_2": 300}
MLA_DATA = ("W_DKV", "W_UK", "W_UV", "W_Q", "W_O")
LAYERS = ("W_Q", "W_K", "W_V", "W_O")


def _experiment_number(value):
    """relative_error as a float: a one-element tensor or a Python number."""
    if type(value) is torch.Tensor and value.numel() == 1:
        return float(tensor(value, "relative_error").reshape(()))
    if type(value) in (int, float):
        return float(value)
    fail("Part 13: relative_error must be a number", "a 0-d tensor or a float", describe(value))


def _experiment_data(ns):
    """The experiment's tensors as the kernel holds them, checked to have the task's sizes."""
    D, H, r, B, L_1, L_2 = EXPERIMENT.values()
    shapes = {
        "W_DKV": (r, D),
        "W_UK": (D, r),
        "W_UV": (D, r),
        "W_Q": (D, D),
        "W_O": (D, D),
        "x": (B, L_1, D),
        "y": (B, L_2, D),
        "output_vanilla": (B, L_1, D),
        "output_reduced": (B, L_1, D),
    }
    data = {}
    for name, shape in shapes.items():
        value = _get(ns, name, "Part 13")
        if type(value) is not torch.Tensor:
            fail(f"Part 13: `{name}` must be a tensor", "torch.Tensor", describe(value))
        _check_shape(f"Part 13: `{name}` (the task's sizes)", tuple(value.shape), shape)
        if value.dtype == torch.bool:
            fail(f"Part 13: `{name}` must hold numbers", "a floating-point tensor", "booleans")
        data[name] = value
    return data


def _check_relative_error(rel, vanilla, reduced):
    """relative_error is what the student's own two outputs give (computed here in float64)."""
    recomputed = rel_error(reduced, vanilla)
    if not math.isfinite(recomputed):
        fail(
            "Part 13: output_vanilla or output_reduced contains NaN or inf",
            "finite outputs",
            "NaN or inf",
        )
    # Two computations through different matrices (inner sizes d and r) never agree in every
    # one of 3.3 million numbers: equal outputs are a copy.
    if recomputed == 0.0:
        fail(
            "Part 13: output_reduced is identical to output_vanilla",
            "output_reduced = model_MHA_reduced(x, y)",
            "a copy of output_vanilla",
        )
    check_close(
        "Part 13: relative_error against the one your output_vanilla and output_reduced give",
        torch.tensor([rel], dtype=F64),
        torch.tensor([recomputed], dtype=F64),
        RELATIVE_ERROR_TOL,
        {
            "the mean-squared error, not its square root: relative_error = "
            "sqrt(mse_output) / sqrt(mean(output_vanilla**2))": torch.tensor([recomputed**2]),
        },
    )


def _experiment_model(ns, cls, name, size, H):
    """The student's MyMHA instance ``name`` with heads of ``size``, its projections bias-free."""
    model = _get(ns, name, "Part 13")
    if not _is_instance(model, cls):
        fail(f"Part 13: `{name}` must be a MyMHA", "a MyMHA instance", describe(model))
    sizes = tuple(getattr(model, key, None) for key in ("D_qk", "D_v", "H"))
    if sizes != (size, size, H):
        fail(
            f"Part 13: `{name}` has the wrong sizes",
            f"D_qk = D_v = {size}, H = {H}",
            "D_qk, D_v, H = " + ", ".join(repr(v)[:20] for v in sizes),
        )
    for layer_name in LAYERS:
        layer = submodule(model, layer_name)
        bias = getattr(layer, "bias", None) if isinstance(layer, Remote) else None
        if bias is not None and not (type(bias) is torch.Tensor and not bool(bias.any())):
            fail(
                f"Part 13: `{name}.{layer_name}` has a bias",
                "projections without bias, as the MLA's",
                "a bias vector",
                "bias present: the experiment's outputs must be the MLA's",
            )
    return model


def _weight(model, layer_name, name):
    """``model.<layer_name>.weight`` as float64 data."""
    layer = submodule(model, layer_name)
    weight = layer_weight(layer)
    if weight is None:
        fail(
            f"Part 13: `{name}.{layer_name}` has no `.weight` tensor",
            "an nn.Linear layer",
            describe(layer),
        )
    return weight.to(F64)


def _check_experiment_mha(ns):
    """MyMHA in the experiment's two shapes, in float64 at small sizes, as in Part 5:
    D_qk = D_v = d with H*d = D (the vanilla model) and D_qk = D_v = r (the reduced one)."""
    H, d, r = _dims("p13_experiment/mha", ["H", "d", "r"]).values()
    for test_id, size in (("vanilla", d), ("reduced", r)):
        spec = {"D_1": H * d, "D_2": H * d, "D_qk": size, "D_v": size, "H": H, "G": H}
        _check_values(
            ns,
            "MyMHA",
            spec,
            "Part 13 (the experiment's MyMHA)",
            _mha_args(spec),
            f"p13_experiment/{test_id}",
            trials=1,
        )


def _check_vanilla_weights(model_v, w):
    """model_MHA_vanilla holds the MLA's projections (float32 products: ~1e-7 off)."""
    projections = {
        "the query projection W_Q": w["W_Q"],
        "the key projection W_UK @ W_DKV": w["W_UK"] @ w["W_DKV"],
        "the value projection W_UV @ W_DKV": w["W_UV"] @ w["W_DKV"],
        "the output projection W_O": w["W_O"],
    }
    for name, (what, want) in zip(LAYERS, projections.items(), strict=True):
        check_close(
            f"Part 13: model_MHA_vanilla.{name}.weight",
            _weight(model_v, name, "model_MHA_vanilla"),
            want,
            EXPERIMENT_WEIGHT_TOL,
            {
                f"model_MHA_vanilla.{name} holds {other}, not {what}": matrix
                for other, matrix in projections.items()
                if other != what
            },
        )


def _check_reduced_weights(model_r, w, H):
    """model_MHA_reduced satisfies equations (1) and (2) head by head, checked through probes.

    W_K and W_V hold H copies of the latent projections; any gauge is fine. Each side
    is a D x D matrix per head; both are compared through the same random probes
    P, R (D x k): P^T M R for each head's M. Equal matrices give equal probes; for
    unequal ones the probes' relative error estimates the full one (a scale error
    exactly), and it costs H*k*k numbers instead of H*D*D (1 GB in float64).
    """
    D, r = w["W_Q"].shape[0], w["W_DKV"].shape[0]
    d = D // H
    q_r, k_r, v_r, o_r = (_weight(model_r, n, "model_MHA_reduced") for n in LAYERS)
    for name, weight, shape in (
        ("W_Q", q_r, (H * r, D)),
        ("W_K", k_r, (H * r, D)),
        ("W_V", v_r, (H * r, D)),
        ("W_O", o_r, (D, H * r)),
    ):
        checks.check_shape(
            f"Part 13: model_MHA_reduced.{name}.weight",
            tuple(weight.shape),
            shape,
            f"W_K and W_V of model_MHA_reduced hold H copies of the latent projections: "
            f"({H}*r, D); W_Q is W_Q_MLA_hat ({H}*r, D) and W_O is W_O_MLA_hat (D, {H}*r)",
        )
    gen = _gen("p13_experiment/probes")
    P, R = randn(gen, D, EXPERIMENT_PROBES), randn(gen, D, EXPERIMENT_PROBES)
    latent_R = w["W_DKV"] @ R  # (r, k)

    def per_head(m, size):  # (H*size, k) -> (H, size, k)
        return m.reshape(H, size, EXPERIMENT_PROBES)

    def probes(left, right):  # (H, n, k), (H, n, k) -> (H, k, k): left_h^T right_h
        return torch.einsum("hnk,hnl->hkl", left, right)

    check_close(
        "Part 13: model_MHA_reduced's logits, equation (1), head by head",
        probes(per_head(q_r @ P, r), per_head(k_r @ R, r)),
        probes(per_head(w["W_Q"] @ P, d), per_head(w["W_UK"] @ latent_R, d)) * math.sqrt(r / d),
        EXPERIMENT_WEIGHT_TOL,
        {
            "missing the sqrt(r/d) factor in W_Q_MLA_hat": probes(
                per_head(w["W_Q"] @ P, d), per_head(w["W_UK"] @ latent_R, d)
            ),
        },
    )
    check_close(
        "Part 13: model_MHA_reduced's value-to-output maps, equation (2), head by head",
        probes(per_head(o_r.T @ P, r), per_head(v_r @ R, r)),
        probes(per_head(w["W_O"].T @ P, d), per_head(w["W_UV"] @ latent_R, d)),
        EXPERIMENT_WEIGHT_TOL,
    )


def mla_rows(x, y, w, H):
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


def row_ratios(got, ref, slack):
    """Per row: |got - ref| / (ROWS_TOL * |ref| + slack); a row passes at <= 1 (NaN never)."""
    deviation = torch.linalg.vector_norm(tensor(got, "output") - ref, dim=-1)
    return deviation / (ROWS_TOL * torch.linalg.vector_norm(ref, dim=-1) + slack)


def _check_rows(what, got, ref, slack, cause):
    """Every row of ``got`` within ROWS_TOL * |ref row| + its rounding slack; the worst ratio."""
    ratio = row_ratios(got, ref, slack)
    worst = float(ratio.max()) if bool(torch.isfinite(ratio).all()) else math.inf
    if not worst <= 1.0:
        off = int((~(ratio <= 1.0)).sum())
        size = torch.linalg.vector_norm(ref, dim=-1).clamp_min(1e-300)
        relative = torch.linalg.vector_norm(tensor(got, what) - ref, dim=-1) / size
        fail(
            f"{what}: rows differ from the MLA recomputed in float64 from your data",
            f"every row within {ROWS_TOL:.0e} relative error (plus what float32 rounding "
            "of its logits can move)",
            f"{off} of {ratio.numel()} rows off, the worst by {float(relative.max()):.2e} relative",
            cause,
        )
    return worst


def check_experiment(ns):
    """Part 13: the experiment ran the task's setup and reports the reduced model's error."""
    rel = _experiment_number(_get(ns, "relative_error", "Part 13"))
    D, H, r, B, L_1, L_2 = EXPERIMENT.values()
    data = _experiment_data(ns)
    _check_relative_error(rel, data["output_vanilla"], data["output_reduced"])
    cls = ns.get("MyMHA")
    model_v = _experiment_model(ns, cls, "model_MHA_vanilla", D // H, H)
    model_r = _experiment_model(ns, cls, "model_MHA_reduced", r, H)
    _check_experiment_mha(ns)
    w = {name: data[name].to(F64) for name in MLA_DATA}
    _check_vanilla_weights(model_v, w)
    _check_reduced_weights(model_r, w, H)
    # The outputs' rows of a few secret batch elements against the vanilla MLA, recomputed
    # here in float64 from the student's data (the reduced model must reproduce it too).
    batches = sorted(rng_for("p13_experiment/rows").sample(range(B), EXPERIMENT_BATCHES))
    ref, slack = mla_rows(data["x"][batches], data["y"][batches], w, H)
    for name, model in (
        ("output_vanilla", "model_MHA_vanilla"),
        ("output_reduced", "model_MHA_reduced"),
    ):
        _check_rows(
            f"Part 13: {name} at batch elements {batches}",
            data[name][batches],
            ref,
            slack,
            f"{name} must be {model}(x, y), computed after the weights were loaded",
        )


# --------------------------------------------------------------------------- Part 14


def check_kv_cache(ns):
    """Part 14: kv_cache_per_position(D, r) -> (2*D for MHA, r for MLA)."""
    func = _get(ns, "kv_cache_per_position", "Part 14")
    rng = rng_for("p14_kv_cache")
    for _ in range(3):
        D = rng.choice([64, 96, 128, 512, 4096])
        r = rng.randint(3, 40)
        got = call(func, (D, r), f"kv_cache_per_position({D}, {r})")
        if type(got) not in (tuple, list) or len(got) != 2:
            fail("kv_cache_per_position must return (mha, mla)", "two numbers", repr(got)[:80])
        mha = _int_answer(got[0], "MHA kv-cache per position")
        mla = _int_answer(got[1], "MLA kv-cache per position")
        if mha != 2 * D:
            cause = "both k_l and v_l (D numbers each) are cached" if mha == D else None
            fail(f"MHA kv-cache per position (D={D})", 2 * D, mha, cause)
        if mla != r:
            cause = (
                "k_hat and v_hat are the same vector W^DKV y_l: it is cached once"
                if mla == 2 * r
                else None
            )
            fail(f"MLA kv-cache per position (D={D}, r={r})", r, mla, cause)


__all__ = [name for name in dir() if name.startswith("check_")] + ["GradingError"]


# grade_id of each test cell -> the check the judge runs for it (one per test cell of the
# source notebook, as tests/test_assignments.py checks)
CHECKS = {
    "p1_head_shapes_test": check_head_shapes,
    "p2_stacked_shapes_test": check_stacked_shapes,
    "p2_projections_test": check_projections,
    "p3_softmax_argument_shape_test": check_softmax_argument_shape,
    "p3_softmax_argument_values_test": check_softmax_argument_values,
    "p4_output_shapes_test": check_output_shapes,
    "p5_mha_attributes_test": check_mha_attributes,
    "p5_mha_values_test": check_mha_values,
    "p5_mha_no_loops_test": check_mha_no_loops,
    "p6_tilde_rank_test": check_tilde_rank,
    "p7_gqa_attributes_test": check_gqa_attributes,
    "p7_gqa_interleaved_heads_test": check_gqa_values,
    "p7_gqa_no_loops_test": check_gqa_no_loops,
    "p8_mha_as_gqa_test": check_mha_as_gqa,
    "p10_gqa_2_mla_shapes_test": check_gqa_2_mla_shapes,
    "p10_gqa_2_mla_reconstruction_test": check_gqa_2_mla_reconstruction,
    "p10_gqa_2_mla_rules_test": check_gqa_2_mla_rules,
    "p10_gqa_2_mla_prints_test": check_gqa_2_mla_prints,
    "p11_mla_example_test": check_mla_example,
    "p13_reduced_matrices_test": check_reduced_matrices,
    "p13_reduced_matrices_rules_test": check_reduced_matrices_rules,
    "p13_experiment_test": check_experiment,
    "p14_kv_cache_test": check_kv_cache,
}
