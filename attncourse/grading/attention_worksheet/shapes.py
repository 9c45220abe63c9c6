"""Q1 of ``attention_worksheet``: the shapes of weights, activations, scores and outputs,
evaluated at two secret draws of distinct (B, n, d)."""

from attncourse.judge.checks import (
    answer,
    as_shape,
    call,
    check_shape,
    describe,
    distinct_dims,
    fail,
    rng_for,
)
from attncourse.judge.remote import StudentNamespace

from .references import q1_expected

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


def check_q1_shapes(ns: StudentNamespace, part: str) -> None:
    """Evaluate a Q1 shape function at two draws of distinct (B, n, d) and compare each shape."""
    fn = answer(ns, Q1_FUNCTIONS[part], f"Q1 {part}")
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
        for name, shape, expected in zip(names, got, q1_expected(part, B, n, d), strict=True):
            what = f"Q1 {part}: shape of {name} for B={B}, n={n}, d={d}"
            got_shape = as_shape(shape, what)
            check_shape(what, got_shape, expected, _q1_cause(got_shape, expected, B, n, d))
