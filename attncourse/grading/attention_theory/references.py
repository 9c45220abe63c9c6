"""Float64 references of ``attention_theory`` and the secret instances they are computed on.

The attention of this set has no scaling: ``alpha = softmax(K q)``, ``c = alpha V`` (keys and
values are the rows of K and V), computed here with torch's numerically stable softmax. The
simulations' references are the judge's own simulations of the same instance. Named mistakes
are dicts from the mistake's description to the wrong output it gives.
"""

import math

import torch

from attncourse.judge.checks import distinct_dims, generator, rng_for

F64 = torch.float64


def orthonormal_rows(n: int, d: int, gen: torch.Generator) -> torch.Tensor:
    """n orthonormal vectors in R^d (n <= d) as the rows of an (n, d) float64 tensor."""
    q, _ = torch.linalg.qr(torch.randn(d, n, generator=gen, dtype=F64))
    return q.T.contiguous()


def weights(q: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """The set's attention weights softmax(K q) for one query (d,) and keys (n, d)."""
    return torch.softmax(K @ q, dim=-1)


def tv_to_average(alpha: torch.Tensor, i: int, j: int) -> torch.Tensor:
    """Total variation of each row of weights from 1/2 on key i and 1/2 on key j."""
    target = torch.zeros_like(alpha)
    target[..., i] = 0.5
    target[..., j] = 0.5
    return 0.5 * (alpha - target).abs().sum(-1)


# ---------------------------------------------------------------------------- (d)


def subspaces(trial: int) -> tuple[int, int, int, torch.Tensor, torch.Tensor]:
    """d, dim S, dim T and orthonormal bases S (d, s), T (d, t) of one secret trial of (d)."""
    dims = distinct_dims(rng_for(f"theory-d-{trial}"), ["s", "t", "extra"], low=1, high=5)
    s, t = dims["s"], dims["t"]
    d = s + t + dims["extra"]
    basis = orthonormal_rows(s + t, d, generator(f"theory-d-basis-{trial}")).T  # (d, s + t)
    return d, s, t, basis[:, :s].contiguous(), basis[:, s:].contiguous()


def recovery_mistakes(
    C: torch.Tensor, v_i: torch.Tensor, v_j: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Named wrong values of c M in (d)."""
    return {
        "missing the factor 2: c M = v_i / 2": v_i / 2,
        "recovers v_j: projected onto T's span instead of S's": v_j,
        "M is the identity: returns c itself": C,
        "returns v_i + v_j: projected onto both subspaces": v_i + v_j,
    }


# ---------------------------------------------------------------------------- (e), (f)


def sample_noisy_scores(
    mu: torch.Tensor,
    q: torch.Tensor,
    eps: float | torch.Tensor,
    n_samples: int,
    gen: torch.Generator,
    x: int | None = None,
) -> torch.Tensor:
    """Scores k_l . q of keys k_l ~ N(mu_l, eps I) (with x: key x's covariance is
    eps I + mu_x mu_x^T / 2), drawn directly: (n_samples, n).

    The keys' scores in distribution, d times cheaper than drawing keys: the noise of key l
    is N(0, eps I), so its score
    is mu_l . q + sqrt(eps) |q| g_l with g_l ~ N(0, 1), independent across keys; key x's
    extra z mu_x / sqrt(2) adds z (mu_x . q) / sqrt(2). ``mu`` (n, d) or (E, n, d) with ``q``
    (d,) or (E, d) and ``eps`` a number or (E,): a leading axis E of sweeps, (E, n_samples, n).
    """
    mean = (mu @ q[..., None])[..., 0]  # (n,) or (E, n)
    spread = torch.as_tensor(eps, dtype=F64).sqrt() * q.norm(dim=-1)  # () or (E,)
    shape = (*mean.shape[:-1], n_samples, mean.shape[-1])
    g = torch.randn(shape, generator=gen, dtype=F64)
    scores = mean[..., None, :] + spread[..., None, None] * g
    if x is not None:
        z = torch.randn(*shape[:-1], generator=gen, dtype=F64)
        scores[..., x] += z * mean[..., x, None] / math.sqrt(2.0)
    return scores


def f_instance(name: str) -> tuple[int, int, int, float, torch.Tensor]:
    """n, d, x, eps and orthonormal means mu of one simulation, drawn from the secret."""
    rng = rng_for(name)
    n = rng.randint(5, 7)
    d = n + rng.randint(1, 3)
    x = rng.randrange(n)
    eps = 10 ** rng.uniform(-6, -4)
    return n, d, x, eps, orthonormal_rows(n, d, generator(f"{name}-mu"))


def variance_along(keys: torch.Tensor, direction: torch.Tensor) -> float:
    """Sample variance of the keys (N, d) along ``direction``."""
    proj = keys @ direction  # (N,)
    return float(proj.var())


def tip_statistics(C: torch.Tensor, v_i: torch.Tensor, v_j: torch.Tensor) -> dict[str, float]:
    """Coefficient s with c ~ v_j + s (v_i - v_j): mean, share near v_i, near v_j, in between."""
    diff = v_i - v_j
    s = (C - v_j) @ diff / (diff @ diff)
    return {
        "mean coefficient": float(s.mean()),
        "share within 0.1 of v_i": float((s > 0.9).double().mean()),
        "share within 0.1 of v_j": float((s < 0.1).double().mean()),
        "share in between (0.1 < s < 0.9)": float(((s >= 0.1) & (s <= 0.9)).double().mean()),
    }


def sim_instance() -> tuple[int, int, int, int, int, float, float, torch.Tensor, torch.Tensor]:
    """The secret instance of the simulation in (f): n, d, x, i, j, eps, beta, mu, V."""
    n, d, x, eps, mu = f_instance("theory-f-sim")
    rng = rng_for("theory-f-sim-pair")
    i = x
    j = rng.choice([k for k in range(n) if (k - x) % n not in (0, 1, n - 1)])
    beta = rng.uniform(8.0, 12.0)
    d_v = rng.randint(2, 5)
    V = torch.randn(n, d_v, generator=generator("theory-f-sim-values"), dtype=F64)
    return n, d, x, i, j, eps, beta, mu, V


# ---------------------------------------------------------------------------- lab


def lab_attention_reference(
    Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The lab's batched attention (C, A) in float64, unscaled."""
    A = torch.softmax(Q @ K.transpose(-2, -1), dim=-1)  # (B, m, n)
    return A @ V, A


def large_scores(Q: torch.Tensor, K: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
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


def lab_instance(
    name: str, large: bool = False
) -> tuple[dict[str, int], torch.Tensor, torch.Tensor, torch.Tensor]:
    """Secret dims, Q, K, V of one lab trial (with scores ~1e3 when ``large``)."""
    dims = distinct_dims(rng_for(name), ["B", "m", "n", "d", "d_v"], low=2)
    gen = generator(name)
    Q = torch.randn(dims["B"], dims["m"], dims["d"], generator=gen, dtype=F64) * 0.5
    K = torch.randn(dims["B"], dims["n"], dims["d"], generator=gen, dtype=F64)
    V = torch.randn(dims["B"], dims["n"], dims["d_v"], generator=gen, dtype=F64)
    if large:
        Q = large_scores(Q, K, gen)
    return dims, Q, K, V


def float32_rows(gen: torch.Generator, rows: int, n: int) -> torch.Tensor:
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


def even_split(B: int, n: int, idx_i: torch.Tensor, idx_j: torch.Tensor) -> torch.Tensor:
    """Rows of weights 1/2 on I_b and 1/2 on J_b."""
    target = torch.zeros(B, n, dtype=F64)
    rows = torch.arange(B)
    target[rows, idx_i] = 0.5
    target[rows, idx_j] = 0.5
    return target
