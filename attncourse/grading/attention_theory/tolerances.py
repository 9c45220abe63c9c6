"""Thresholds of ``attention_theory``'s checks, each with the error bound it comes from and the
margins measured by ``tests/grading/attention_theory/margins_attention_theory.py``; the statistical ones hold for every
secret with overwhelming probability. Every statistical threshold is compared through
:func:`beyond`, so the margins script can record each comparison.
"""

import math
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")  # what a comparison names

# (c): weights within 1e-3 of (1/2, 1/2, 0, ...) in total variation, as the question states
# (the text's own threshold, so its 47x to the nearest mistake stays: beta = 3 at n = 4 is
# wrong by the text's words). beta = log(1e4 n), a query correct by the text, is at 4.2e-5.
# Measured (tests/grading/attention_theory/margins_attention_theory.py; the solution over 200 secrets, every case over
# 20): correct answers (beta = 20 .. 1e4, shifted by sum(K) or by a vector off the keys) <=
# 1.1e-8 (the solution, beta = 20, n = 12); the closest mistake (beta = 3, at n = 4) >= 0.047,
# then beta = 1 at >= 0.27. 1e-3 is 1e5x above the one and 47x below the other.
AVERAGE_TV = 1e-3

# (d) float64, exact construction (the text: every step in the inputs' dtype). Bound: a few
# float64 products of d <= 14 terms, relative error <= ~14 u = 1.6e-15 each (u = 1.1e-16).
# Measured relative errors <= 9.0e-15 for 2 S S^T, 2 (I - T T^T), einsum, S (S^T S)^-1 S^T,
# 2 S pinv(S), a QR basis and projector-plus-null-part answers (the solution over 200
# secrets, each alternative over 20); the nearest mistakes: a float32 step (>= 1.6e-8, which
# the text forbids), the column-vector convention (>= 0.044, it depends on the random null
# part) and no factor 2 (0.5). 1e-10 is 1.1e4x above the worst correct answer and 160x below
# a float32 step (1e-9 left 16x).
RECOVERY_TOL = 1e-10

# (e) mean total variation between the weights and (1/2, 1/2) over 4000 key draws (their
# scores drawn directly: references.sample_noisy_scores, the same distribution), at
# eps = 1e-6 and 1e-8, n in 5..16. Measured (worst of the two eps; the solution over 200
# secrets, every case over 20): beta = 10 -> 0.0042, 20 -> 0.0082, -log(eps) -> 0.0057,
# eps^-1/5 -> 0.0065, eps^-1/4 (the solution) -> 0.013; mistakes: beta = 1e3 and 1/sqrt(eps)
# -> >= 0.272 (over 200 secrets each), beta = 1 -> >= 0.36, beta = 1/eps and one mean only ->
# 0.50. 0.05 is 3.8x above the worst correct answer and 5.4x below the closest mistake; the
# sampling error of each mean is < 1e-3, so no secret moves an answer across it.
NOISY_TV = 0.05
NOISY_DRAWS = 4000

F_SAMPLES = 20000  # draws of the student's sampler and simulation in (f)
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

# (f) simulated outputs: four statistics of the coefficient s (c ~ v_j + s (v_i - v_j)) of the
# student's N = 20000 outputs against the judge's own 100000-draw simulation of the same
# instance (x = i, beta in [8, 12], eps in [1e-6, 1e-4], j not next to x; the judge draws the
# scores directly, the same distribution as drawing keys, d times cheaper). Each statistic lies
# in [0, 1] up to e^-beta, so its standard deviation is <= 1/2 and the standard error of the
# difference <= 0.5 sqrt(1/20000 + 1/100000) = 0.0039: 0.03 is 7.7 of them (a correct
# simulation fails with probability < 1e-13). Measured (the solution over 200 secrets: 0
# failures; MultivariateNormal, Cholesky, scaled mask, einsum over 20 each): correct simulations
# are <= 0.0106 off (0.35 of the tolerance). The closest mistakes, over 200 secrets each: missing
# the 1/2 (in-between share 0.06-0.08 lower) >= 0.057 off (1.9x the tolerance, 7 standard
# errors beyond it), the 1/2 on the std >= 0.073 off (2.4x); 0 of 600 mistakes passed.
SIM_TOL = 0.03

# Lab, float64 (the text: every step in the inputs' dtype, "checked to about 1e-10"): correct
# answers (einsum, bmm, max-subtracted or logsumexp softmax, outputs preallocated and written
# in place) agree to <= 2.6e-14, also with scores ~1e3 (the solution over 200 secrets, each
# alternative over 20; bound: exp and the row sums at scores ~1e3 lose ~1e3 u = 1.1e-13);
# the nearest named mistake is a float32 step (a float32 softmax >= 4.0e-8, a float32 total
# variation >= 1.4e-8, over 20 secrets), then 1/sqrt(d) scaling (>= 0.18); a naive exp
# overflows to NaN. The experiment helpers (the solution over 200 secrets, each case over 20):
# weights_along correct <= 2.4e-15, mistakes >= 0.12 (u scaled to unit length);
# pair_distance correct <= 2.7e-16, mistakes >= 7.8e-3 (the largest difference instead of
# the total variation); recovery_errors correct <= 3.7e-16, mistakes >= 0.059 (relative L1
# error). 1e-10 is 3800x above the worst correct answer and 140x below a float32 step (1e-9,
# the tolerance before, left 14x).
LAB_TOL = 1e-10
# The text: "compute in their inputs' dtype: the labs are checked to about 1e-9, so a step
# taken in float32 (a float32 softmax included), which rounds to about 1e-7, loses the points
# of that check"; it holds for (d) too (all code answers). A float32 step is a mistake here,
# and is named one only on the evidence: an error above LAB_TOL and at most FLOAT32_BAND.
# Measured: float32 softmax, float32 scores, float32 total variation 2.5e-8 .. 7e-8; every
# named mistake is at 7.8e-3 or more, so nothing else lands in the band.
FLOAT32_BAND = 1e-4

# Lab (e): the student's mean total variation per eps (N = 4000 draws of their own, from a
# kernel generator seeded by the secret) against the judge's mean over 10 N independent draws
# of the scores (drawn directly: 0.12 s a secret instead of 0.43 s drawing the keys).
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


def beyond(value: float, limit: float) -> bool:
    """True when a measured ``value`` exceeds its ``limit`` (NaN does).

    Every statistical threshold of this assignment is compared here, so
    ``tests/grading/attention_theory/margins_attention_theory.py`` can record each comparison.
    """
    return not value <= limit


def worst_beyond(comparisons: Sequence[tuple[T, float, float]]) -> T | None:
    """Of ``(item, value, limit)`` triples, the item whose value exceeds its limit by the
    largest factor, or None when all are within (every comparison goes through :func:`beyond`)."""
    over = [
        (value / limit if value == value and limit > 0 else math.inf, index)
        for index, (_, value, limit) in enumerate(comparisons)
        if beyond(value, limit)
    ]
    return comparisons[max(over)[1]][0] if over else None
