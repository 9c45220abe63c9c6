"""Measure the margins behind the thresholds of ``attncourse.grading.attention_worksheet``.

Run ``.venv/bin/python tests/grading/attention_worksheet/margins_attention_worksheet.py [--secrets 500] [--groups q3c q4c]``.
Every case of ``cases_attention_worksheet`` is judged under many per-run secrets (the
secrets ``margins-0``, ``margins-1``, ...), in this process through the same
request/reply encoding a kernel uses. Each comparison of a relative error with its
tolerance is recorded as the ratio error / tolerance (above 1 fails). Per test and
case it prints how often the verdict was wrong (a correct answer failed, a mistake
passed) and the extreme ratios over the secrets: for a correct answer the largest
ratio of the comparisons that passed (its margin below the tolerance), for a mistake
the smallest ratio of those that failed (its margin above it). Q3(b) accepts either
of two references, so only the comparison that decided counts (its ratio is the largest
entry-wise difference over TYPED_TOL).
"""

import argparse
import contextlib
import io
import math
import multiprocessing
import sys
import time
from pathlib import Path

import torch

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).resolve().parents[2] / "helpers")]

from cases_attention_worksheet import ASSIGNMENT, CASES, GROUPS  # noqa: E402
from casetable import rebind, solution_namespace  # noqa: E402

from attncourse.grading import attention_worksheet as aw  # noqa: E402
from attncourse.grading.attention_worksheet import tolerances  # noqa: E402
from attncourse.judge import checks, verdict  # noqa: E402
from attncourse.judge.channel import LocalChannel  # noqa: E402
from attncourse.judge.remote import Session, StudentNamespace  # noqa: E402

RECORDS = []


def _ratio(value, limit):
    if value != value:  # NaN
        return math.inf
    return value / limit


def _install_recorders():

    def recording_close(what, got, ref, tol, mistakes=None, shape_cause=None):
        with contextlib.suppress(Exception):
            err = checks.rel_error(checks.tensor(got, what), checks.tensor(ref, "reference"))
            RECORDS.append((err, _ratio(err, tol)))
        return check_close(what, got, ref, tol, mistakes, shape_cause)

    def recording_rel_error(got, ref):  # Q3(c) compares against FLOAT32_TOL itself
        err = rel_error(got, ref)
        RECORDS.append((err, _ratio(err, tolerances.FLOAT32_TOL)))
        return err

    def recording_difference(got, ref):  # Q3(b): typed entries against TYPED_TOL
        err = largest_difference(got, ref)
        RECORDS.append((err, _ratio(err, tolerances.TYPED_TOL)))
        return err

    check_close = rebind(aw, "check_close", recording_close)
    rel_error = rebind(aw, "rel_error", recording_rel_error)
    largest_difference = rebind(aw, "largest_difference", recording_difference)


def measure_case(args):
    """(case id, [(test, should fail, wrong verdicts, extreme ratio, its error, seconds)])."""
    index, secrets = args
    case = CASES[index]
    torch.set_num_threads(1)  # tiny products: a worker's thread pool only contends with the other
    _install_recorders()
    ns, sources = solution_namespace(ASSIGNMENT, case.answers)
    student = StudentNamespace(Session(LocalChannel(ns)), sources)
    rows = []
    for test in GROUPS[case.group][1]:
        should_fail = test in case.fails
        wrong, extremes, started = 0, [], time.monotonic()
        for secret in secrets:
            RECORDS.clear()
            with contextlib.redirect_stdout(io.StringIO()):
                message = verdict.run_check(aw.CHECKS[test], student, secret)
            failed = message is not None
            wrong += failed != should_fail
            if failed:
                beyond = [r for r in RECORDS if not r[1] <= 1]
                if beyond:
                    extremes.append(min(beyond, key=lambda r: r[1]))
            else:
                within = [r for r in RECORDS if r[1] <= 1]
                if within:
                    extremes.append(max(within, key=lambda r: r[1]))
        seconds = (time.monotonic() - started) / len(secrets)
        pick = max if not should_fail else min
        extreme = pick(extremes, key=lambda r: r[1]) if extremes else (None, None)
        rows.append((test, should_fail, wrong, extreme[1], extreme[0], seconds))
    return case.id, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--secrets", type=int, default=500)
    parser.add_argument("--groups", nargs="*", default=None)
    parser.add_argument("--workers", type=int, default=2)
    opts = parser.parse_args()
    secrets = [f"margins-{k}" for k in range(opts.secrets)]
    todo = [(k, secrets) for k, c in enumerate(CASES) if not opts.groups or c.group in opts.groups]
    with multiprocessing.get_context("fork").Pool(opts.workers) as pool:
        results = pool.map(measure_case, todo, chunksize=1)
    by_test = {}
    for case_id, rows in results:
        for test, *row in rows:
            by_test.setdefault(test, []).append((case_id, *row))

    def fmt(x):
        return "-" if x is None else f"{x:.3g}"

    print(f"{len(secrets)} secrets; ratio = relative error / tolerance (> 1 fails)")
    for test, rows in by_test.items():
        print(f"\n== {test}")
        print(
            f"  {'case':40s} {'verdict':8s} {'wrong':>6s} {'ratio':>10s} {'error':>10s} {'s/run':>6s}"
        )
        for case_id, should_fail, wrong, ratio, err, seconds in rows:
            print(
                f"  {case_id:40s} {'fail' if should_fail else 'pass':8s} {wrong:6d} "
                f"{fmt(ratio):>10s} {fmt(err):>10s} {seconds:6.3f}"
            )
        correct = [r for r in rows if not r[1] and r[3] is not None]
        mistakes = [r for r in rows if r[1] and r[3] is not None]
        if correct:
            worst = max(correct, key=lambda r: r[3])
            print(
                f"  worst correct: {worst[0]}, error {fmt(worst[4])} ({fmt(worst[3])} of the tolerance)"
            )
        if mistakes:
            closest = min(mistakes, key=lambda r: r[3])
            print(
                f"  closest mistake caught by a tolerance: {closest[0]}, error {fmt(closest[4])} "
                f"({fmt(closest[3])}x the tolerance)"
            )
        print(f"  wrong verdicts: {sum(r[2] for r in rows)} of {len(rows) * len(secrets)}")


if __name__ == "__main__":
    main()
