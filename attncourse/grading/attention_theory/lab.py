"""The lab of ``attention_theory``: batched attention by hand, then the experiment's helpers
(is_distribution, weights_along, pair_distance, recovery_errors; noisy_key_errors, a
simulation, is checked in ``simulation``)."""

import math
from functools import partial

import numpy as np
import torch

from attncourse.judge import rules
from attncourse.judge.checks import (
    GradingError,
    answer,
    call,
    distinct_dims,
    fail,
    generator,
    rel_error,
    rng_for,
    tensor,
)
from attncourse.judge.remote import StudentNamespace
from attncourse.judge.rulebook import NO_FUSED, NO_LOOPS, Rule, prove, proves

from .constructions import check_in_dtype
from .references import (
    F64,
    even_split,
    float32_rows,
    lab_attention_reference,
    lab_instance,
)
from .tolerances import LAB_TOL

ATTENTION_RULES = (
    Rule(NO_FUSED, "attention", "Lab attention"),
    Rule(NO_LOOPS, "attention", "Lab attention"),
)


@proves(*ATTENTION_RULES)
def check_lab_attention(ns: StudentNamespace) -> None:
    """Lab: attention(Q, K, V) -> (C, A), batched, no loops, by hand, stable for large scores."""
    fn = answer(ns, "attention", "Lab")
    prove(ATTENTION_RULES, ns)
    for name, large in (("lab-attention", False), ("lab-attention-large", True)):
        dims, Q, K, V = lab_instance(name, large)
        out = call(fn, (Q, K, V), "attention(Q, K, V)")
        if type(out) not in (tuple, list) or len(out) != 2:
            fail("Lab: attention returns (C, A)", "a pair of tensors", type(out).__name__)
        C_ref, A_ref = lab_attention_reference(Q, K, V)
        S = Q @ K.transpose(-2, -1)
        d = dims["d"]
        A_scaled = torch.softmax(S / math.sqrt(d), -1)
        A_axis = torch.softmax(S, dim=1)
        mistakes = {
            "scaled by 1/sqrt(d): this set's attention is softmax(K q), unscaled": A_scaled,
            "softmax over the queries (dim 1) instead of the keys": A_axis,
            "no normalisation: exp(scores) is not a distribution": torch.exp(S.clamp(max=700)),
        }
        what = f"Lab: weights A for B={dims['B']}, m={dims['m']}, n={dims['n']}, d={d}"
        if large:
            what += " with large scores (|q.k| ~ 1e3)"
            mistakes["overflow: exp of large scores without subtracting the maximum"] = (
                A_ref * float("nan")
            )
        check_in_dtype(
            what,
            out[1],
            A_ref,
            LAB_TOL,
            mistakes=mistakes,
            shape_cause="A is (B, m, n): one row of n weights per query",
        )
        check_in_dtype(
            f"Lab: outputs C (B={dims['B']}, m={dims['m']}, d_v={dims['d_v']})",
            out[0],
            C_ref,
            LAB_TOL,
            mistakes={
                "scaled by 1/sqrt(d)": A_scaled @ V,
                "softmax over the wrong axis": A_axis @ V,
                "used the keys as values": A_ref @ K
                if dims["d"] == dims["d_v"]
                else A_ref[..., :0],
            },
            shape_cause="C is (B, m, d_v)",
        )


def _bool_answer(value, what):
    """A True/False answer (a bool, or a one-element boolean tensor or array)."""
    if type(value) is bool:
        return value
    if type(value) is torch.Tensor and value.dtype == torch.bool and value.numel() == 1:
        return bool(value.reshape(-1)[0])
    if type(value) is np.ndarray and value.dtype.kind == "b" and value.size == 1:
        return bool(value.reshape(-1)[0])
    fail(f"{what}: expected True or False", "a bool", f"{type(value).__name__} {repr(value)[:60]}")


