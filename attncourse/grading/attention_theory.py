"""Hidden checks of assignment 2, attention as a soft lookup: constructions (c)-(e), simulation (f), lab.

The attention of this set has no scaling: ``alpha = softmax(K q)``, ``c = alpha V``
(keys and values are the rows of K and V). The checks run in the judge, never in
the student's kernel: each draws its instances from the run's secret
(:func:`attncourse.judge.checks.rng_for`, :func:`~attncourse.judge.checks.generator`), calls the
student's function in the kernel on them (float64 tensors on the kernel's CPU: the
simulations take a CPU ``torch.Generator``) and judges the plain data that comes
back against references computed here in float64 with torch's numerically stable
softmax. The constructions are checked by the property the question asks for (the
weights they produce), so every correct construction earns the points, not only
the model answer's. The simulations are compared with the judge's own simulation
of the same instance; their tolerances hold for every secret with overwhelming
probability (see the measurements beside each threshold, from
``tests/margins_attention_theory.py``).
"""

import math

import numpy as np
import torch

from attncourse.judge import rules
from attncourse.judge.checks import (
    answer,
    call,
    check_close,
    distinct_dims,
    fail,
    generator,
    rng_for,
    seed_for,
    tensor,
)
from attncourse.judge.remote import Remote, StudentRaised

F64 = torch.float64


def orthonormal_rows(n, d, gen):
    """n orthonormal vectors in R^d (n <= d) as the rows of an (n, d) float64 tensor."""
    q, _ = torch.linalg.qr(torch.randn(d, n, generator=gen, dtype=F64))
    return q.T.contiguous()


def weights(q, K):
    """The set's attention weights softmax(K q) for one query (d,) and keys (n, d)."""
    return torch.softmax(K @ q, dim=-1)


def kernel_generator(ns, test_id, part):
    """A handle to a fresh CPU ``torch.Generator`` in the kernel, seeded from the run's secret.

    The simulations take a generator; a generator is an object, not data, so it is
    made in the kernel (from the notebook's ``torch``, imported by the course's
    first cell) and passed to the student's function as a handle. Nothing of the
    verdict depends on it: the samples are judged by their statistics.
    """
    module = ns.get("torch")
    try:
        if not isinstance(module, Remote):
            raise AttributeError("torch")
        gen = module.Generator.call(ref=True)
        gen.manual_seed.call(seed_for(test_id))
    except (AttributeError, StudentRaised):
        fail(
            f"{part}: the grader could not make a torch.Generator for your function",
            "`torch` in the notebook is the torch module (imported by the first cell)",
            "the name `torch` was rebound or deleted",
            "do not reassign `torch`; import what you need under another name",
        )
    return gen


def beyond(value, limit):
    """True when a measured ``value`` exceeds its ``limit`` (NaN does).

    Every statistical threshold of this module is compared here, so
    ``tests/margins_attention_theory.py`` can record each comparison.
    """
    return not value <= limit


def worst_beyond(comparisons):
    """Of ``(item, value, limit)`` triples, the item whose value exceeds its limit by the
    largest factor, or None when all are within (every comparison goes through :func:`beyond`)."""
    over = [
        (value / limit if value == value and limit > 0 else math.inf, index)
        for index, (_, value, limit) in enumerate(comparisons)
        if beyond(value, limit)
    ]
    return comparisons[max(over)[1]][0] if over else None


def _vector(value, d, what):
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


# ------------------------------------------------------------------------- (c)

# (c): weights within 1e-3 of (1/2, 1/2, 0, ...) in total variation, as the question states.
# Measured (tests/margins_attention_theory.py; the solution over 200 secrets, every case over
# 20): correct answers (beta = 20 .. 1e4, shifted by sum(K) or by a vector off the keys) <=
# 1.1e-8 (the solution, beta = 20, n = 12); the closest mistake (beta = 3, at n = 4) >= 0.047,
# then beta = 1 at >= 0.27. 1e-3 is 1e5x above the one and 47x below the other.
AVERAGE_TV = 1e-3


