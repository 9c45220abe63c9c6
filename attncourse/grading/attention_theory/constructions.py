"""Constructions (c)-(e) of ``attention_theory``: queries and a recovery matrix, checked by the
property the question asks for (the weights they produce), so every correct construction earns
the points, not only the model answer's."""

from collections.abc import Mapping
from typing import Any

import torch

from attncourse.judge.checks import (
    GradingError,
    answer,
    call,
    check_close,
    fail,
    generator,
    rel_error,
    rng_for,
    tensor,
)
from attncourse.judge.remote import StudentNamespace

from .references import (
    F64,
    orthonormal_rows,
    recovery_mistakes,
    sample_noisy_scores,
    subspaces,
    tv_to_average,
    weights,
)
from .tolerances import AVERAGE_TV, FLOAT32_BAND, NOISY_DRAWS, NOISY_TV, RECOVERY_TOL, beyond


def check_in_dtype(
    what: str,
    got: Any,
    ref: torch.Tensor,
    tol: float,
    mistakes: Mapping[str, torch.Tensor] | None = None,
    shape_cause: str | None = None,
) -> float:
    """:func:`check_close` for answers the text asks to compute in their inputs' dtype: a
    failure whose error is float32's rounding (at most ``FLOAT32_BAND``) and no named
    mistake says that a step was taken in float32."""
    try:
        return check_close(what, got, ref, tol, mistakes, shape_cause)
    except GradingError as error:
        message = str(error)
        if "likely cause:" not in message and rel_error(tensor(got, what), ref) <= FLOAT32_BAND:
            message += (
                "\n  likely cause: a step was in float32 (an error of float32's rounding, about "
                "1e-7): the text asks every step in the inputs' dtype, float64"
            )
        raise GradingError(message) from None


def _vector(value, d, what):
    """The answered query as a finite vector in R^d, or a failure."""
    q = tensor(value, what)
    if tuple(q.shape) != (d,):
        fail(f"{what}: wrong shape", (d,), tuple(q.shape), "the query is one vector in R^d")
    if not bool(torch.isfinite(q).all()):
        fail(f"{what}: contains NaN or inf", "finite entries", "non-finite entries")
    return q


def _describe_weights(alpha, i, j):
    """Name what a wrong query does, from the weights it produces."""
    a_i, a_j = float(alpha[i]), float(alpha[j])
    mask = torch.ones_like(alpha, dtype=torch.bool)
    mask[[i, j]] = False
    top_other = float(alpha[mask].max()) if bool(mask.any()) else 0.0
    if max(a_i, a_j) > 0.9:
        return "almost all weight on one key: the query must point at both k_i and k_j equally"
    if top_other >= max(a_i, a_j) - 1e-9:
        return (
            "other keys weigh as much as k_i, k_j: wrong keys (rows of K), wrong sign or direction"
        )
    if abs(a_i - a_j) > 0.05:
        return "k_i and k_j get unequal weights: give both the same score"
    return "right direction, too small: scale q up so the other keys' weights vanish"


def check_query_for_average(ns: StudentNamespace) -> None:
    """(c): query_for_average(K, i, j) puts weight 1/2 on keys i and j (orthonormal keys)."""
    fn = answer(ns, "query_for_average", "(c)")
    rng = rng_for("theory-c")
    for trial in range(4):
        n = rng.randint(4, 12)
        d = n + rng.randint(0, 5)
        i, j = rng.sample(range(n), 2)
        K = orthonormal_rows(n, d, generator(f"theory-c-keys-{trial}"))
        q = _vector(call(fn, (K, i, j), f"query_for_average(K, {i}, {j})"), d, "(c): q")
        alpha = weights(q, K)
        tv = float(tv_to_average(alpha, i, j))
        if beyond(tv, AVERAGE_TV):
            fail(
                f"(c): weights for n={n} orthonormal keys in R^{d}, i={i}, j={j}",
                f"alpha_i = alpha_j = 1/2 (total variation <= {AVERAGE_TV})",
                f"alpha_i = {float(alpha[i]):.4f}, alpha_j = {float(alpha[j]):.4f}, "
                f"total variation {tv:.2e}",
                _describe_weights(alpha, i, j),
            )


def check_recovery_matrix(ns: StudentNamespace) -> None:
    """(d): recovery_matrix(S, T) gives M with c M = v_i for every v_i in span S, v_j in span T."""
    fn = answer(ns, "recovery_matrix", "(d)")
    for trial in range(3):
        d, s, t, S, T = subspaces(trial)
        M = tensor(call(fn, (S, T), f"recovery_matrix(S ({d}x{s}), T ({d}x{t}))"), "(d): M")
        if tuple(M.shape) != (d, d):
            cause = "S^T S instead of S S^T" if tuple(M.shape) == (s, s) else None
            fail(f"(d): shape of M for d={d}", (d, d), tuple(M.shape), cause)
        gen = generator(f"theory-d-values-{trial}")
        v_i = torch.randn(6, s, generator=gen, dtype=F64) @ S.T  # (6, d): rows in span S
        v_j = torch.randn(6, t, generator=gen, dtype=F64) @ T.T  # (6, d): rows in span T
        C = (v_i + v_j) / 2
        mistakes = recovery_mistakes(C, v_i, v_j)
        if not bool(torch.allclose(M, M.T)):
            mistakes["column-vector convention: M c = v_i holds but the question asks c M"] = (
                M @ C.T
            ).T
        check_in_dtype(
            f"(d): c M for 6 random (v_i, v_j), d={d}, dim S={s}, dim T={t}",
            C @ M,
            v_i,
            RECOVERY_TOL,
            mistakes=mistakes,
        )


def check_query_for_noisy_keys(ns: StudentNamespace) -> None:
    """(e): query_for_noisy_keys(mu, i, j, eps) keeps c ~ (v_i + v_j)/2 when keys are noisy."""
    fn = answer(ns, "query_for_noisy_keys", "(e)")
    rng = rng_for("theory-e")
    for trial, eps in enumerate((1e-6, 1e-8)):
        n = rng.randint(5, 16)
        d = n + rng.randint(1, 4)
        i, j = rng.sample(range(n), 2)
        mu = orthonormal_rows(n, d, generator(f"theory-e-mu-{trial}"))
        q = _vector(
            call(fn, (mu, i, j, eps), f"query_for_noisy_keys(mu, {i}, {j}, {eps})"), d, "(e): q"
        )
        gen = generator(f"theory-e-keys-{trial}")
        alpha = torch.softmax(sample_noisy_scores(mu, q, eps, NOISY_DRAWS, gen), -1)  # (draws, n)
        tv = tv_to_average(alpha, i, j)
        if beyond(float(tv.mean()), NOISY_TV):
            mean_alpha = alpha.mean(0)
            cause = _describe_weights(mean_alpha, i, j)
            if float(tv_to_average(mean_alpha, i, j)) < NOISY_TV:
                cause = (
                    "right on average but each draw tips to k_i or k_j: the scale is so large "
                    "that the key noise (std sqrt(eps)) decides; keep beta sqrt(eps) small"
                )
            fail(
                f"(e): weights over {NOISY_DRAWS} noisy key draws, eps={eps}, n={n}, i={i}, j={j}",
                f"mean total variation to (1/2 on i, 1/2 on j) <= {NOISY_TV}",
                f"{float(tv.mean()):.3f} (mean alpha_i = {float(mean_alpha[i]):.3f}, "
                f"alpha_j = {float(mean_alpha[j]):.3f})",
                cause,
            )
