"""Part 1 of ``mla_inference``: rope and the merged score matrix; the student's rope, carried forward.

When the student's ``rope`` is wrong but still a rotation that depends on the position (checked
on a probe: finite, lengths kept, not the identity), a comparison that fails against the task's
rotation is repeated with references built on the student's rope (:func:`with_rope`), so a
mistake in Part 1(a) costs its points once. Parts 2 and 3 use it the same way.
"""

import random
from collections.abc import Callable, Mapping
from typing import Any

import torch

from attncourse.judge.checks import (
    Deferred,
    GradingError,
    answer,
    call,
    check_close,
    fail,
    generator,
    randn,
    rel_error,
    rng_for,
    tensor,
)
from attncourse.judge.remote import Remote, StudentNamespace
from attncourse.judge.rulebook import NO_LOOPS, Rule, prove, proves

from .references import BASE, F64, Rotate, rope_mistakes, rope_reference
from .tolerances import MERGED_TOL, PRECISION_BAND, ROPE_FLOAT32_TOL, ROPE_TOL, ROTATION_TOL


def close(
    what: str,
    got: Any,
    ref: torch.Tensor,
    tol: float,
    mistakes: Mapping[str, torch.Tensor] | None = None,
    shape_cause: str | None = None,
    precision_cause: str | None = None,
) -> float:
    """check_close, naming a NaN, or a precision mistake on evidence, before the named mistakes.

    Between ``tol`` and PRECISION_BAND an answer is a precision mistake when ``precision_cause``
    says what the text demands there (rope's float64 angles), or when its result is in a dtype
    below float64; otherwise it is reported as a small difference, without guessing a cause.
    """
    got_t = tensor(got, what)
    ref_t = tensor(ref, "reference")
    if tuple(got_t.shape) == tuple(ref_t.shape):
        if not bool(torch.isfinite(got_t).all()):
            fail(
                f"{what}: the output contains NaN or inf",
                "finite values",
                "NaN or inf",
                "for instance a row of scores masked entirely: position t sees positions "
                "s <= t, itself included",
            )
        err = rel_error(got_t, ref_t)
        if tol < err < PRECISION_BAND:
            if precision_cause is None and got_t.dtype in (torch.float16, torch.bfloat16):
                precision_cause = (
                    f"a precision mistake: the result is {got_t.dtype}; half precision keeps "
                    "only 3-4 digits (float32 and float64 are both accepted here)"
                )
            fail(
                f"{what}: values differ slightly from the reference",
                f"relative error <= {tol:.1e} (float32 arithmetic stays below it)",
                f"relative error {err:.3e}",
                precision_cause
                or "beyond float32 rounding: half precision somewhere, or a small difference "
                "in the formula",
            )
    return check_close(what, got_t, ref_t, tol, mistakes, shape_cause)