def check_lab_is_distribution(ns: StudentNamespace) -> None:
    """Lab: is_distribution(A) is True exactly when every row of A is a probability vector."""
    fn = answer(ns, "is_distribution", "Lab")
    gen = generator("lab-distribution")
    good = torch.softmax(torch.randn(3, 5, 7, generator=gen, dtype=F64), -1)
    peaked = torch.softmax(40 * torch.randn(4, 6, generator=gen, dtype=F64), -1)
    picks = torch.randint(0, 5, (3,), generator=gen)
    one_hot = torch.eye(5, dtype=F64)[picks]
    float32 = float32_rows(gen, 8, 300)
    uneven = good.clone()
    uneven[0, 0] *= 0.5
    uneven[0, 1] *= 1.5
    negative = good.clone()  # row (1, 2) still sums to 1, one entry is -0.1
    negative[1, 2, 4] += negative[1, 2, 3] + 0.1
    negative[1, 2, 3] = -0.1
    cases = {
        "softmax rows (B, m, n)": (good, True),
        "nearly one-hot softmax rows": (peaked, True),
        "exact one-hot rows": (one_hot, True),
        "float32 softmax rows of length 300 (sums off by rounding)": (float32, True),
        "rows summing to 1 with a negative entry": (negative, False),
        "non-negative rows summing to 2": (2 * good, False),
        "columns sum to 1, rows do not": (good.transpose(-2, -1), False),
        "rows summing to 0.5 and 1.5 (1 on average)": (uneven, False),
        "a row containing NaN": (torch.where(good == good.max(), float("nan"), good), False),
        "rows summing to 1 - 1e-3": (good * (1 - 1e-3), False),
    }
    for name, (A, expected) in cases.items():
        got = _bool_answer(call(fn, (A,), f"is_distribution({name})"), "Lab: is_distribution")
        if got != expected:
            fail(
                f"Lab: is_distribution on {name}",
                expected,
                got,
                "check every entry >= 0 and every row (last axis) sums to 1 up to rounding"
                if expected is False
                else "allow for rounding: compare sums with a tolerance, not ==",
            )


SHARPEN_BETAS = (0.0, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0)


@proves(Rule(NO_LOOPS, "weights_along", "Lab (b)"))
def check_lab_weights_along(ns: StudentNamespace) -> None:
    """Lab (b): weights_along(K, u, betas) = softmax(K (beta u)) for every beta at once, no loops."""
    fn = answer(ns, "weights_along", "Lab (b)")
    prove(check_lab_weights_along.rules, ns)
    rng = rng_for("lab-sharpen")
    n = rng.randint(6, 10)
    d = n + rng.randint(2, 5)
    gen = generator("lab-sharpen")
    norms = 0.5 + torch.rand(n, 1, generator=gen, dtype=F64)  # keys of unequal norms
    K = norms * torch.randn(n, d, generator=gen, dtype=F64)
    u = torch.randn(d, generator=gen, dtype=F64) * rng.uniform(0.5, 2.0)  # not of unit norm
    betas = torch.tensor(SHARPEN_BETAS, dtype=F64) * rng.uniform(0.1, 0.2)
    scores = betas[:, None] * (K @ u)[None, :]  # (m, n)
    got = call(fn, (K, u, betas), "weights_along(K, u, betas)")
    attempt = partial(
        check_in_dtype,
        f"Lab (b): weights for the queries beta u, {len(betas)} betas (n={n}, d={d})",
        got,
        tol=LAB_TOL,
        mistakes={
            "scores scaled by 1/sqrt(d): this set's attention is unscaled": torch.softmax(
                scores / math.sqrt(d), -1
            ),
            "softmax over the betas (dim 0) instead of over the keys": torch.softmax(scores, 0),
            "u scaled to unit length: the query is beta u as given": torch.softmax(
                scores / u.norm(), -1
            ),
            "betas ignored: every row uses q = u": torch.softmax(K @ u, -1).expand(len(betas), n),
            "scores normalised without exp: softmax exponentiates": scores
            / scores.sum(-1, keepdim=True),
        },
        shape_cause="one row of n weights per beta: (len(betas), n)",
    )
    reference = torch.softmax(scores, -1)
    try:
        attempt(reference)
    except GradingError:
        own = own_attention_weights(ns, "weights_along", (betas[:, None] * u)[None], K[None])
        if own is None or not rel_error(own[0], reference) > LAB_TOL:
            raise
        try:
            attempt(own[0])  # a wrong attention costs Lab 1's points, not these
        except GradingError as error:
            raise GradingError(
                f"{error}\n  note: compared with the weights of your attention of Lab 1"
            ) from None


def own_attention_weights(
    ns: StudentNamespace, answer_name: str, Q: torch.Tensor, K: torch.Tensor
) -> torch.Tensor | None:
    """The weights A of the student's ``attention(Q, K, K)`` when ``answer_name`` reaches it
    (a lab answer built on the student's Lab 1), else None; None too when it raises."""
    try:
        reached = rules.reachable_definitions(answer_name, ns)
    except GradingError:
        return None
    if not any(getattr(node, "name", None) == "attention" for node in reached):
        return None
    try:
        out = call(ns["attention"], (Q, K, K), "attention(Q, K, K) of Lab 1")
        return tensor(out[1], "Lab 1: A") if type(out) in (tuple, list) and len(out) == 2 else None
    except (GradingError, KeyError):
        return None


