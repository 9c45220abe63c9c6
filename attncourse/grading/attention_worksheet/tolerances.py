"""Thresholds of ``attention_worksheet``'s checks, each with the error bound it comes from and the
margins measured over 500 secrets by ``tests/grading/attention_worksheet/margins_attention_worksheet.py``.
"""

# Q3(a), Q5: integer answers, typed or computed, are exact (integer products are exact in
# float32 and float64: measured 0 over 1000 ids). The nearest mistakes of the case table are
# at 0.17 (Q5(a) interleaved, Q5(b) a mistyped entry) and 0.22 (Q3(a) a typo): any threshold
# between 0 and 1e-3 separates them; 1e-9 leaves room for an answer computed in float64.
EXACT_TOL = 1e-9
# Q3(b): Y typed by hand, every entry within 0.02 of Y from the rounded weights (multiples of
# 0.5, exact) or of Y from the exact softmax, whichever is nearer (the two differ by up to
# 3e-3 max|Y|, up to 0.2, so each is a reference of its own, not a band around one). The text
# asks for two decimals where a number is not exact. Measured over 1000 ids (largest entry
# off): the exact Y typed to 3 decimals 4.9e-4, to 2 decimals 5.0e-3 (to 1, which the text
# does not allow, 4.8e-2), a float32 softmax 6.6e-6. Every instance is drawn so that each named
# mistake (no W^(o), A^T V, W^(o) H, X for V, softmax over columns) is 1 or more off in some
# entry from both references (measured: 1.0 at the least); a one-entry typo of 0.5 is 0.5 off.
# 0.02 is 4x above the worst correct typed answer and 25x below the nearest mistake (the
# relative 1e-2 it replaces let a typo of 0.5 pass where |Y| ~ 60).
TYPED_TOL = 0.02
# Q3(c) and Q4(c): float32 is allowed (nn.Linear holds float32 by default; the worksheet says
# nothing of precision). Bound: a float32 product X W with inner size d rounds each entry to
# within gamma_d = d u / (1 - d u) (u = 6.0e-8) of |X| |W|; with d <= 132 here that is 7.9e-6
# relative to |X| |W|, and about sqrt(d) u ~ 7e-7 relative to X W for random data. Measured
# over 500 secrets: a weight copied from float64 to float32 and the layer's output on a
# float32 input within 1.6e-7 of W^T and X W; Q4(c) computed in float32 (X.float() @
# W.float(), both splits) within 2.2e-7 of the float64 reference, float64 answers within
# 2.6e-16. Nearest mistakes: 0.19 (Q3(c), every wrong weight or forward of the case table),
# 0.69 (Q4(c), over 500 secrets). 3e-5 is 136x above the worst correct answer and 6300x below
# the nearest mistake.
FLOAT32_TOL = 3e-5
