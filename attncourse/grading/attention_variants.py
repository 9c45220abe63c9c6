"""Hidden tests of the ``attention_variants`` assignment (MHA, GQA, MLA).

Each ``check_*`` function takes the student's namespace (the notebook's
``globals()``), picks its own seeded, all-distinct dimensions, sets every
weight itself, and compares what the student's code computes with an
independent float64 reference (per-head loops). Wrong answers fail with a
message that names the mistake whenever the answer reproduces one of the
known wrong references computed beside the right one.

Thresholds, with the margins measured by ``tests/test_attention_variants.py``
and quoted beside each constant, hold on the CPU and on CUDA (TF32 off).
"""

import contextlib
import copy
import io
import math
import re
import sys

import numpy as np
import torch
from torch import nn

from attncourse import checks, rules
from attncourse.checks import (
    GradingError,
    call,
    check_close,
    fail,
    rel_error,
    rng_for,
    shape_mistake,
    tensor,
)

F64 = torch.float64

# Relative error allowed on values computed in float64 from well-conditioned data
# (weights ~ randn/sqrt(fan_in), so logits are O(1) and no softmax saturates).
# Measured by tests/margins_attention_variants.py over the mutation table:
#   Part 2 projections: correct <= 2.4e-16, smallest bug 0.58 (a ReLU);
#   Part 3: correct <= 3.6e-8 (a float32 sqrt constant), smallest bug 0.22 (sqrt(L_2));
#   Part 5: correct <= 7.5e-8 (softmax in float32), smallest bug 0.23 (scale by sqrt(D_v));
#   Part 7: correct <= 4.1e-16, smallest bug 0.58 (softmax over queries);
#   Part 8: correct <= 2.5e-16, smallest bug 0.36 (scale by sqrt(D_v)).
# 3e-5 is >= 400x above every correct answer and >= 7000x below every bug.
VALUES_TOL = 3e-5

# Part 10 reconstruction, numpy. Measured: SVD, QR, eigh, pinv and the identity
# factorisation (W, tile(I)) <= 3.4e-15 relative error in float64, also on a
# rank-deficient input, and <= 4.0e-8 when the factors are returned in float32; the
# smallest bug (singular values dropped) 0.84, np.repeat instead of tiling >= 1.
# 1e-5 is >= 250x above the worst correct answer and >= 8e4x below the smallest bug.
RECONSTRUCTION_TOL = 1e-5

# Part 13 experiment, run by the student in float32 with the seed's randn data,
# whose logits are ~1e3 and saturate the softmax. Measured over 6 seeds (CPU,
# float32): correct 5.4e-5 .. 7.5e-5; missing sqrt(r/d) 1.9e-3 .. 2.2e-3
# (the only bug this close; every other is > 0.1). 5e-4 is >= 6.7x above the
# worst correct run and >= 3.7x below that bug. GPU float32 without TF32 rounds
# like the CPU (same IEEE float32 products, different summation order), so the
# same margins hold; the function itself is graded in float64 by
# check_reduced_matrices, where the margin is >= 10^8.
# The experiment's loaded weights are compared in float64 with 1e-5 (EXPERIMENT_WEIGHT_TOL):
# measured on the seed's sizes, the float32 products are <= 1.3e-7 off and the reduced
# maps, through EXPERIMENT_PROBES random probes a side, <= 1.1e-7; a missing sqrt(r/d)
# is 0.2 off, a wrong loading (repeat_interleave, swapped projections) >= 0.9:
# margins >= 75x and >= 2e4x (tests/margins_attention_variants.py --experiment).
EXPERIMENT_WEIGHT_TOL = 1e-5
EXPERIMENT_PROBES = 16  # random probe vectors per side for equations (1) and (2)
EXPERIMENT_TOL = 5e-4

# Part 13 properties (1) and (2), float64 inputs. Measured: correct (batched matmul,
# einsum, block-diagonal, rescaled latent) <= 2.2e-16; smallest bug (missing
# sqrt(r/d), r = 5, d = 6) 9.5e-2, wrong head splits >= 1.4. 3e-5 also accepts
# an answer that rounds through float32 (~1e-7) and stays >= 3000x below the bug.
PROPERTY_TOL = 3e-5


# --------------------------------------------------------------------------- helpers


_get = checks.answer