def _tv_to_average(alpha, i, j):
    target = torch.zeros_like(alpha)
    target[..., i] = 0.5
    target[..., j] = 0.5
    return 0.5 * (alpha - target).abs().sum(-1)


def check_query_for_average(ns):
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
        tv = float(_tv_to_average(alpha, i, j))
        if beyond(tv, AVERAGE_TV):
            fail(
                f"(c): weights for n={n} orthonormal keys in R^{d}, i={i}, j={j}",
                f"alpha_i = alpha_j = 1/2 (total variation <= {AVERAGE_TV})",
                f"alpha_i = {float(alpha[i]):.4f}, alpha_j = {float(alpha[j]):.4f}, "
                f"total variation {tv:.2e}",
                _describe_weights(alpha, i, j),
            )


# ------------------------------------------------------------------------- (d)

# (d) float64, exact construction: measured relative errors <= 4.3e-15 for 2 S S^T,
# 2 (I - T T^T), einsum, S (S^T S)^-1 S^T and projector-plus-null-part answers (the solution
# over 200 secrets, each alternative over 20); the nearest mistakes are the column-vector
# convention (>= 0.044, it depends on the random null part) and no factor 2 (0.5).
RECOVERY_TOL = 1e-9


def _subspaces(trial):
    dims = distinct_dims(rng_for(f"theory-d-{trial}"), ["s", "t", "extra"], low=1, high=5)
    s, t = dims["s"], dims["t"]
    d = s + t + dims["extra"]
    basis = orthonormal_rows(s + t, d, generator(f"theory-d-basis-{trial}")).T  # (d, s + t)
    return d, s, t, basis[:, :s].contiguous(), basis[:, s:].contiguous()


def _recovery_mistakes(C, v_i, v_j):
    return {
        "missing the factor 2: c M = v_i / 2": v_i / 2,
        "recovers v_j: projected onto T's span instead of S's": v_j,
        "M is the identity: returns c itself": C,
        "returns v_i + v_j: projected onto both subspaces": v_i + v_j,
    }


def check_recovery_matrix(ns):
    """(d): recovery_matrix(S, T) gives M with c M = v_i for every v_i in span S, v_j in span T."""
    fn = answer(ns, "recovery_matrix", "(d)")
    for trial in range(3):
        d, s, t, S, T = _subspaces(trial)
        M = tensor(call(fn, (S, T), f"recovery_matrix(S ({d}x{s}), T ({d}x{t}))"), "(d): M")
        if tuple(M.shape) != (d, d):
            cause = "S^T S instead of S S^T" if tuple(M.shape) == (s, s) else None
            fail(f"(d): shape of M for d={d}", (d, d), tuple(M.shape), cause)
        gen = generator(f"theory-d-values-{trial}")
        v_i = torch.randn(6, s, generator=gen, dtype=F64) @ S.T  # (6, d): rows in span S
        v_j = torch.randn(6, t, generator=gen, dtype=F64) @ T.T  # (6, d): rows in span T
        C = (v_i + v_j) / 2
        mistakes = _recovery_mistakes(C, v_i, v_j)
        if not bool(torch.allclose(M, M.T)):
            mistakes["column-vector convention: M c = v_i holds but the question asks c M"] = (
                M @ C.T
            ).T
        check_close(
            f"(d): c M for 6 random (v_i, v_j), d={d}, dim S={s}, dim T={t}",
            C @ M,
            v_i,
            RECOVERY_TOL,
            mistakes=mistakes,
        )


# ------------------------------------------------------------------------- (e)

