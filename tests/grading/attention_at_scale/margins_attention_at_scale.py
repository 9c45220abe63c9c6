"""Measure the margins behind the thresholds of ``attncourse.grading.attention_at_scale``.

Run ``.venv/bin/python tests/grading/attention_at_scale/margins_attention_at_scale.py [--secrets 20] [--groups p3_tiles]``.
Every case of ``cases_attention_at_scale`` is judged on the tests it is judged on in process
(``Table.in_process``) under many per-run secrets (``margins-0``, ``margins-1``, ...), in
this process through the same request/reply encoding a kernel uses. Every value comparison
(``check_close``, through the assignment's ``close``) is recorded as the ratio relative error /
threshold (above 1 fails). Per threshold it prints the worst correct answer (the largest ratio
of a comparison of a correct case) and the closest mistake (the smallest ratio of a failing
comparison of a case that must fail), and how often a verdict was wrong. Failures that are not
a value comparison (a shape, a count, a rule, NaN) have no ratio and are counted, not measured.
The own-number answers (Part 1(b), 4(b)) are exact or rounded to stated digits: their
tolerances are argued in ``tolerances.py``, not measured here.
"""

import argparse
import math
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).resolve().parents[2] / "helpers")]

from cases_attention_at_scale import ASSIGNMENT, CASES  # noqa: E402
from casetable import load  # noqa: E402

from attncourse.grading.attention_at_scale import softmax, tolerances  # noqa: E402
from attncourse.judge import checks  # noqa: E402

RECORDS = []  # ratio of every comparison of the case being judged, in order
_check_close = checks.check_close


def recording(what, got, ref, tol, mistakes=None, shape_cause=None):
    """check_close, recording relative error / tol of each comparison that has a ratio."""
    got_t, ref_t = checks.tensor(got, what), checks.tensor(ref, "reference")
    if tuple(got_t.shape) == tuple(ref_t.shape):
        RECORDS.append(checks.rel_error(got_t, ref_t) / tol)
    return _check_close(what, got, ref, tol, mistakes, shape_cause)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--secrets", type=int, default=20)
    parser.add_argument("--groups", nargs="*")
    args = parser.parse_args()
    softmax.check_close = recording
    table = load(ASSIGNMENT)
    secrets = [f"margins-{k}" for k in range(args.secrets)]
    worst_correct, closest_mistake, wrong_verdicts, unmeasured = (0.0, ""), (math.inf, ""), [], 0
    for case in CASES:
        if args.groups and case.group not in args.groups:
            continue
        RECORDS.clear()
        verdicts = table.judge_secrets(case, secrets)
        ratios = [r for r in RECORDS if math.isfinite(r)]
        for test, results in verdicts.items():
            failed = sum(r is not None for r in results)
            expected = len(secrets) if test in case.fails else 0
            if failed != expected:
                wrong_verdicts.append((case.id, test, failed, len(secrets)))
        if case.correct and ratios and max(ratios) > worst_correct[0]:
            worst_correct = (max(ratios), case.id)
        failing = [r for r in ratios if r > 1]
        if not case.correct and failing and min(failing) < closest_mistake[0]:
            closest_mistake = (min(failing), case.id)
        if not case.correct and not failing:
            unmeasured += 1
    tol = tolerances.VALUES_TOL
    print(f"VALUES_TOL = {tol:.0e} over {len(secrets)} secrets")
    print(f"  worst correct: {worst_correct[0] * tol:.2e} ({worst_correct[1]})")
    print(f"  closest mistake: {closest_mistake[0] * tol:.2e} ({closest_mistake[1]})")
    print(f"  margin: {closest_mistake[0] / max(worst_correct[0], 1e-300):.0f}x")
    print(f"  wrong cases failing without a ratio (shape, count, rule, NaN): {unmeasured}")
    print(f"  wrong verdicts: {len(wrong_verdicts)} {wrong_verdicts[:10]}")


if __name__ == "__main__":
    main()
