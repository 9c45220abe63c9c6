"""Part 13 of ``attention_variants``: reduced_matrices satisfies equations (1) and (2) of Part 12."""

import math

import torch

from attncourse.judge.checks import (
    answer,
    call,
    check_close,
    describe,
    fail,
    generator,
    named_mistakes,
    tensor,
)
from attncourse.judge.remote import StudentNamespace
from attncourse.judge.rulebook import NO_LOOPS, ONE_STATEMENT, Rule, prove, proves

from .references import draw_weights
from .references_reduced import (
    SCORE_MISTAKES,
    VALUE_MISTAKES,
    reference_reduced,
    score_maps,
    value_maps,
)
from .shapes import check_shape_named
from .tolerances import PROPERTY_TOL

REDUCED_OUTPUTS = ("W_K_MLA_hat", "W_V_MLA_hat", "W_Q_MLA_hat", "W_O_MLA_hat")


def _reduced_inputs(test_id):
    """MLA weights with D = H*d and D, H, d, r all distinct (float64, well-conditioned)."""
    configs = {"a": (4, 6, 5), "b": (3, 7, 9), "c": (5, 3, 4)}  # (H, d, r)
    H, d, r = configs[test_id[-1]]
    D = H * d
    gen = generator(f"p13_reduced_matrices/{test_id}")
    return {
        "W_DKV": draw_weights(gen, r, D),
        "W_UK": draw_weights(gen, D, r),
        "W_UV": draw_weights(gen, D, r),
        "W_Q": draw_weights(gen, D, D),
        "W_O": draw_weights(gen, D, D),
    }, H


def check_reduced_matrices(ns: StudentNamespace) -> None:
    """Part 13: reduced_matrices satisfies equations (1) and (2) of Part 12 for every head."""
    func = answer(ns, "reduced_matrices", "Part 13")
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
            check_shape_named(f"reduced_matrices: {name}", tuple(got.shape), shape)
        wrong = named_mistakes(reference_reduced, SCORE_MISTAKES, *W.values(), H)
        check_close(
            f"reduced_matrices, equation (1): reduced logits of each head (D={D}, H={H}, r={r})",
            score_maps(k_hat, q_hat, H),
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
            {name: score_maps(m[0], m[2], H) for name, m in wrong.items()},
        )
        wrong = named_mistakes(reference_reduced, VALUE_MISTAKES, *W.values(), H)
        check_close(
            f"reduced_matrices, equation (2): each head's value-to-output map (D={D}, H={H}, r={r})",
            value_maps(v_hat, o_hat, H),
            torch.stack(
                [
                    W["W_O"][:, h * d : (h + 1) * d] @ W["W_UV"][h * d : (h + 1) * d] @ W["W_DKV"]
                    for h in range(H)
                ]
            ),
            PROPERTY_TOL,
            {name: value_maps(m[1], m[3], H) for name, m in wrong.items()},
        )


REDUCED_RULES = (
    Rule(NO_LOOPS, "reduced_matrices", "Part 13"),
    Rule(ONE_STATEMENT, "reduced_matrices", "Part 13", outputs=REDUCED_OUTPUTS, size_params=("H",)),
)


@proves(*REDUCED_RULES)
def check_reduced_matrices_rules(ns: StudentNamespace) -> None:
    """Part 13: each output of reduced_matrices in one statement, no loops."""
    func = answer(ns, "reduced_matrices", "Part 13")
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
    prove(REDUCED_RULES, ns)