# (e) mean total variation between the weights and (1/2, 1/2) over 4000 key draws, at
# eps = 1e-6 and 1e-8, n in 5..16. Measured (worst of the two eps; the solution over 200
# secrets, every case over 20): beta = 10 -> 0.0042, 20 -> 0.0082, -log(eps) -> 0.0057,
# eps^-1/5 -> 0.0065, eps^-1/4 (the solution) -> 0.013; mistakes: beta = 1e3 and 1/sqrt(eps)
# -> >= 0.272 (over 200 secrets each), beta = 1 -> >= 0.36, beta = 1/eps and one mean only ->
# 0.50. 0.05 is 3.8x above the worst correct answer and 5.4x below the closest mistake; the
# sampling error of each mean is < 1e-3, so no secret moves an answer across it.
NOISY_TV = 0.05
NOISY_DRAWS = 4000


def sample_noisy_keys(mu, eps, n_samples, gen, x=None):
    """Keys k_l ~ N(mu_l, eps I); with x, key x has covariance eps I + mu_x mu_x^T / 2."""
    keys = mu + math.sqrt(eps) * torch.randn(n_samples, *mu.shape, generator=gen, dtype=F64)
    if x is not None:
        z = torch.randn(n_samples, 1, generator=gen, dtype=F64)
        keys[:, x] = keys[:, x] + z * mu[x] / math.sqrt(2.0)
    return keys  # (n_samples, n, d)


def check_query_for_noisy_keys(ns):
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
        keys = sample_noisy_keys(mu, eps, NOISY_DRAWS, generator(f"theory-e-keys-{trial}"))
        alpha = torch.softmax(keys @ q, dim=-1)  # (draws, n)
        tv = _tv_to_average(alpha, i, j)
        if beyond(float(tv.mean()), NOISY_TV):
            mean_alpha = alpha.mean(0)
            cause = _describe_weights(mean_alpha, i, j)
            if float(_tv_to_average(mean_alpha, i, j)) < NOISY_TV:
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


# ------------------------------------------------------------------------- (f)

F_SAMPLES = 20000
# Sample statistics of the student's keys, N = 20000 draws (the secret seeds the kernel's
# generator). Relative standard error of a sample variance: sqrt(2/N) = 1.0% (along mu_x and
# for the other key along its mean; averaged over d - 1 directions across mu_x it is smaller),
# so 10% is 10 standard errors: a correct sampler fails with probability ~1e-23. Measured
# (the solution over 200 secrets: 0 failures; MultivariateNormal, Cholesky, scaled mask over
# 20 each): correct samplers are at most 3.9% off; the named mistakes are off by factors of 2
# or more (closest: the 1/2 on the std, 0.25 instead of 0.5, 4.9x the tolerance; eps as the
# std: eps^2 instead of eps). The sample mean of key x along mu_x has standard error
# sqrt(0.5/N) = 0.005: the 0.05 bound is 10 of them (one z for all draws: >= 3.2x the bound).
STAT_RTOL = 0.1
MEAN_TOL = 0.05


def _f_instance(name):
    """n, d, x, eps and orthonormal means mu of one simulation, drawn from the secret."""
    rng = rng_for(name)
    n = rng.randint(5, 7)
    d = n + rng.randint(1, 3)
    x = rng.randrange(n)
    eps = 10 ** rng.uniform(-6, -4)
    return n, d, x, eps, orthonormal_rows(n, d, generator(f"{name}-mu"))


def _variance_along(keys, direction):
    proj = keys @ direction  # (N,)
    return float(proj.var())


def _variance_cause(name, got, eps):
    causes = {
        0.25 + eps: "mu_x mu_x^T / 2 is the covariance: scale by 1/sqrt(2), not 1/2",
        1.0 + eps: "missing the 1/2 in mu_x mu_x^T / 2",
        eps * eps: "eps is a variance: the noise std is sqrt(eps)",
        math.sqrt(eps): "eps is a variance: the noise std is sqrt(eps)",
    }
    cause = next((c for v, c in causes.items() if abs(got - v) <= STAT_RTOL * v), None)
    if cause is None and abs(got - eps) <= STAT_RTOL * eps and name.startswith("key x along"):
        cause = "key x was not changed (or the change went to another key)"
    if cause is None and name.startswith("key ") and not name.startswith("key x") and got > 0.2:
        cause = "the covariance change applies to key x only"
    return cause