def _dims(test_id, names, low=2):
    """Seeded, pairwise distinct dimensions for ``names``, drawn from low .. low + 7 + len(names)."""
    return checks.distinct_dims(rng_for(test_id), names, low=low, high=low + 7)


def _gqa_heads(test_id, avoid):
    """(H, G) with 1 < G < H, G dividing H, and neither equal to a dimension in ``avoid``."""
    pairs = [(h, g) for h in range(4, 13) for g in range(2, h) if h % g == 0]
    pairs = [(h, g) for h, g in pairs if h not in avoid and g not in avoid]
    return rng_for(test_id).choice(pairs)


def _gen(test_id):
    """A seeded torch generator for one test."""
    return torch.Generator().manual_seed(_stable(test_id))


def _stable(text):
    """A seed from a string that does not change between Python runs (no hash randomisation)."""
    return sum((i + 1) * ord(ch) for i, ch in enumerate(text)) % (2**31)


def _randn(gen, *shape, scale=1.0):
    return torch.randn(*shape, generator=gen, dtype=F64) * scale


def _weights(gen, rows, cols):
    """A well-conditioned weight matrix: entries ~ N(0, 1/cols)."""
    return _randn(gen, rows, cols, scale=1.0 / math.sqrt(cols))


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
        fail(
            f"{what}: expected a tuple of {n} answers",
            f"a tuple of {n} shapes",
            f"{type(value).__name__} {repr(value)[:80]}",
        )
    return tuple(value)


def _int_answer(value, what):
    """An integer answer (int or numpy integer; a float only if it is a whole number)."""
    if isinstance(value, np.integer):
        return int(value)
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    fail(f"{what}: expected an integer", "an int", f"{type(value).__name__} {repr(value)[:80]}")


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
        x = _randn(gen, D_1)
        y = _randn(gen, D_2)
        for name, W, inp, arg in (
            ("query_vector", _randn(gen, H * D_qk, D_1), x, "x"),
            ("key_vector", _randn(gen, H * D_qk, D_2), y, "y"),
            ("value_vector", _randn(gen, H * D_v, D_2), y, "y"),
        ):
            got = call(
                funcs[name],
                (W.clone(), inp.clone()),
                f"{name}(W, {arg}) with W of shape {tuple(W.shape)} and {arg} of shape "
                f"{tuple(inp.shape)}",
                "a shape mismatch means the matrix is used transposed: the vector is W times the input",
            )
            check_close(f"{name}", got, W @ inp, VALUES_TOL)


# ---------------------------------------------------------------------------- Part 3


def _softmax_argument_inputs(trial):
    D_qk, L_2 = _dims(f"p3_softmax_argument/{trial}", ["D_qk", "L_2"], low=3).values()
    gen = _gen(f"p3_softmax_argument/{trial}")
    return _randn(gen, D_qk), _randn(gen, L_2, D_qk), D_qk, L_2


def check_softmax_argument_shape(ns):
    """Part 3: softmax_argument(q, K) returns a vector with one entry per key (L_2,)."""
    func = _get(ns, "softmax_argument", "Part 3")
    for trial in range(SHAPE_TRIALS):
        q, K, D_qk, L_2 = _softmax_argument_inputs(trial)
        got = tensor(
            call(func, (q.clone(), K.clone()), "softmax_argument(q, K)"), "softmax_argument"
        )
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
        got = tensor(
            call(func, (q.clone(), K.clone()), "softmax_argument(q, K)"), "softmax_argument"
        )
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
    """Load ``weight`` into the student's ``model.<name>`` (bias zeroed if there is one)."""
    layer = getattr(model, name, None)
    if layer is None or not isinstance(getattr(layer, "weight", None), torch.Tensor):
        fail(f"{part}: the model has no linear layer `{name}` with a `.weight`", "nn.Linear", layer)
    if tuple(layer.weight.shape) != tuple(weight.shape):
        rows, cols = layer.weight.shape
        copies = name in ("W_K", "W_V") and cols == weight.shape[1] and rows % weight.shape[0] == 0
        fail(
            f"{part}: `{name}.weight` has the wrong shape, so the test cannot load its weights",
            tuple(weight.shape),
            tuple(layer.weight.shape),
            f"{rows // weight.shape[0]} copies of the {name[-1]} projection; store only its G heads"
            if copies and rows > weight.shape[0]
            else "see the attribute test of this part",
        )
    with torch.no_grad():
        layer.weight.copy_(weight)
        if getattr(layer, "bias", None) is not None:  # a bias costs the attribute test only
            layer.bias.zero_()


