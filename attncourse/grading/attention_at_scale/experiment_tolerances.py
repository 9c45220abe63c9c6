"""Thresholds of Part 6's checks, each with the error bound it comes from and the margins
measured by ``tests/margins_attention_at_scale_part6.py`` (worst correct, closest mistake).
"""

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