def check_sample_keys(ns):
    """(f): sample_keys(mu, eps, x, n_samples, generator) draws keys with the changed covariance."""
    fn = answer(ns, "sample_keys", "(f)")
    n, d, x, eps, mu = _f_instance("theory-f-keys")
    gen = kernel_generator(ns, "theory-f-keys-kernel", "(f)")
    keys = tensor(
        call(fn, (mu, eps, x, F_SAMPLES, gen), f"sample_keys(mu, {eps:.3g}, {x}, {F_SAMPLES}, g)"),
        "(f): keys",
    )
    if tuple(keys.shape) != (F_SAMPLES, n, d):
        fail("(f): shape of the sampled keys", (F_SAMPLES, n, d), tuple(keys.shape))
    if not bool(torch.isfinite(keys).all()):
        fail("(f): the sampled keys", "finite entries", "NaN or inf")
    mean_err = float((keys.mean(0) - mu).norm(dim=-1).max())
    if beyond(mean_err, MEAN_TOL):
        fail(
            "(f): the sample mean of each key is its mu_l",
            f"max distance <= {MEAN_TOL}",
            f"{mean_err:.3f}",
            "the means mu_l were not added",
        )
    other = (x + 1) % n
    centred = keys[:, x] - keys[:, x].mean(0)
    P = torch.eye(d, dtype=F64) - torch.outer(mu[x], mu[x])
    measured = {
        "key x along mu_x": (0.5 + eps, _variance_along(keys[:, x], mu[x])),
        f"key {other} along mu_{other}": (eps, _variance_along(keys[:, other], mu[other])),
        "key x across mu_x (per direction)": (
            eps,
            float((centred @ P).pow(2).sum(-1).mean()) / (d - 1),
        ),
    }
    name = worst_beyond(
        [(name, abs(got - value), STAT_RTOL * value) for name, (value, got) in measured.items()]
    )
    if name is not None:
        value, got = measured[name]
        fail(
            f"(f): sample variance of {name} (n={n}, d={d}, x={x}, eps={eps:.3g})",
            f"{value:.4g} (+-{STAT_RTOL:.0%})",
            f"{got:.4g}",
            _variance_cause(name, got, eps),
        )


def _tip_statistics(C, v_i, v_j):
    """Coefficient s with c ~ v_j + s (v_i - v_j): mean, share near v_i, near v_j, in between."""
    diff = v_i - v_j
    s = (C - v_j) @ diff / (diff @ diff)
    return {
        "mean coefficient": float(s.mean()),
        "share within 0.1 of v_i": float((s > 0.9).double().mean()),
        "share within 0.1 of v_j": float((s < 0.1).double().mean()),
        "share in between (0.1 < s < 0.9)": float(((s >= 0.1) & (s <= 0.9)).double().mean()),
    }


# (f) simulated outputs: four statistics of the coefficient s (c ~ v_j + s (v_i - v_j)) of the
# student's N = 20000 outputs against the judge's own 100000-draw simulation of the same
# instance (x = i, beta in [8, 12], eps in [1e-6, 1e-4], j not next to x). Each statistic lies
# in [0, 1] up to e^-beta, so its standard deviation is <= 1/2 and the standard error of the
# difference <= 0.5 sqrt(1/20000 + 1/100000) = 0.0039: 0.03 is 7.7 of them (a correct
# simulation fails with probability < 1e-13). Measured (the solution over 200 secrets: 0
# failures; MultivariateNormal, Cholesky, scaled mask, einsum over 20 each): correct simulations
# are <= 0.0106 off (0.35 of the tolerance). The closest mistakes, over 200 secrets each: missing
# the 1/2 (in-between share 0.06-0.08 lower) >= 0.057 off (1.9x the tolerance, 7 standard
# errors beyond it), the 1/2 on the std >= 0.073 off (2.4x); 0 of 600 mistakes passed.
SIM_TOL = 0.03


