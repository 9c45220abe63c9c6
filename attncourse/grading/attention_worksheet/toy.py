"""Q3 of ``attention_worksheet``: the toy single-head forward pass and the bridge to nn.Linear."""

import math
from functools import partial
from typing import Any

import numpy as np
import torch

from attncourse.judge.checks import (
    answer,
    call,
    check_close,
    closest_mistake,
    describe,
    distinct_dims,
    fail,
    generator,
    rel_error,
    rng_for,
    tensor,
)
from attncourse.judge.remote import Remote, StudentNamespace

from .references import linear_weight_mistakes, matrix64, projection_mistakes, toy_reference
from .references_classmates import copied_instances, find_classmate
from .tolerances import EXACT_TOL, FLOAT32_TOL, TYPED_TOL


def as_matrix(value: Any, what: str) -> torch.Tensor:
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
        return matrix64(rows)
    return tensor(value, what)


def check_q3_toy_qkv(ns: StudentNamespace) -> None:
    """Q, K, V of the toy example, typed or computed, equal X W^(q), X W^(k), X W^(v)."""
    X, Wq, Wk, Wv, _, _ = toy_reference(ns.student)
    got = {name: as_matrix(answer(ns, name, "Q3(a)"), f"Q3(a): {name}") for name in "QKV"}
    classmate = find_classmate(ns, tuple(got.values()), _projections, EXACT_TOL, "Q3(a)")
    for index, (name, W) in enumerate((("Q", Wq), ("K", Wk), ("V", Wv))):
        check_close(
            f"Q3(a): {name}",
            got[name],
            torch.matmul(X, W),
            EXACT_TOL,
            mistakes={
                **projection_mistakes(X, W),
                **copied_instances(ns, partial(_projection, index=index), classmate),
            },
        )


def _projection(student, index):
    """Q, K or V (``index`` 0, 1, 2) of ``student``'s Q3."""
    X, *weights = toy_reference(student)
    return torch.matmul(X, weights[index])


def _projections(student):
    """Q, K and V of ``student``'s Q3."""
    return tuple(_projection(student, index) for index in range(3))


def _outputs(student):
    """Y of ``student``'s Q3 from the rounded weights and from the exact softmax."""
    X, Wq, Wk, Wv, Wo, A = toy_reference(student)
    V = torch.matmul(X, Wv)
    exact = torch.softmax(
        torch.matmul(torch.matmul(X, Wq), torch.matmul(X, Wk).T) / math.sqrt(2.0), dim=-1
    )
    return torch.matmul(torch.matmul(A, V), Wo), torch.matmul(torch.matmul(exact, V), Wo)


def largest_difference(got: torch.Tensor, ref: torch.Tensor) -> float:
    """The largest entry-wise difference |got - ref| (inf for another shape or a non-finite entry)."""
    if tuple(got.shape) != tuple(ref.shape) or not bool(torch.isfinite(got).all()):
        return math.inf
    return float((got - ref).abs().max())


def check_q3_toy_output(ns: StudentNamespace) -> None:
    """Y of the toy example from the given (rounded) weights, or from the exact softmax, each
    typed entry within ``TYPED_TOL`` of one of the two."""
    X, Wq, Wk, Wv, Wo, A = toy_reference(ns.student)
    V = torch.matmul(X, Wv)
    H = torch.matmul(A, V)
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
    got = as_matrix(answer(ns, "Y", "Q3(b)"), "Q3(b): Y")

    def output(student):  # of the student's two Ys, the one nearer the answer
        return min(_outputs(student), key=lambda Y: largest_difference(got, Y))

    classmate = find_classmate(
        ns,
        (got,),
        lambda other: (output(other),),
        TYPED_TOL,
        "Q3(b)",
        mistakes.values(),
        distance=largest_difference,
    )
    mistakes.update(copied_instances(ns, output, classmate))
    references = _outputs(ns.student)
    if tuple(got.shape) != (2, 2):
        fail("Q3(b): Y has the wrong shape", (2, 2), tuple(got.shape), "Y = H W^(o) is (n, d)")
    err = min(largest_difference(got, ref) for ref in references)
    if not err <= TYPED_TOL:
        near = [(largest_difference(got, wrong), name) for name, wrong in mistakes.items()]
        fail(
            "Q3(b): Y differs from H W^(o) (from the rounded or from the exact weights)",
            f"every entry within {TYPED_TOL} of one of them",
            f"an entry {err:.3g} away" if math.isfinite(err) else "NaN or inf",
            min(near)[1] if near and min(near)[0] <= TYPED_TOL else None,
        )


def check_q3_linear_bridge(ns: StudentNamespace) -> None:
    """linear_from_row_weight(W) is a bias-free nn.Linear computing X W for W (d_in, d_out).

    The layer stays in the kernel: its attributes come back as data, and it is
    called there on an input of its own dtype; its output must be X W.
    """
    fn = answer(ns, "linear_from_row_weight", "Q3(c)")
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
            closest_mistake(weight, linear_weight_mistakes(W), FLOAT32_TOL)
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
