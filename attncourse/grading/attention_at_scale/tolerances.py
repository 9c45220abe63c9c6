"""Thresholds of ``attention_at_scale``'s checks, each with the error bound it comes from and the
margins measured by ``tests/grading/attention_at_scale/margins_attention_at_scale.py`` (the worst correct answer, the
closest named mistake).
"""

# Values of Parts 1(a), 2, 3 and 5 (relative error, float64). The text allows float32 arithmetic
# everywhere. Bound: a row of n <= 64 scores through <= 8 float32 stages (scores, max, exp, sum,
# rescaling, weighted sum, division, log), each rounding at u = 2^-24 = 6.0e-8 and summing at
# most (n + 2) u, amplified by kappa <= 4 through the softmax of scores of order one:
# 8 * 66 * 4 * 6.0e-8 = 1.3e-4. Scores in the thousands (the overflow trials) are passed in the
# dtype they are drawn in, so only exp(s - m), |s - m| <= 40 in the terms that count, rounds:
# 40 u = 2.4e-6; a softmax computed as exp(s - lse) in float32 (a correct idiom) rounds lse
# near 1000 to 3e-5. Measured (margins_attention_at_scale.py --secrets 10, all 67 cases): worst
# correct 2.0e-5 (p1_softmax:softmax_as_exp_of_s_minus_lse, float32 scores near 1000; float64
# answers ~1e-15); closest mistake 1.6e-3 to 3.8e-3 (p5_split:padding_not_masked: the padded
# slots' exp(0 - m) is small when the real scores are large). Within one check the two are
# further apart: Part 5's worst correct is 9.3e-7 (1,700x below its closest mistake), Part 1's
# float32 idiom meets only overflowing mistakes (inf or NaN).
VALUES_TOL = 1e-4
# A result between VALUES_TOL and this band is named a precision mistake only when its dtype is
# below float32 (half precision rounds at 4e-3 / 5e-4); every structural mistake measured is at
# 1e-2 or more.
PRECISION_BAND = 1e-3
# Part 1(b)'s lse_mine, asked to 3 decimal places: rounding costs at most 5e-4 (absolute); the
# closest named mistake, the max alone, is off by log(1 + e^-g + ...) >= log(1 + e^-2) = 0.127
# (every instance has a second score g = 1 or 2 below the max): 250x the worst correct answer.
LSE_MINE_TOL = 2e-3
# Part 4(b)'s io_ratio_mine, asked to 4 significant digits: rounding costs at most 5e-4
# (relative); the closest named mistake, K and V counted once, is off by a factor of at least 2.
RATIO_MINE_TOL = 1e-3

# Part 6 (margins: tests/grading/attention_at_scale/part6_margins.py, worst correct, closest mistake).
# Causality: the largest change of an output at t when only tokens after t changed, relative to
# the largest output. Bound: a masked score is exp(-inf) = 0 exactly, so a causal layer's row t
# is computed from the same numbers whatever follows; only kernels that sum in another order for
# another batch move it, by a few float64 units (1e-15), or float32 units (6e-8 x the ~20 terms
# of a row: 1e-6) where a layer computes in float32 inside. Measured: see MARGINS below.
CAUSAL_TOL = 1e-5
# The past must matter: changing token 0 moves the outputs after it by more than this (a
# layer that never attends moves them by exactly 0; an attending one by about 1e-1).
ATTENDS_TOL = 1e-6
# train_step's returned loss against the float64 loss of the model's own logits before the
# step: float64 equal to 1e-15; a loss computed from float32 logits off by 1e-7; the closest
# named mistake (the loss after one step) is off by about 1e-3 relative.
LOSS_TOL = 1e-5
# One step lowers the loss on the fixed batch by at least this (relative): Adam moves every
# weight by about lr = 3e-3 against its gradient; the measured decrease is ~1e-2. Mistakes
# leave it equal (no step) or raise it (ascent).
DECREASE_TOL = 1e-4
