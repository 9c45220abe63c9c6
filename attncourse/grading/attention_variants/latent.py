"""Parts 10 and 11 of ``attention_variants``: GQA as an MLA (numpy) and an MLA no GQA can express."""

import re

import numpy as np
import torch

from attncourse.judge.checks import answer, call, check_close, describe, fail, seed_for, tensor
from attncourse.judge.remote import StudentNamespace
from attncourse.judge.rulebook import NO_LOOPS, NUMPY_ONLY, Rule, prove, proves

from .shapes import check_shape_named
from .tolerances import RECONSTRUCTION_TOL


def _tile(W, copies):
    """``copies`` copies of W stacked along axis 0."""
    return np.concatenate([W] * copies, axis=0)


def _gqa_2_mla_inputs():
    """Secret inputs W of GQA_2_MLA: three of full rank, one rank-deficient."""
    gen = np.random.default_rng(seed_for("p10_gqa_2_mla"))
    full = [
        gen.standard_normal((3, 12)),
        gen.standard_normal((5, 20)),
        gen.standard_normal((4, 24)),
    ]
    deficient = gen.standard_normal((4, 2)) @ gen.standard_normal((2, 16))  # rank 2 < r = 4
    return full + [deficient]


def _run_gqa_2_mla(ns, W):
    """GQA_2_MLA(W) called in the kernel: ((W_DKV_MLA, W_UM_MLA), what it printed)."""
    func = answer(ns, "GQA_2_MLA", "Part 10")
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


def check_gqa_2_mla_shapes(ns: StudentNamespace) -> None:
    """Part 10: GQA_2_MLA returns W_DKV (r, D) and W_UM (D, r)."""
    for W in _gqa_2_mla_inputs():
        (dkv, um), _ = _run_gqa_2_mla(ns, W)
        r, D = W.shape
        swapped = "outputs returned in the wrong order: (W_DKV_MLA, W_UM_MLA)"
        check_shape_named("GQA_2_MLA: W_DKV_MLA", dkv.shape, (r, D), {swapped: (D, r)})
        check_shape_named("GQA_2_MLA: W_UM_MLA", um.shape, (D, r), {swapped: (r, D)})


def check_gqa_2_mla_reconstruction(ns: StudentNamespace) -> None:
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


def check_gqa_2_mla_prints(ns: StudentNamespace) -> None:
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


GQA_2_MLA_RULES = (Rule(NUMPY_ONLY, "GQA_2_MLA", "Part 10"), Rule(NO_LOOPS, "GQA_2_MLA", "Part 10"))


@proves(*GQA_2_MLA_RULES)
def check_gqa_2_mla_rules(ns: StudentNamespace) -> None:
    """Part 10: GQA_2_MLA uses numpy only and no loops (also in its helpers)."""
    _run_gqa_2_mla(ns, _gqa_2_mla_inputs()[0])  # the rules are checked on a working answer
    prove(GQA_2_MLA_RULES, ns)


# --------------------------------------------------------------------------- Part 11


def check_mla_example(ns: StudentNamespace) -> None:
    """Part 11: W_DKV_MLA (1x2) and W_UM_MLA (2x1) whose product is not two copies of a row."""
    dkv = tensor(answer(ns, "W_DKV_MLA", "Part 11"), "W_DKV_MLA")
    um = tensor(answer(ns, "W_UM_MLA", "Part 11"), "W_UM_MLA")
    swapped = "W^DKV is the 1x2 down-projection, W^UM the 2x1 up-projection"
    check_shape_named("Part 11: W_DKV_MLA", tuple(dkv.shape), (1, 2), {swapped: (2, 1)})
    check_shape_named("Part 11: W_UM_MLA", tuple(um.shape), (2, 1), {swapped: (1, 2)})
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
