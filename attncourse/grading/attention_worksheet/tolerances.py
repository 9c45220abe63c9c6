"""Thresholds of ``attention_worksheet``'s checks, each with the error bound it comes from and the
margins measured over 500 secrets by ``tests/margins_attention_worksheet.py``.
"""

# Integer answers typed by hand are exact; float64 computations are within 1e-15 (measured,
# 500 secrets: Q4(c) at most 2.6e-16, Q3(a) and Q5 exactly 0). The nearest mistakes of the
# case table are at 0.17 (Q5(a) interleaved, Q5(b) a mistyped entry), 0.22 (Q3(a) a typo)
# and 0.69 (Q4(c), over 500 secrets).
EXACT_TOL = 1e-9
# Y computed from the rounded weights is [[4, 0], [2, 1]]; from the exact softmax it is
# [[3.986, 0.007], [2, 1]] (relative distance 3.4e-3); typed to 2 decimals, 3.1e-3.
# The nearest wrong answers of the case table (column order W^(o) H, one mistyped entry)
# are at 0.22 from both references, forgot W^(o) at 0.49 (measured): 1e-2 leaves a 3x
# margin above the exact answer and 22x below the nearest mistake.
APPROX_TOL = 1e-2
# nn.Linear holds float32 by default: over 500 secrets a correct weight copied from float64
# and the layer's output on a float32 input were within 1.6e-7 of W^T and X W (measured);
# every wrong weight or forward of the case table was off by more than 0.19.
FLOAT32_TOL = 1e-5
