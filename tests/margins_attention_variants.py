"""Measure the margins behind the thresholds of ``attncourse.grading.attention_variants``.

Run ``.venv/bin/python tests/margins_attention_variants.py``. Every in-process case
of the mutation table runs with ``check_close`` recording the relative error of
each comparison. Per comparison it prints the worst correct answer, the smallest
wrong answer that the comparison rejected, the threshold, and both margins.
With ``--experiment`` it also runs the cases of the Part 13 experiment at the seed's
full size (minutes); the experiment's own threshold is measured on that setup too
(see the comment at EXPERIMENT_TOL).
"""

import contextlib
import io
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from cases_attention_variants import CASES  # noqa: E402
from test_attention_variants import FAST, HIDDEN, judged, namespace_for  # noqa: E402

from attncourse import checks  # noqa: E402
from attncourse.grading import attention_variants as av  # noqa: E402


def measure(experiment=False):
    """comparison -> [tol, worst correct error, case, smallest rejected error, case]."""
    records = []
    original = av.check_close

    def recording(what, got, ref, tol, mistakes=None, shape_cause=None):
        err = checks.rel_error(checks.tensor(got, what), checks.tensor(ref, "reference"))
        records.append((re.sub(r"\s*\(D=[^)]*\)", "", what), tol, err))
        return original(what, got, ref, tol, mistakes, shape_cause)

    checks._SNAPSHOTS.clear()  # measuring only: keep the recorder in place
    av.check_close = recording
    table = defaultdict(lambda: [None, 0.0, "", math.inf, ""])
    if experiment:
        cases = [c for c in CASES if not c.alone and "p13_experiment_test" in judged(c)]
    else:
        cases = FAST
    for case in cases:
        ns = namespace_for(case, experiment)
        records.clear()
        skip = set() if experiment else {"p13_experiment_test"}
        for test in sorted(judged(case) - skip):
            with contextlib.suppress(Exception), contextlib.redirect_stdout(io.StringIO()):
                getattr(av, HIDDEN[test])(ns)
        for what, tol, err in records:
            row = table[what]
            row[0] = tol
            if not case.lose and err > row[1]:
                row[1:3] = err, case.name
            if case.lose and tol < err < row[3]:
                row[3:5] = err, case.name
    return table


def main():
    experiment = "--experiment" in sys.argv  # also the full-size Part 13 runs (minutes)
    for what, (tol, hi, hi_case, lo, lo_case) in sorted(measure(experiment).items()):
        print(
            f"{what}\n  tol {tol:.0e}: worst correct {hi:.1e} ({hi_case}), "
            f"smallest wrong {lo:.1e} ({lo_case}); margins {tol / max(hi, 1e-300):.0e}x "
            f"and {lo / tol:.0e}x"
        )


if __name__ == "__main__":
    main()