def _linear_shapes(spec):
    """Expected (out, in) shapes of the four projections of MyMHA/MyGQA."""
    D_1, D_2, D_qk, D_v, H, G = (spec[k] for k in ("D_1", "D_2", "D_qk", "D_v", "H", "G"))
    return {
        "W_Q": (H * D_qk, D_1),
        "W_K": (G * D_qk, D_2),
        "W_V": (G * D_v, D_2),
        "W_O": (D_1, H * D_v),
    }


def _check_values(cls, spec, part, ctor_args, test_id, trials=2):
    """Outputs of the student's model with the test's weights vs the float64 reference."""
    dev = checks.device()
    for trial in range(trials):
        model = call(cls, ctor_args, f"{cls.__name__}{ctor_args}").to(dev).double()
        gen = _gen(f"{test_id}/{trial}")
        H, G = spec["H"], spec["G"]
        weights = {n: _weights(gen, *s).to(dev) for n, s in _linear_shapes(spec).items()}
        for name, weight in weights.items():
            _set_linear(model, name, weight, part)
        B, L_1, L_2 = _dims(f"{test_id}/BL{trial}", ["B", "L_1", "L_2"], low=16).values()
        x = _randn(gen, B, L_1, spec["D_1"]).to(dev)
        y = _randn(gen, B, L_2, spec["D_2"]).to(dev)
        with torch.no_grad():
            got = call(model, (x, y), f"{cls.__name__}.forward(x, y)")
        args = (x, y, *weights.values())
        ref = reference_attention(*args, H, G)
        check_close(
            f"{part}: {cls.__name__}.forward(x, y) with the test's weights",
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
    cls = _get(ns, "MyMHA", "Part 5")
    spec = _mha_spec("p5_mha_attributes")
    attrs = {k: spec[k] for k in ("D_1", "D_2", "D_qk", "D_v", "H")}
    _check_model_attributes(cls, attrs, spec, "Part 5", _mha_args(spec))


def _check_model_attributes(cls, attrs, spec, part, ctor_args):
    """Attribute values (``attrs``), bias-free layer shapes and the output shape of a model."""
    model = call(cls, ctor_args, f"{cls.__name__}{ctor_args}")
    if not isinstance(model, nn.Module):
        fail(f"{part}: {cls.__name__} must subclass nn.Module", "nn.Module", type(model).__name__)
    for key, value in attrs.items():
        got = getattr(model, key, None)
        if type(got) is not int or got != value:
            fail(
                f"{part}: attribute `{key}`",
                value,
                repr(got)[:80],
                "store the constructor's arguments under the names given in the task",
            )
    H, G = spec["H"], spec["G"]
    for name, shape in _linear_shapes(spec).items():
        layer = getattr(model, name, None)
        if not isinstance(layer, nn.Linear):
            fail(f"{part}: `{name}` must be an nn.Linear", "nn.Linear", type(layer).__name__)
        rows, cols = shape
        mistakes = {}
        if name in ("W_K", "W_V") and G != H:
            copies = f"H/G = {H // G} copies of the {name[-1]} projection; store only its G heads"
            mistakes[copies] = (rows // G * H, cols)
        _check_shape(f"{part}: {name}.weight", tuple(layer.weight.shape), shape, mistakes)
        if layer.bias is not None:
            fail(f"{part}: `{name}` has a bias", "bias=False", "a bias vector", "bias present")
    B, L_1, L_2 = _dims(f"{part}/BL", ["B", "L_1", "L_2"], low=16).values()
    dev = checks.device()
    model = model.to(dev).double()
    gen = _gen(f"{part}/shape")
    x = _randn(gen, B, L_1, spec["D_1"]).to(dev)
    y = _randn(gen, B, L_2, spec["D_2"]).to(dev)
    with torch.no_grad():
        out = tensor(call(model, (x, y), f"{cls.__name__}.forward(x, y)"), "forward")
    _check_shape(f"{part}: output of forward(x, y)", tuple(out.shape), (B, L_1, spec["D_1"]))


def check_mha_values(ns):
    """Part 5: MyMHA.forward matches a float64 per-head reference, built by hand."""
    cls = _get(ns, "MyMHA", "Part 5")
    rules.assert_no_fused_attention(cls, ns, "Part 5")
    spec = _mha_spec("p5_mha_values")
    _check_values(cls, spec, "Part 5", _mha_args(spec), "p5_mha_values")


def _runs(cls, ctor_args, D_1, D_2, part):
    """The rule points are for a model that was built: its forward must run."""
    model = call(cls, ctor_args, f"{part}: {cls.__name__}{ctor_args}")
    with torch.no_grad():
        call(
            model,
            (torch.randn(2, 3, D_1), torch.randn(2, 5, D_2)),
            f"{part}: {cls.__name__}.forward (the rule is checked on a working answer)",
        )


def check_mha_no_loops(ns):
    """Part 5: no for/while loop or comprehension in MyMHA or the helpers it calls."""
    cls = _get(ns, "MyMHA", "Part 5")
    _runs(cls, (3, 5, 2, 4, 2), 3, 5, "Part 5")
    rules.assert_no_loops(cls, ns, "Part 5")


# ---------------------------------------------------------------------------- Part 7


def _gqa_spec(test_id):
    spec = _dims(test_id, ["D_1", "D_2", "D_qk", "D_v"], low=2)
    spec["H"], spec["G"] = _gqa_heads(test_id, set(spec.values()))
    return spec


def _gqa_args(spec):
    return tuple(spec[k] for k in ("D_1", "D_2", "D_qk", "D_v", "H", "G"))


def check_gqa_attributes(ns):
    """Part 7: MyGQA's attributes; W_K, W_V hold G heads (no copies); output shape."""
    cls = _get(ns, "MyGQA", "Part 7")
    spec = _gqa_spec("p7_gqa_attributes")
    _check_model_attributes(cls, dict(spec), spec, "Part 7", _gqa_args(spec))


def check_gqa_values(ns):
    """Part 7: MyGQA.forward with interleaved groups (h = g mod G) matches the reference."""
    cls = _get(ns, "MyGQA", "Part 7")
    rules.assert_no_fused_attention(cls, ns, "Part 7")
    for test_id in ("p7_gqa_values/a", "p7_gqa_values/b"):
        spec = _gqa_spec(test_id)
        _check_values(cls, spec, "Part 7", _gqa_args(spec), test_id, trials=1)


def check_gqa_no_loops(ns):
    """Part 7: no for/while loop or comprehension in MyGQA or the helpers it calls."""
    cls = _get(ns, "MyGQA", "Part 7")
    _runs(cls, (3, 5, 2, 4, 4, 2), 3, 5, "Part 7")
    rules.assert_no_loops(cls, ns, "Part 7")


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


def check_mha_as_gqa(ns):
    """Part 8: mha_as_gqa(...) returns a MyGQA that computes MHA (G = H)."""
    func = _get(ns, "mha_as_gqa", "Part 8")
    cls = _get(ns, "MyGQA", "Part 8")
    spec = _mha_spec("p8_mha_as_gqa")
    model = call(func, _mha_args(spec), f"mha_as_gqa{_mha_args(spec)}")
    if not isinstance(cls, type) or not isinstance(model, cls):
        fail("Part 8: mha_as_gqa must return a MyGQA", "a MyGQA instance", type(model).__name__)
    G = getattr(model, "G", None)
    if type(G) is not int or G != spec["H"]:
        cause = "G = 1 is multi-query attention (one shared key/value head)" if G == 1 else None
        fail("Part 8: the GQA that equals MHA has G = H", spec["H"], repr(G)[:40], cause)
    dev = checks.device()
    model = model.to(dev).double()
    gen = _gen("p8_mha_as_gqa")
    weights = {n: _weights(gen, *s).to(dev) for n, s in _linear_shapes(spec).items()}
    for name, weight in weights.items():
        _set_linear(model, name, weight, "Part 8")
    x = _randn(gen, 3, 7, spec["D_1"]).to(dev)
    y = _randn(gen, 3, 11, spec["D_2"]).to(dev)
    with torch.no_grad():
        got = call(model, (x, y), "MyGQA.forward(x, y)")
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
    gen = np.random.default_rng(_stable("p10_gqa_2_mla"))
    full = [
        gen.standard_normal((3, 12)),
        gen.standard_normal((5, 20)),
        gen.standard_normal((4, 24)),
    ]
    deficient = gen.standard_normal((4, 2)) @ gen.standard_normal((2, 16))  # rank 2 < r = 4
    return full + [deficient]


def _run_gqa_2_mla(ns, W):
    func = _get(ns, "GQA_2_MLA", "Part 10")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        result = call(func, (W.copy(),), f"GQA_2_MLA(W) with W of shape {W.shape}")
    if type(result) not in (tuple, list) or len(result) != 2:
        fail(
            "GQA_2_MLA must return (W_DKV_MLA, W_UM_MLA)",
            "a tuple of two numpy arrays",
            f"{type(result).__name__} {repr(result)[:80]}",
        )
    for item, name in zip(result, ("W_DKV_MLA", "W_UM_MLA"), strict=True):
        if type(item) is not np.ndarray:
            fail(f"GQA_2_MLA: {name} must be a numpy array", "numpy.ndarray", type(item).__name__)
    return result, buffer.getvalue()


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
    func = _get(ns, "GQA_2_MLA", "Part 10")
    _run_gqa_2_mla(ns, _gqa_2_mla_inputs()[0])  # the rules are checked on a working answer
    rules.assert_no_torch(func, ns, "Part 10")
    rules.assert_no_loops(func, ns, "Part 10")


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
        args = tuple(v.clone() for v in W.values()) + (H,)
        result = call(func, args, f"reduced_matrices(...) with D={D}, H={H}, r={r}")
        if type(result) not in (tuple, list) or len(result) != 4:
            fail(
                "reduced_matrices must return (W_K_MLA_hat, W_V_MLA_hat, W_Q_MLA_hat, W_O_MLA_hat)",
                "a tuple of four tensors",
                f"{type(result).__name__}",
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
            type(result).__name__,
        )
    rules.assert_no_loops(func, ns, "Part 13")
    rules.assert_one_statement_per_output(func, ns, "Part 13", REDUCED_OUTPUTS, size_params=("H",))


EXPERIMENT = {"D": 1024, "H": 32, "r": 50, "B": 32, "L_1": 100, "L_2": 300}


def _experiment_number(value):
    """relative_error as a float: a one-element tensor or a Python/numpy float."""
    if type(value) in checks.TENSOR_TYPES and value.numel() == 1:
        return float(tensor(value, "relative_error").reshape(()))
    if type(value) in (float, np.float64, np.float32):
        return float(value)
    fail(
        "Part 13: relative_error must be a number", "a 0-d tensor or a float", type(value).__name__
    )


def _experiment_model(ns, name, d, H):
    """The student's MyMHA instance ``name`` with heads of size ``d``."""
    model, cls = _get(ns, name, "Part 13"), ns.get("MyMHA")
    if not isinstance(cls, type) or not isinstance(model, cls):
        fail(f"Part 13: `{name}` must be a MyMHA", "a MyMHA instance", type(model).__name__)
    if (getattr(model, "D_qk", None), getattr(model, "D_v", None), getattr(model, "H", None)) != (
        d,
        d,
        H,
    ):
        fail(f"Part 13: `{name}` has the wrong sizes", f"D_qk = D_v = {d}, H = {H}")
    return model


def _weight(model, name):
    return tensor(getattr(getattr(model, name, None), "weight", None), f"{name}.weight")


def check_experiment(ns):
    """Part 13: the experiment ran the seed's setup and left a small relative_error."""
    rel = _experiment_number(_get(ns, "relative_error", "Part 13"))
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
    t = {}
    for name, shape in shapes.items():
        value = _get(ns, name, "Part 13")
        if type(value) not in checks.TENSOR_TYPES:
            fail(f"Part 13: `{name}` must be a tensor", "torch.Tensor", type(value).__name__)
        _check_shape(f"Part 13: `{name}` (the task's sizes)", tuple(value.shape), shape)
        t[name] = value
    vanilla = tensor(t["output_vanilla"], "output_vanilla")
    reduced = tensor(t["output_reduced"], "output_reduced")
    recomputed = rel_error(reduced, vanilla)
    if not abs(recomputed - rel) <= 1e-3 * recomputed + 1e-9:
        fail(
            "Part 13: relative_error does not follow from output_vanilla and output_reduced",
            f"{recomputed:.3e}",
            f"{rel:.3e}",
            "relative_error = sqrt(mse_output) / sqrt(mean(output_vanilla**2))",
        )
    if recomputed == 0.0:  # two float32 computations never agree to the last bit
        fail(
            "Part 13: output_reduced is identical to output_vanilla",
            "output_reduced = model_MHA_reduced(x, y)",
            "a copy of output_vanilla",
        )
    w = {n: tensor(t[n], n) for n in ("W_DKV", "W_UK", "W_UV", "W_Q", "W_O")}
    d = D // H
    model_v = _experiment_model(ns, "model_MHA_vanilla", d, H)
    model_r = _experiment_model(ns, "model_MHA_reduced", r, H)
    # The vanilla weights are the MLA's projections (float32 products: <= 1e-6 off).
    for name, want in (
        ("W_Q", w["W_Q"]),
        ("W_K", w["W_UK"] @ w["W_DKV"]),
        ("W_V", w["W_UV"] @ w["W_DKV"]),
        ("W_O", w["W_O"]),
    ):
        check_close(
            f"Part 13: model_MHA_vanilla.{name}.weight",
            _weight(model_v, name),
            want,
            EXPERIMENT_WEIGHT_TOL,
        )
    # The reduced weights satisfy equations (1) and (2) head by head (H copies of the
    # latent projections in W_K and W_V; any gauge is fine). Each side is a D x D matrix
    # per head; both are compared through the same random probes P, R (D x k):
    # P^T M R for each head's M. Equal matrices give equal probes; for unequal ones the
    # probes' relative error estimates the full one (a scale error exactly), and it costs
    # H*k*k numbers instead of H*D*D (about 1 GB in float64 at the task's sizes).
    k_r, v_r = _weight(model_r, "W_K"), _weight(model_r, "W_V")
    q_r, o_r = _weight(model_r, "W_Q"), _weight(model_r, "W_O")
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
    gen = _gen("p13_experiment_probes")
    P, R = _randn(gen, D, EXPERIMENT_PROBES), _randn(gen, D, EXPERIMENT_PROBES)
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
    )
    check_close(
        "Part 13: model_MHA_reduced's value-to-output maps, equation (2), head by head",
        probes(per_head(o_r.T @ P, r), per_head(v_r @ R, r)),
        probes(per_head(w["W_O"].T @ P, d), per_head(w["W_UV"] @ latent_R, d)),
        EXPERIMENT_WEIGHT_TOL,
    )
    # The outputs are what the models compute (first sample, same float32 arithmetic),
    # and the vanilla model, rerun in float64, is multi-head attention.
    x1, y1 = t["x"][:1].detach(), t["y"][:1].detach()
    for name, model, out in (
        ("output_vanilla", model_v, vanilla),
        ("output_reduced", model_r, reduced),
    ):
        with torch.no_grad():
            again = call(model, (x1, y1), f"{name[7:]} model on x[:1], y[:1]")
        if rel_error(tensor(again, name), out[:1]) > 1e-4:
            fail(f"Part 13: {name} is not what its model computes on x and y")
    exact = copy.deepcopy(model_v).cpu().double()
    with torch.no_grad():
        got = call(exact, (x1.cpu().double(), y1.cpu().double()), "model_MHA_vanilla in float64")
    check_close(
        "Part 13: model_MHA_vanilla (your MyMHA) in float64 against the reference",
        got,
        reference_attention(
            x1.cpu().double(),
            y1.cpu().double(),
            *(_weight(model_v, n) for n in ("W_Q", "W_K", "W_V", "W_O")),
            H,
            H,
        ),
        VALUES_TOL,
    )
    if not recomputed <= EXPERIMENT_TOL:
        fail(
            "Part 13: the reduced model does not reproduce the vanilla model",
            f"relative_error <= {EXPERIMENT_TOL:.0e}",
            f"{recomputed:.3e}",
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

# Snapshot this module's globals (thresholds, helpers) while they are pristine, so a
# student cell that rebinds, say, VALUES_TOL or check_close here changes nothing.
checks.protect(sys.modules[__name__])
