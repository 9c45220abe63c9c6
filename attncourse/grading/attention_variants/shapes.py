"""Parts 1-4 of ``attention_variants``: the shapes of the weights and the activations, the
projections and the softmax argument, checked at secret, pairwise distinct dimensions."""

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from attncourse.judge.checks import (
    answer,
    as_shape,
    call,
    check_close,
    describe,
    fail,
    generator,
    randn,
    shape_mistake,
    tensor,
)
from attncourse.judge.remote import StudentNamespace

from .references import draw_dims
from .tolerances import VALUES_TOL


def check_shape_named(
    what: str,
    got: Any,
    expected: Sequence[int],
    mistakes: Mapping[str, Sequence[int]] | None = None,
) -> None:
    """check_shape that also recognises a transposed answer and named wrong shapes."""
    shape = as_shape(got, what)
    expected = tuple(expected)
    if shape == expected:
        return
    cause = shape_mistake(shape, mistakes or {})
    if cause is None and len(expected) == 2 and shape == expected[::-1]:
        cause = "rows and columns swapped: with q = W x, a matrix is (output dim, input dim)"
    fail(f"{what}: wrong shape", expected, shape, cause)


def as_tuple(value: Any, n: int, what: str) -> tuple:
    """``value`` as a tuple of ``n`` answers, or a failure saying what came."""
    if type(value) not in (tuple, list) or len(value) != n:
        fail(f"{what}: expected a tuple of {n} answers", f"a tuple of {n} shapes", describe(value))
    return tuple(value)


SHAPE_TRIALS = 3
SHAPE_NAMES = ["D_1", "D_2", "D_qk", "D_v", "H"]


def _shape_trials(test_id):
    """(dims, the dimensions as arguments) of each secret trial of a shape question."""
    for trial in range(SHAPE_TRIALS):
        dims = draw_dims(f"{test_id}/{trial}", SHAPE_NAMES)
        yield dims, tuple(dims[n] for n in SHAPE_NAMES)


def check_head_shapes(ns: StudentNamespace) -> None:
    """Part 1: head_shapes(D_1, D_2, D_qk, D_v, H) -> shapes of W^Q_h, W^K_h, W^V_h."""
    func = answer(ns, "head_shapes", "Part 1")
    for _, args in _shape_trials("p1_head_shapes"):
        got = as_tuple(call(func, args, "head_shapes"), 3, "head_shapes")
        D_1, D_2, D_qk, D_v, H = args
        many = "that is all H heads stacked (Part 2), not one head's block"
        check_shape_named(
            "shape of W^Q_h",
            got[0],
            (D_qk, D_1),
            {many: (H * D_qk, D_1), "a query is computed from x (D_1), not y (D_2)": (D_qk, D_2)},
        )
        check_shape_named(
            "shape of W^K_h",
            got[1],
            (D_qk, D_2),
            {
                many: (H * D_qk, D_2),
                "a key is computed from y (D_2), not x (D_1)": (D_qk, D_1),
                "a key has D_qk entries (it meets a query in a dot product), not D_v": (D_v, D_2),
            },
        )
        check_shape_named(
            "shape of W^V_h",
            got[2],
            (D_v, D_2),
            {
                many: (H * D_v, D_2),
                "a value has D_v entries, not D_qk": (D_qk, D_2),
                "a value is computed from y (D_2), not x (D_1)": (D_v, D_1),
            },
        )


def check_stacked_shapes(ns: StudentNamespace) -> None:
    """Part 2: stacked_shapes(...) -> shapes of W^Q, W^K, W^V, q_l1, k_l2, v_l2."""
    func = answer(ns, "stacked_shapes", "Part 2")
    for _, args in _shape_trials("p2_stacked_shapes"):
        got = as_tuple(call(func, args, "stacked_shapes"), 6, "stacked_shapes")
        D_1, D_2, D_qk, D_v, H = args
        one = "that is one head's block; stacking H blocks along axis 0 multiplies the rows by H"
        axis = "stacking along axis 0 keeps a 2-D matrix with H times the rows, not a new head axis"
        vec = "the concatenated vector is 1-D, shape (n,)"
        for what, g, rows, cols in (
            ("W^Q", got[0], D_qk, D_1),
            ("W^K", got[1], D_qk, D_2),
            ("W^V", got[2], D_v, D_2),
        ):
            check_shape_named(
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
            check_shape_named(
                f"shape of {what}",
                g,
                (H * n,),
                {
                    vec + ", not a column matrix": (H * n, 1),
                    vec + ", not (H, n)": (H, n),
                    "that is one head's vector; concatenating H of them": (n,),
                },
            )


def check_projections(ns: StudentNamespace) -> None:
    """Part 2: query_vector / key_vector / value_vector compute W x (or W y)."""
    funcs = {
        name: answer(ns, name, "Part 2") for name in ("query_vector", "key_vector", "value_vector")
    }
    gen = generator("p2_projections")
    for trial in range(SHAPE_TRIALS):
        D_1, D_2, D_qk, D_v, H = draw_dims(f"p2_projections/{trial}", SHAPE_NAMES).values()
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
    """q (D_qk,), K (L_2, D_qk), D_qk and L_2 of one secret trial."""
    D_qk, L_2 = draw_dims(f"p3_softmax_argument/{trial}", ["D_qk", "L_2"], low=3).values()
    gen = generator(f"p3_softmax_argument/{trial}")
    return randn(gen, D_qk), randn(gen, L_2, D_qk), D_qk, L_2


def check_softmax_argument_shape(ns: StudentNamespace) -> None:
    """Part 3: softmax_argument(q, K) returns a vector with one entry per key (L_2,)."""
    func = answer(ns, "softmax_argument", "Part 3")
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


def check_softmax_argument_values(ns: StudentNamespace) -> None:
    """Part 3: softmax_argument(q, K) = q^T K^T / sqrt(D_qk), for any q and K."""
    func = answer(ns, "softmax_argument", "Part 3")
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


def check_output_shapes(ns: StudentNamespace) -> None:
    """Part 4: output_shapes(...) -> shapes of o_{h,l1}, o_l1, W^O_h, W^O."""
    func = answer(ns, "output_shapes", "Part 4")
    for _, args in _shape_trials("p4_output_shapes"):
        got = as_tuple(call(func, args, "output_shapes"), 4, "output_shapes")
        D_1, D_2, D_qk, D_v, H = args
        check_shape_named(
            "shape of o_{h,l1}",
            got[0],
            (D_v,),
            {
                "o is a weighted sum of values, so it has D_v entries, not D_qk": (D_qk,),
                "that is the stacked o_l1 of all heads": (H * D_v,),
            },
        )
        check_shape_named(
            "shape of o_l1",
            got[1],
            (H * D_v,),
            {
                "the concatenated vector is 1-D, shape (H*D_v,)": (H, D_v),
                "that is one head's o": (D_v,),
            },
        )
        check_shape_named(
            "shape of W^O_h",
            got[2],
            (D_1, D_v),
            {
                "the output lives in the attending sequence's space D_1, not D_2": (D_2, D_v),
                "that is the whole W^O": (D_1, H * D_v),
            },
        )
        check_shape_named(
            "shape of W^O",
            got[3],
            (D_1, H * D_v),
            {
                "the output lives in the attending sequence's space D_1, not D_2": (D_2, H * D_v),
                "that is one head's block W^O_h; W^O has H blocks side by side": (D_1, D_v),
            },
        )