@proves(Rule(NO_LOOPS, "pair_distance", "Lab (c)"))
def check_lab_pair_distance(ns: StudentNamespace) -> None:
    """Lab (c): pair_distance(A, I, J) = total variation of each row from 1/2 on I_b and J_b."""
    fn = answer(ns, "pair_distance", "Lab (c)")
    prove(check_lab_pair_distance.rules, ns)
    rng = rng_for("lab-pair")
    dims = distinct_dims(rng, ["B", "n"], low=4, high=9)
    B, n = dims["B"], dims["n"]
    pairs = [rng.sample(range(n), 2) for _ in range(B)]
    idx_i = torch.tensor([p[0] for p in pairs])
    idx_j = torch.tensor([p[1] for p in pairs])
    gen = generator("lab-pair")
    target = even_split(B, n, idx_i, idx_j)
    share = torch.rand(B, 1, generator=gen, dtype=F64)  # rows from the even split to far from it
    A = share * target + (1 - share) * torch.softmax(
        3 * torch.randn(B, n, generator=gen, dtype=F64), -1
    )
    # Row 0 uniform: distance 1 - 2/n, its largest difference 1/2 - 1/n (n >= 4). Peaked random
    # rows alone let the largest difference pass for about 1 secret in 150.
    A[0] = 1.0 / n
    wrong_target = torch.zeros(B, n, dtype=F64)
    wrong_target[:, idx_i] = 0.5
    wrong_target[:, idx_j] = 0.5
    only_i = torch.zeros(B, n, dtype=F64)
    only_i[torch.arange(B), idx_i] = 1.0
    ref = 0.5 * (A - target).abs().sum(-1)
    check_in_dtype(
        f"Lab (c): distances of {B} rows of {n} weights from the even split",
        call(fn, (A, idx_i, idx_j), "pair_distance(A, I, J)"),
        ref,
        LAB_TOL,
        mistakes={
            "no factor 1/2: that is the L1 distance, twice the total variation": 2 * ref,
            "squared differences instead of absolute ones": ((A - target) ** 2).sum(-1),
            "the largest difference instead of half their sum": (A - target).abs().amax(-1),
            "all weight on I_b: the even split puts 1/2 on I_b and 1/2 on J_b": 0.5
            * (A - only_i).abs().sum(-1),
            "target[:, I] marks the columns I of every row: index rows and columns together "
            "(target[rows, I])": 0.5 * (A - wrong_target).abs().sum(-1),
        },
        shape_cause="one distance per row: (B,)",
    )


@proves(Rule(NO_LOOPS, "recovery_errors", "Lab (d)"))
def check_lab_recovery_errors(ns: StudentNamespace) -> None:
    """Lab (d): recovery_errors(C, M, V) = |c_b M_b - v_b| / |v_b| for a batch, no loops."""
    fn = answer(ns, "recovery_errors", "Lab (d)")
    prove(check_lab_recovery_errors.rules, ns)
    dims = distinct_dims(rng_for("lab-recovery"), ["B", "d"], low=3, high=9)
    B, d = dims["B"], dims["d"]
    gen = generator("lab-recovery")
    C = torch.randn(B, d, generator=gen, dtype=F64)
    M = torch.randn(B, d, d, generator=gen, dtype=F64)  # not symmetric: c M and M c differ
    rows = (C[:, None, :] @ M)[:, 0]  # (B, d)
    spread = torch.rand(B, 1, generator=gen, dtype=F64)  # errors from 0 to about 1
    V = rows + spread * rows.norm(dim=-1, keepdim=True) / math.sqrt(d) * torch.randn(
        B, d, generator=gen, dtype=F64
    )
    columns = (M @ C[:, :, None])[..., 0]  # (B, d): M_b c_b
    gap = (rows - V).norm(dim=-1)
    check_in_dtype(
        f"Lab (d): relative errors for a batch (B={B}, d={d})",
        call(fn, (C, M, V), "recovery_errors(C, M, V)"),
        gap / V.norm(dim=-1),
        LAB_TOL,
        mistakes={
            "M_b c_b (column vectors): c is a row, the error is of c_b M_b": (columns - V).norm(
                dim=-1
            )
            / V.norm(dim=-1),
            "absolute error: divide by |v_b|": gap,
            "divided by |c_b M_b| instead of |v_b|": gap / rows.norm(dim=-1),
            "squared norms": (gap / V.norm(dim=-1)) ** 2,
        },
        shape_cause="one error per instance: (B,)",
    )
