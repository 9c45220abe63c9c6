"""Thresholds of ``attention_worksheet``'s checks, each with the error bound it comes from and the
margins measured over 500 secrets by ``tests/margins_attention_worksheet.py``.
"""

# Integer answers typed by hand are exact; float64 computations are within 1e-15 (measured,
# 500 secrets: Q4(c) at most 2.6e-16, Q3(a) and Q5 exactly 0). The nearest mistakes of the
# case table are at 0.17 (Q5(a) interleaved, Q5(b) a mistyped entry), 0.22 (Q3(a) a typo)
# and 0.69 (Q4(c), over 500 secrets).
EXACT_TOL = 1e-9
# Q3(b): Y typed by hand, every entry within 0.02 of Y from the rounded weights (multiples of
# 0.5, exact) or from the exact softmax, whichever is nearer. The text asks for two decimals
# where a number is not exact: rounding adds at most 0.005 (a float32 softmax 2.4e-7 relative,
# measured over 1000 ids); the two references differ by up to 3e-3 max|Y| (up to 0.2), so each
# is a reference of its own, not a band around one. Every instance is drawn so that each named
# mistake (no W^(o), A^T, W^(o) H, X for V, softmax over columns) is 1 or more off in some
# entry from both; a one-entry typo of 0.5 is 0.5 off. 0.02 is 4x above the worst correct typed
# answer and 25x below the nearest mistake (a relative 1e-2 let a typo of 0.5 pass at |Y| ~ 60).
TYPED_TOL = 0.02
# nn.Linear holds float32 by default: over 500 secrets a correct weight copied from float64
# and the layer's output on a float32 input were within 1.6e-7 of W^T and X W (measured);
# every wrong weight or forward of the case table was off by more than 0.19.
FLOAT32_TOL = 1e-5
