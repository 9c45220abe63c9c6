"""Simulations of ``attention_theory``, (f) and the lab's noise sweep (e): the student's samplers,
judged by their statistics against the judge's own simulation of the same instance."""

import math

import torch

from attncourse.judge.checks import answer, call, fail, generator, rng_for, seed_for, tensor
from attncourse.judge.remote import Remote, StudentNamespace, StudentRaised
from attncourse.judge.rulebook import NO_LOOPS, Rule, prove, proves

from .references import (
    F64,
    f_instance,
    orthonormal_rows,
    sample_noisy_scores,
    sim_instance,
    tip_statistics,
    tv_to_average,
    variance_along,
)
from .tolerances import (
    F_SAMPLES,
    MEAN_TOL,
    NOISE_DRAWS,
    NOISE_REL,
    NOISE_SE,
    SIM_TOL,
    STAT_RTOL,
    beyond,
    worst_beyond,
)


def kernel_generator(ns: StudentNamespace, test_id: str, part: str) -> Remote:
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


def _variance_cause(name, got, eps):
    """The mistake a wrong sample variance shows, if it is a named one."""
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


def check_sample_keys(ns: StudentNamespace) -> None:
    """(f): sample_keys(mu, eps, x, n_samples, generator) draws keys with the changed covariance."""
    fn = answer(ns, "sample_keys", "(f)")
    n, d, x, eps, mu = f_instance("theory-f-keys")
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
        "key x along mu_x": (0.5 + eps, variance_along(keys[:, x], mu[x])),
        f"key {other} along mu_{other}": (eps, variance_along(keys[:, other], mu[other])),
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


def check_simulated_outputs(ns: StudentNamespace) -> None:
    """(f): simulate_outputs(...) returns outputs c whose statistics match the reference simulation."""
    fn = answer(ns, "simulate_outputs", "(f)")
    n, d, x, i, j, eps, beta, mu, V = sim_instance()
    q = beta * (mu[i] + mu[j])
    kernel_gen = kernel_generator(ns, "theory-f-sim-kernel", "(f)")
    C = tensor(
        call(
            fn,
            (mu, V, q, eps, x, F_SAMPLES, kernel_gen),
            "simulate_outputs(mu, V, q, eps, x, N, g)",
        ),
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
    gen = generator("theory-f-sim-reference")
    scores = sample_noisy_scores(mu, q, eps, 5 * F_SAMPLES, gen, x=x)
    ref = tip_statistics(torch.softmax(scores, -1) @ V, V[i], V[j])
    got = tip_statistics(C, V[i], V[j])
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


@proves(Rule(NO_LOOPS, "noisy_key_errors", "Lab (e)"))
def check_lab_noise_sweep(ns: StudentNamespace) -> None:
    """Lab (e): noisy_key_errors(...) = mean total variation per eps, matching the reference."""
    fn = answer(ns, "noisy_key_errors", "Lab (e)")
    prove(check_lab_noise_sweep.rules, ns)
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
    mus = mu.expand(len(eps_values), n, d)
    scores = sample_noisy_scores(mus, queries, eps_values, draws, generator("lab-noise"))
    tv = tv_to_average(torch.softmax(scores, -1), i, j)  # (eps, draws)
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