def student_rotation(ns: StudentNamespace) -> Rotate | None:
    """The student's rope as a reference rotation, or None (see this module's docstring)."""
    fn = ns.get("rope")
    if not isinstance(fn, Remote):
        return None
    gen = generator("mla/rope-probe")
    x = randn(gen, 5, 6)
    positions = torch.tensor([0, 3, 1, 250, 17])
    try:
        got = tensor(call(fn, (x, positions), "rope (probe)"), "rope (probe)")
    except GradingError:
        return None
    if tuple(got.shape) != tuple(x.shape) or not bool(torch.isfinite(got).all()):
        return None
    if not bool(((got.norm(dim=-1) - x.norm(dim=-1)).abs() <= ROTATION_TOL * x.norm(dim=-1)).all()):
        return None  # not a rotation: no carrying forward
    if rel_error(got[1:], x[1:]) < 1e-3:
        return None  # positions ignored: nothing to carry forward
    if rel_error(got, rope_reference(x, positions)) <= ROPE_TOL:
        return None  # the task's rotation: the first reference already is it

    def rotate(v: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        out = call(fn, (v, torch.as_tensor(pos)), "rope (your Part 1, used in the reference)")
        return tensor(out, "rope")

    return rotate


def with_rope(ns: StudentNamespace, attempt: Callable[[Rotate], object]) -> None:
    """``attempt(rotate)`` with the task's rotation; on failure, again with the student's rope.

    When the student's rope is carried forward and both fail, the student reads the second
    failure (its named mistakes are computed with their own rope), marked as such.
    """
    try:
        attempt(rope_reference)
    except GradingError:
        student = student_rotation(ns)
        if student is None:
            raise
        try:
            attempt(student)
        except GradingError as error:
            raise GradingError(
                f"{error}\n  note: compared with a reference built on your rope of Part 1(a)"
            ) from None


# ================================================================= Part 1(a): rope


def check_rope(ns: StudentNamespace) -> None:
    """Part 1(a): rope(x, positions, base) rotates neighbouring pairs by t * base^(-2i/d)."""
    part = "Part 1(a)"
    fn = answer(ns, "rope", part)
    rng = rng_for("p1_rope")
    trials = [
        # (shape, positions shape, base): a batch of sequences, heads, and a 0-d position
        ("(B, L, d), positions (L,)", (rng.randint(2, 3), rng.randint(4, 7)), None),
        ("(B, H, L, d), positions (L,)", (2, rng.randint(2, 4), rng.randint(3, 6)), None),
        ("(B, d), one 0-d position", (rng.randint(2, 4),), "scalar"),
    ]
    for k, (label, lead, kind) in enumerate(trials):
        d = 2 * rng.randint(2, 6)
        base = BASE if k == 0 else rng.choice([500.0, 2048.0, 50000.0])
        gen = generator(f"p1_rope/{k}")
        x = randn(gen, *lead, d)
        if kind == "scalar":
            positions = torch.tensor(rng.randint(1000, 4000))
        else:
            positions = torch.tensor(rng.sample(range(100, 4000), lead[-1]))
        args = (x, positions) if k == 0 else (x, positions, base)
        what = f"{part}: rope for x {label}, d = {d}, base = {base:g}"
        got = call(fn, args, what)
        close(
            what,
            got,
            rope_reference(x, positions, base),
            ROPE_TOL,
            Deferred(rope_mistakes, x, positions, base),
            shape_cause="return x's shape: every vector rotated in place",
            precision_cause=FLOAT32_ANGLES,
        )
        if type(got) is torch.Tensor and got.dtype != F64:
            fail(f"{what}: dtype", "float64 (x's dtype)", str(got.dtype), "return x's dtype")
    check_float32(fn, part, rng)


FLOAT32_ANGLES = (
    "a precision mistake: angles computed in float32 (compute t * theta_i in float64) or a "
    "result rounded to float32"
)


def check_float32(fn: Remote, part: str, rng: random.Random) -> None:
    """rope on a float32 x: a float32 result, the task's rotation to float32 rounding.

    Positions from 20,000 to 60,000 (a long context): angles t * theta_i computed in float32 are
    then off by ~1e-3 radians, far beyond the float32 rounding of cos and sin.
    """
    L, d = rng.randint(4, 7), 2 * rng.randint(6, 8)
    x = randn(generator("p1_rope/float32"), 2, L, d).float()
    positions = torch.tensor(rng.sample(range(20_000, 60_000), L))
    what = f"{part}: rope for float32 x (2, L, d), positions (L,), L = {L}, d = {d}"
    got = call(fn, (x, positions), what)
    if type(got) is torch.Tensor and got.dtype != torch.float32:
        fail(
            f"{what}: dtype",
            "float32 (x's dtype)",
            str(got.dtype),
            "return x's dtype: compute the angles in float64, then use cos and sin in x's dtype",
        )
    close(
        what,
        got,
        rope_reference(x, positions),
        ROPE_FLOAT32_TOL,
        Deferred(rope_mistakes, x, positions, BASE),
        shape_cause="return x's shape: every vector rotated in place",
        precision_cause=FLOAT32_ANGLES,
    )


@proves(Rule(NO_LOOPS, "rope", "Part 1(a)"))
def check_rope_rules(ns: StudentNamespace) -> None:
    """Part 1(a): rope works and uses no loop, also not in the helpers it calls."""
    part = "Part 1(a)"
    fn = answer(ns, "rope", part)
    call(
        fn,
        (torch.ones(2, 4, dtype=F64), torch.arange(2)),
        f"{part}: rope (rules are checked on a working answer)",
    )
    prove(check_rope_rules.rules, ns)


# ================================================================= Part 1(b): merged matrix


def check_merged_score_matrix(ns: StudentNamespace) -> None:
    """Part 1(b): M = (R_t W_Q_h)^T (R_s W_UK_h), so that q_t . k_s = x_t^T M c_s."""
    part = "Part 1(b)"
    fn = answer(ns, "merged_score_matrix", part)
    rng = rng_for("p1_merged")
    for trial in range(2):
        d_h = 2 * rng.randint(2, 5)
        D, r = rng.sample([v for v in range(3, 14) if v != d_h], 2)
        t, s = rng.sample(range(1, 400), 2)
        gen = generator(f"p1_merged/{trial}")
        W_Q_h, W_UK_h = randn(gen, d_h, D), randn(gen, d_h, r)
        what = f"{part}: merged_score_matrix for d_h = {d_h}, D = {D}, r = {r}, t = {t}, s = {s}"
        got = call(fn, (W_Q_h, W_UK_h, t, s), what)

        def attempt(rotate, got=got, W_Q_h=W_Q_h, W_UK_h=W_UK_h, t=t, s=s, what=what):
            R_t_W_Q = rotate(W_Q_h.T, torch.tensor(t)).T  # (d_h, D)
            R_s_W_UK = rotate(W_UK_h.T, torch.tensor(s)).T  # (d_h, r)
            R_t_W_UK = rotate(W_UK_h.T, torch.tensor(t)).T
            R_s_W_Q = rotate(W_Q_h.T, torch.tensor(s)).T
            R_ts_W_UK = rotate(W_UK_h.T, torch.tensor(t + s)).T
            mistakes = {
                "no rotation: W_Q_h^T W_UK_h": W_Q_h.T @ W_UK_h,
                "positions swapped: (R_s W_Q_h)^T (R_t W_UK_h), i.e. R_{t-s} instead of "
                "R_{s-t}": R_s_W_Q.T @ R_t_W_UK,
                "only the query rotated": R_t_W_Q.T @ W_UK_h,
                "only the key rotated": W_Q_h.T @ R_s_W_UK,
                "angles added (R_t R_s): the query's rotation enters transposed, "
                "R_t^T R_s = R_{s-t}": W_Q_h.T @ R_ts_W_UK,
            }
            close(
                what,
                got,
                R_t_W_Q.T @ R_s_W_UK,
                MERGED_TOL,
                mistakes,
                shape_cause="M sits between x_t (D) and c_s (r): (D, r)",
            )

        with_rope(ns, attempt)
