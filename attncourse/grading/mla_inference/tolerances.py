"""Thresholds of ``mla_inference``'s checks, each with the error bound it comes from and the
margins measured by ``tests/grading/mla_inference/margins_mla_inference.py`` (the worst correct answer, the closest
named mistake).
"""

# Thresholds (relative error, float64), with the margins measured by
# tests/grading/mla_inference/margins_mla_inference.py: every correct case over 100 secrets, every case of Parts 1-3
# over 20 (75 cases; no wrong verdict in either run).
#
# rope on float64 x, the angles in float64 as the text demands. Bound: angles t * theta_i up to
# 4000 rad carry 4000 * 2^-53 = 4.4e-13 of absolute error, cos, sin and the 2x2 product a few
# 2^-53 more: about 1e-12. Worst correct 1.2e-13 (theta through exp/log, positions up to 4000: 8e3x below);
# closest mistake "angles in float32" 2.4e-7 (230x above: float32 keeps theta_0 = 1 and the
# integer positions exact, so only its cos/sin round); the closest structural mistake
# ("positions plus one") is at 0.30.
ROPE_TOL = 1e-9
# merged_score_matrix: the rotations come from rope (float64 angles); the products may be
# float32. Bound: W_Q_h, W_UK_h and the rotated matrices rounded to float32 (2u) and a product
# summed over d_h <= 10 terms ((d_h + 1) u) with kappa = sqrt(d_h) <= 3.2 for the test's randn
# matrices: (2 + 11) * 3.2 * 6.0e-8 = 2.5e-6. Measured (100 secrets): worst correct 1.3e-7
# (float32_product; float64 answers 2.6e-15); closest mistake "no rotation" 0.18 (6e4x above).
MERGED_TOL = 3e-6
# MLA forward, latent_query, the decode cache and decoding. The text asks for float64 only in
# RoPE's angles: float32 constants (a scale torch.sqrt(torch.tensor(d_h + d_R))), a float32
# softmax (softmax(..., dtype=torch.float32), DeepSeek's own idiom) and float32 matmuls are
# correct. Bound: every stage of the forward (projections, scores, scale, softmax, weighted
# sum, out-projection: <= 8) rounded to float32 (u = 2^-24 = 6.0e-8) with sums over n <= 16
# terms adds at most (n + 2) u times kappa <= 4 (the growth of a relative error through the
# softmax of scores of order one, weights N(0, 1/fan_in)): 8 * 18 * 4 * 6.0e-8 = 3.5e-5.
# Measured (margins_mla_inference.py --secrets 100 --correct-only, 25 correct cases of Parts
# 2-4): worst correct 1.9e-7 (decode_softmax_and_scale_in_float32, 160x below; a float32
# softmax alone is 1e-8 to 5e-8 and lost points under the old 1e-8), float64 answers 1.3e-15,
# no wrong verdict. Closest mistake 2.0e-2 ("positions counted from 1" in the step from the
# judge's cache): 670x above.
VALUES_TOL = 3e-5
# An answer between VALUES_TOL and this band is named a precision mistake only on evidence: its
# result is in a dtype below float64 (half precision somewhere: bfloat16/float16 round at 4e-3 /
# 5e-4); every structural mistake measured is at 2.0e-2 or more.
PRECISION_BAND = 1e-3
# rope on a float32 x (Part 1(a) checks the dtype on float32 and float64 inputs), positions
# 20,000-60,000: the angles in float64, cos and sin rounded to float32 (u each) and
# a * cos - b * sin in float32 (2u more): bound 3u * sqrt(2) = 2.5e-7. Measured (100 secrets):
# worst correct 5.2e-8 (8x below); closest mistake "angles in x's dtype" (float32 angles for
# a float32 x) 4.6e-5 (115x above).
ROPE_FLOAT32_TOL = 4e-7
# The student's rope counts as a rotation (for carrying it forward) when it keeps every
# vector's length to this relative error: float32 angles keep it to ~1e-7; "cos only" and
# other non-rotations are off by >= 0.1.
ROTATION_TOL = 1e-6