def _sim_instance():
    n, d, x, eps, mu = _f_instance("theory-f-sim")
    rng = rng_for("theory-f-sim-pair")
    i = x
    j = rng.choice([k for k in range(n) if (k - x) % n not in (0, 1, n - 1)])
    beta = rng.uniform(8.0, 12.0)
    d_v = rng.randint(2, 5)
    V = torch.randn(n, d_v, generator=generator("theory-f-sim-values"), dtype=F64)
    return n, d, x, i, j, eps, beta, mu, V


def check_simulated_outputs(ns):
    """(f): simulate_outputs(...) returns outputs c whose statistics match the reference simulation."""
    fn = answer(ns, "simulate_outputs", "(f)")
    n, d, x, i, j, eps, beta, mu, V = _sim_instance()
    q = beta * (mu[i] + mu[j])
    gen = kernel_generator(ns, "theory-f-sim-kernel", "(f)")
    C = tensor(
        call(fn, (mu, V, q, eps, x, F_SAMPLES, gen), "simulate_outputs(mu, V, q, eps, x, N, g)"),
        "(f): outputs",
    )
    if tuple(C.shape) != (F_SAMPLES, V.shape[1]):
        fail(
            "(f): shape of the simulated outputs",
            (F_SAMPLES, V.shape[1]),
            tuple(C.shape),
            "one output c (a row) per draw of the keys",
        )
    if not bool(torch.isfinite(C).all()):
        fail("(f): the simulated outputs", "finite entries", "NaN or inf")
    keys = sample_noisy_keys(mu, eps, 5 * F_SAMPLES, generator("theory-f-sim-reference"), x=x)
    ref = _tip_statistics(torch.softmax(keys @ q, -1) @ V, V[i], V[j])
    got = _tip_statistics(C, V[i], V[j])
    name = worst_beyond([(name, abs(got[name] - value), SIM_TOL) for name, value in ref.items()])
    if name is not None:
        value = ref[name]
        fail(
            f"(f): {name} over {F_SAMPLES} simulated outputs "
            f"(x = i = {i}, j = {j}, n={n}, eps={eps:.3g}, the grader's query for (e))",
            f"{value:.3f} +- {SIM_TOL} (reference simulation)",
            f"{got[name]:.3f}",
            "c should tip to v_i or v_j about half the time each"
            if name != "mean coefficient"
            else None,
        )


# ------------------------------------------------------------------------- lab

# Float64: correct answers (einsum, bmm, max-subtracted or logsumexp softmax) agree to
# <= 2.6e-14, also with scores ~1e3 (the solution over 200 secrets, each alternative over 20);
# the closest named bug (1/sqrt(d) scaling) is at >= 0.18, a naive exp overflows to NaN. The
# experiment helpers (the solution over 200 secrets, each case over 20): weights_along correct
# <= 2.4e-15, mistakes >= 0.12 (u scaled to unit length); pair_distance correct <= 2.7e-16,
# mistakes >= 7.8e-3 (the largest difference instead of the total variation); recovery_errors
# correct <= 3.7e-16, mistakes >= 0.059 (relative L1 error). 1e-9 is far from both.
LAB_TOL = 1e-9


def _lab_attention_reference(Q, K, V):
    A = torch.softmax(Q @ K.transpose(-2, -1), dim=-1)  # (B, m, n)
    return A @ V, A


