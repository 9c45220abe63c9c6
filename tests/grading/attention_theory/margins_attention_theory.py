"""Measure the margins behind the thresholds of ``attncourse.grading.attention_theory``.

Run ``.venv/bin/python tests/grading/attention_theory/margins_attention_theory.py [--secrets 200] [--case-secrets 20]``
(``--groups``, ``--cases``, ``--tests`` narrow it down). The instructor's solution is
judged under ``--secrets`` per-run secrets (``margins-0``, ``margins-1``, ...), every
case of ``cases_attention_theory`` under the first ``--case-secrets`` of them, in
this process through the same request/reply encoding a kernel uses. Each comparison of a statistic with its
threshold (``attention_theory.beyond``) and each ``check_close`` is recorded as the
ratio measured / allowed (above 1 fails). Per test and case it prints how often the
verdict was wrong (a correct answer failed, a mistake passed) and the smallest and
largest ratio over the secrets: the worst correct answer's ratio is the margin below
the threshold, the smallest ratio of a mistake the margin above it.
"""

import argparse
import contextlib
import io
import math
import multiprocessing
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).resolve().parents[2] / "helpers")]

from cases_attention_theory import ASSIGNMENT, CASES, GROUPS  # noqa: E402
from casetable import Case, rebind, solution_namespace  # noqa: E402

from attncourse.grading import attention_theory as at  # noqa: E402
from attncourse.judge import checks, verdict  # noqa: E402
from attncourse.judge.channel import LocalChannel  # noqa: E402
from attncourse.judge.remote import Session, StudentNamespace  # noqa: E402

RECORDS = []


def _ratio(value, limit):
    if value != value:  # NaN
        return math.inf
    return value / limit if limit > 0 else (math.inf if value > 0 else 0.0)


def _install_recorders():

    def recording_beyond(value, limit):
        RECORDS.append(_ratio(value, limit))
        return beyond(value, limit)

    def recording_close(what, got, ref, tol, mistakes=None, shape_cause=None):
        with contextlib.suppress(Exception):
            err = checks.rel_error(checks.tensor(got, what), checks.tensor(ref, "reference"))
            RECORDS.append(_ratio(err, tol))
        return check_close(what, got, ref, tol, mistakes, shape_cause)

    beyond = rebind(at, "beyond", recording_beyond)
    check_close = rebind(at, "check_close", recording_close)


def namespace_for(case):
    """The judge's view of the solution with ``case``'s answers, its cells run in this process."""
    ns, sources = solution_namespace(ASSIGNMENT, case.answers)
    return StudentNamespace(Session(LocalChannel(ns)), sources)


def measure_case(args):
    """(case id, [(test, should fail, wrong verdicts, min ratio, max ratio, seconds)])."""
    case, secrets, tests = args
    _install_recorders()
    ns = namespace_for(case)
    rows = []
    for test in GROUPS[case.group][1] if case.group else at.CHECKS:
        if tests and test not in tests:
            continue
        should_fail = test in case.fails
        wrong, ratios, started = 0, [], time.monotonic()
        for secret in secrets:
            RECORDS.clear()
            with contextlib.redirect_stdout(io.StringIO()):
                message = verdict.run_check(at.CHECKS[test], ns, secret)
            wrong += (message is None) == should_fail
            if RECORDS:
                ratios.append(max(RECORDS))
        seconds = (time.monotonic() - started) / len(secrets)
        low = min(ratios) if ratios else None
        high = max(ratios) if ratios else None
        rows.append((test, should_fail, wrong, low, high, len(secrets), seconds))
    return case.id, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--secrets", type=int, default=200, help="secrets for the solution")
    parser.add_argument("--case-secrets", type=int, default=20, help="secrets for each case")
    parser.add_argument("--groups", nargs="*", default=None, help="only these groups' cases")
    parser.add_argument("--cases", nargs="*", default=None, help="only these cases (group:name)")
    parser.add_argument("--tests", nargs="*", default=None, help="only these test cells")
    parser.add_argument("--workers", type=int, default=2)
    opts = parser.parse_args()
    solution = Case("", "solution", {})
    todo = []
    if opts.secrets:
        todo.append((solution, [f"margins-{k}" for k in range(opts.secrets)], opts.tests))
    for case in CASES:
        if opts.groups is not None and case.group not in opts.groups:
            continue
        if opts.cases is not None and case.id not in opts.cases:
            continue
        if opts.tests and not set(GROUPS[case.group][1]) & set(opts.tests):
            continue
        if opts.case_secrets:
            secrets = [f"margins-{k}" for k in range(opts.case_secrets)]
            todo.append((case, secrets, opts.tests))
    # the solution's many secrets in slices, so the workers share them
    todo = [
        (case, secrets[k : k + 25], tests)
        for case, secrets, tests in todo
        for k in range(0, len(secrets), 25)
    ]
    with multiprocessing.get_context("fork").Pool(opts.workers) as pool:
        results = pool.map(measure_case, todo, chunksize=1)
    merged = {}
    for case_id, rows in results:
        for test, should_fail, wrong, low, high, count, seconds in rows:
            key = (test, case_id)
            old = merged.get(key)
            if old is None:
                merged[key] = [should_fail, wrong, low, high, count, seconds * count]
                continue
            old[1] += wrong
            old[2] = low if old[2] is None else old[2] if low is None else min(old[2], low)
            old[3] = high if old[3] is None else old[3] if high is None else max(old[3], high)
            old[4] += count
            old[5] += seconds * count
    by_test = {}
    for (test, case_id), (should_fail, wrong, low, high, count, total) in merged.items():
        row = (case_id, should_fail, wrong, low, high, count, total / count)
        by_test.setdefault(test, []).append(row)

    def fmt(x):
        return "-" if x is None else f"{x:.3g}"

    print("ratio = measured / allowed (> 1 fails); wrong = verdicts against the case's label")
    for test in at.CHECKS:
        rows = by_test.get(test)
        if not rows:
            continue
        print(f"\n== {test}")
        print(
            f"  {'case':40s} {'verdict':7s} {'wrong':>9s} {'min ratio':>10s} {'max ratio':>10s}"
            f" {'s/run':>6s}"
        )
        for case_id, should_fail, wrong, low, high, count, seconds in rows:
            label = "fail" if should_fail else "pass"
            print(
                f"  {case_id:40s} {label:7s} {f'{wrong}/{count}':>9s} {fmt(low):>10s}"
                f" {fmt(high):>10s} {seconds:6.3f}"
            )
        correct = [r for r in rows if not r[1] and r[4] is not None]
        mistakes = [r for r in rows if r[1] and r[3] is not None and r[3] > 1]
        if correct:
            worst = max(correct, key=lambda r: r[4])
            print(f"  worst correct: {worst[0]} at {fmt(worst[4])} of the threshold")
        if mistakes:
            closest = min(mistakes, key=lambda r: r[3])
            print(f"  closest mistake caught by a threshold: {closest[0]} at {fmt(closest[3])}x")
        print(f"  wrong verdicts: {sum(r[2] for r in rows)} of {sum(r[5] for r in rows)}")


if __name__ == "__main__":
    main()