def _large_scores(Q, K, gen):
    """Q rescaled per query so its largest score has magnitude 800..1200 and is positive.

    Every row then has a score above exp's float64 overflow (709): an unstable softmax
    turns it into inf/inf = NaN whatever the secret draws.
    """
    S = Q @ K.transpose(-2, -1)  # (B, m, n)
    top, bottom = S.amax(-1), S.amin(-1)
    sign = torch.where(top >= -bottom, 1.0, -1.0).to(F64)
    peak = torch.maximum(top, -bottom)
    target = 800 + 400 * torch.rand(peak.shape, generator=gen, dtype=F64)
    return Q * (sign * target / peak)[..., None]


def _lab_instance(name, large=False):
    dims = distinct_dims(rng_for(name), ["B", "m", "n", "d", "d_v"], low=2)
    gen = generator(name)
    Q = torch.randn(dims["B"], dims["m"], dims["d"], generator=gen, dtype=F64) * 0.5
    K = torch.randn(dims["B"], dims["n"], dims["d"], generator=gen, dtype=F64)
    V = torch.randn(dims["B"], dims["n"], dims["d_v"], generator=gen, dtype=F64)
    if large:
        Q = _large_scores(Q, K, gen)
    return dims, Q, K, V


def check_lab_attention(ns):
    """Lab: attention(Q, K, V) -> (C, A), batched, no loops, by hand, stable for large scores."""
    fn = answer(ns, "attention", "Lab")
    rules.assert_no_fused_attention("attention", ns, "Lab attention")
    rules.assert_no_loops("attention", ns, "Lab attention")
    for name, large in (("lab-attention", False), ("lab-attention-large", True)):
        dims, Q, K, V = _lab_instance(name, large)
        out = call(fn, (Q, K, V), "attention(Q, K, V)")
        if type(out) not in (tuple, list) or len(out) != 2:
            fail("Lab: attention returns (C, A)", "a pair of tensors", type(out).__name__)
        C_ref, A_ref = _lab_attention_reference(Q, K, V)
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
        check_close(
            what,
            out[1],
            A_ref,
            LAB_TOL,
            mistakes=mistakes,
            shape_cause="A is (B, m, n): one row of n weights per query",
        )
        check_close(
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
    if type(value) is bool:
        return value
    if type(value) is torch.Tensor and value.dtype == torch.bool and value.numel() == 1:
        return bool(value.reshape(-1)[0])
    if type(value) is np.ndarray and value.dtype.kind == "b" and value.size == 1:
        return bool(value.reshape(-1)[0])
    fail(f"{what}: expected True or False", "a bool", f"{type(value).__name__} {repr(value)[:60]}")


def _float32_rows(gen, rows, n):
    """float32 softmax rows whose sums are off by rounding only (<= 3e-7, however summed).

    Draws until every row's sum is within 3e-7 of 1 in float32 (torch and numpy
    summation, a sequential running sum) and in float64, so a correct answer with
    ``tol=1e-6`` accepts them for every secret.
    """
    while True:
        A = torch.softmax(torch.randn(rows, n, generator=gen), -1)
        sums = (
            A.sum(-1),
            torch.from_numpy(A.numpy().sum(-1)),
            A.cumsum(-1)[:, -1],
            A.double().sum(-1),
        )
        if all(bool(((s.double() - 1).abs() <= 3e-7).all()) for s in sums):
            return A


def check_lab_is_distribution(ns):
    """Lab: is_distribution(A) is True exactly when every row of A is a probability vector."""
    fn = answer(ns, "is_distribution", "Lab")
    gen = generator("lab-distribution")
    good = torch.softmax(torch.randn(3, 5, 7, generator=gen, dtype=F64), -1)
    peaked = torch.softmax(40 * torch.randn(4, 6, generator=gen, dtype=F64), -1)
    picks = torch.randint(0, 5, (3,), generator=gen)
    one_hot = torch.eye(5, dtype=F64)[picks]
    float32 = _float32_rows(gen, 8, 300)
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


def check_lab_weights_along(ns):
    """Lab (b): weights_along(K, u, betas) = softmax(K (beta u)) for every beta at once, no loops."""
    fn = answer(ns, "weights_along", "Lab (b)")
    rules.assert_no_loops("weights_along", ns, "Lab (b)")
    rng = rng_for("lab-sharpen")
    n = rng.randint(6, 10)
    d = n + rng.randint(2, 5)
    gen = generator("lab-sharpen")
    norms = 0.5 + torch.rand(n, 1, generator=gen, dtype=F64)  # keys of unequal norms
    K = norms * torch.randn(n, d, generator=gen, dtype=F64)
    u = torch.randn(d, generator=gen, dtype=F64) * rng.uniform(0.5, 2.0)  # not of unit norm
    betas = torch.tensor(SHARPEN_BETAS, dtype=F64) * rng.uniform(0.1, 0.2)
    scores = betas[:, None] * (K @ u)[None, :]  # (m, n)
    check_close(
        f"Lab (b): weights for the queries beta u, {len(betas)} betas (n={n}, d={d})",
        call(fn, (K, u, betas), "weights_along(K, u, betas)"),
        torch.softmax(scores, -1),
        LAB_TOL,
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


def _even_split(B, n, idx_i, idx_j):
    target = torch.zeros(B, n, dtype=F64)
    rows = torch.arange(B)
    target[rows, idx_i] = 0.5
    target[rows, idx_j] = 0.5
    return target


def check_lab_pair_distance(ns):
    """Lab (c): pair_distance(A, I, J) = total variation of each row from 1/2 on I_b and J_b."""
    fn = answer(ns, "pair_distance", "Lab (c)")
    rules.assert_no_loops("pair_distance", ns, "Lab (c)")
    rng = rng_for("lab-pair")
    dims = distinct_dims(rng, ["B", "n"], low=4, high=9)
    B, n = dims["B"], dims["n"]
    pairs = [rng.sample(range(n), 2) for _ in range(B)]
    idx_i = torch.tensor([p[0] for p in pairs])
    idx_j = torch.tensor([p[1] for p in pairs])
    gen = generator("lab-pair")
    target = _even_split(B, n, idx_i, idx_j)
    share = torch.rand(B, 1, generator=gen, dtype=F64)  # rows from the even split to far from it
    A = share * target + (1 - share) * torch.softmax(
        3 * torch.randn(B, n, generator=gen, dtype=F64), -1
    )
    wrong_target = torch.zeros(B, n, dtype=F64)
    wrong_target[:, idx_i] = 0.5
    wrong_target[:, idx_j] = 0.5
    only_i = torch.zeros(B, n, dtype=F64)
    only_i[torch.arange(B), idx_i] = 1.0
    ref = 0.5 * (A - target).abs().sum(-1)
    check_close(
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


def check_lab_recovery_errors(ns):
    """Lab (d): recovery_errors(C, M, V) = |c_b M_b - v_b| / |v_b| for a batch, no loops."""
    fn = answer(ns, "recovery_errors", "Lab (d)")
    rules.assert_no_loops("recovery_errors", ns, "Lab (d)")
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
    check_close(
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


# Lab (e): the student's mean total variation per eps (N = 4000 draws of their own, from a
# kernel generator seeded by the secret) against the judge's mean over 10 N independent draws.
# The judge's queries are beta_e (mu_i + mu_j), one per eps, with the betas 8 .. 15 in a
# shuffled order, so an answer that uses one query for every eps is off by e^1.75 or more
# somewhere; the messages never state the queries (they are an answer of (e)).
# Tolerance per eps: 6 standard errors of the difference of the two means (the standard
# deviation estimated from the judge's draws; a correct answer fails with probability ~1e-8
# over the 5 eps) plus 2% of the reference (float32 draws, the estimate of the standard
# deviation). Measured (the solution over 200 secrets: 0 failures; each alternative over 20):
# correct answers reach at most 0.47 of the tolerance (|got - ref| / tol); the named mistakes
# (no 1/2, eps as the std, no noise, one noise for all keys, squared distance) are >= 10.5x the
# tolerance at their most telling eps, and one query for every eps >= 2.6x (some beta is 3.5 or
# more away from the first, so the mean distance is >= 30% off where the noise dominates).
NOISE_DRAWS = 4000
NOISE_SE = 6.0
NOISE_REL = 0.02


def check_lab_noise_sweep(ns):
    """Lab (e): noisy_key_errors(...) = mean total variation per eps, matching the reference."""
    fn = answer(ns, "noisy_key_errors", "Lab (e)")
    rules.assert_no_loops("noisy_key_errors", ns, "Lab (e)")
    rng = rng_for("lab-noise")
    n = rng.randint(5, 8)
    d = n + rng.randint(1, 3)
    i, j = rng.sample(range(n), 2)
    mu = orthonormal_rows(n, d, generator("lab-noise-mu"))
    exponents = torch.linspace(-8, -2, 5, dtype=F64) + rng.uniform(-0.25, 0.25)
    eps_values = 10.0**exponents
    betas = torch.tensor(rng.sample([8.0, 9.75, 11.5, 13.25, 15.0], 5), dtype=F64)
    betas = betas + rng.uniform(-0.25, 0.25)
    queries = betas[:, None] * (mu[i] + mu[j])  # (E, d): query e for eps e
    gen = kernel_generator(ns, "lab-noise-kernel", "Lab (e)")
    got = tensor(
        call(
            fn,
            (mu, i, j, queries, eps_values, NOISE_DRAWS, gen),
            f"noisy_key_errors(mu, {i}, {j}, queries, eps_values, {NOISE_DRAWS}, g)",
        ),
        "Lab (e): errors",
    )
    if tuple(got.shape) != (len(eps_values),):
        fail("Lab (e): one error per eps", (len(eps_values),), tuple(got.shape))
    draws = 10 * NOISE_DRAWS
    noise = torch.randn(len(eps_values), draws, n, d, generator=generator("lab-noise"), dtype=F64)
    keys = mu + eps_values.sqrt()[:, None, None, None] * noise
    scores = (keys @ queries[:, None, :, None])[..., 0]  # (eps, draws, n)
    tv = _tv_to_average(torch.softmax(scores, -1), i, j)  # (eps, draws)
    ref, sd = tv.mean(-1), tv.std(-1)
    tol = NOISE_SE * sd * math.sqrt(1 / NOISE_DRAWS + 1 / draws) + NOISE_REL * ref
    k = worst_beyond(
        [(k, float((got[k] - ref[k]).abs()), float(tol[k])) for k in range(len(eps_values))]
    )
    if k is not None:
        fail(
            f"Lab (e): mean total variation at eps={float(eps_values[k]):.3g} "
            f"(n={n}, i={i}, j={j}, with queries[{k}])",
            f"{float(ref[k]):.3e} +- {float(tol[k]):.1e}",
            f"{float(got[k]):.3e}",
            "eps is the variance of the key noise (std sqrt(eps)), queries[e] goes with "
            "eps_values[e]; total variation is half the L1 distance to (1/2 on i, 1/2 on j)",
        )


# grade_id of each test cell -> the check the judge runs for it
# (tests/test_assignments.py: exactly the test cells of the source notebook)
CHECKS = {
    "c_query_for_average": check_query_for_average,
    "d_recovery_matrix": check_recovery_matrix,
    "e_query_for_noisy_keys": check_query_for_noisy_keys,
    "f_sample_keys": check_sample_keys,
    "f_simulation_statistics": check_simulated_outputs,
    "lab_attention": check_lab_attention,
    "lab_weights_distribution": check_lab_is_distribution,
    "lab_sharpen_weights": check_lab_weights_along,
    "lab_pair_distance": check_lab_pair_distance,
    "lab_recovery_errors": check_lab_recovery_errors,
    "lab_noise_sweep": check_lab_noise_sweep,
}
