"""Measure the margins behind the thresholds of ``attncourse.grading.mla_inference``.

Run ``.venv/bin/python tests/grading/mla_inference/margins_mla_inference.py [--secrets 50] [--groups mla decode]
[--every-test] [--correct-only]``. Every case of ``cases_mla_inference`` is judged on its own group's tests
under many per-run secrets (``margins-0``, ``margins-1``, ...), in this process through the
same request/reply encoding a kernel uses. Every value comparison (``close``) is recorded as
the ratio relative error / threshold (above 1 fails). Per threshold it prints the worst
correct answer (the largest ratio of a comparison that passed, over all secrets) and the
closest mistake (the smallest ratio of a comparison that failed a case that must fail), and
how often a verdict was wrong. Failures that are not a value comparison (a shape, a rule, an
exception) have no ratio and are counted, not measured.

With ``--every-test`` each case is judged on every test of the notebook, so a wrong but
rotating rope is also judged in Parts 1(b)-3, where the judge carries it forward. Those
comparisons are reported apart ("on a carried rope"); the first comparison, against the
task's rope, may then pass or fail by a hair (a float32 rope is ~1e-8 away in Part 2) and
the carried one decides.
"""

import argparse
import contextlib
import io
import math
import multiprocessing
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).resolve().parents[2] / "helpers")]

from cases_mla_inference import ASSIGNMENT, CASES, GROUPS  # noqa: E402
from casetable import rebind, solution_namespace  # noqa: E402

from attncourse.grading import mla_inference as mi  # noqa: E402
from attncourse.grading.mla_inference import tolerances  # noqa: E402
from attncourse.judge import checks, verdict  # noqa: E402
from attncourse.judge.channel import LocalChannel  # noqa: E402
from attncourse.judge.remote import Session, StudentNamespace  # noqa: E402

ALL_TESTS = [test for _, tests in GROUPS.values() for test in tests]
# Each comparison is filed under the threshold it used: Part 1(b)'s is MERGED_TOL, the others
# are told apart by value (Part 1(a) uses ROPE_TOL on float64 inputs and ROPE_FLOAT32_TOL on
# its float32 trial).
NAMES = ("ROPE_TOL", "ROPE_FLOAT32_TOL", "MERGED_TOL", "VALUES_TOL")
THRESHOLD = {
    getattr(tolerances, name): name for name in ("ROPE_TOL", "ROPE_FLOAT32_TOL", "VALUES_TOL")
}
RECORDS = []  # (carried, ratio, threshold name) of every comparison of the check being judged
STATE = {
    "carried": False,
    "test": None,
}  # is the comparison running on the student's rope, carried forward?


def _install_recorder():

    def recording(what, got, ref, tol, mistakes=None, shape_cause=None, **kwargs):
        with contextlib.suppress(Exception):
            got_t, ref_t = checks.tensor(got, what), checks.tensor(ref, "reference")
            if tuple(got_t.shape) == tuple(ref_t.shape):
                err = checks.rel_error(got_t, ref_t)
                ratio = err / tol if math.isfinite(err) else math.inf
                merged = STATE["test"] == "p1_merged_score_matrix"
                RECORDS.append(
                    (STATE["carried"], ratio, "MERGED_TOL" if merged else THRESHOLD[tol])
                )
        return close(what, got, ref, tol, mistakes, shape_cause, **kwargs)

    def tracked_with_rope(ns, attempt):
        STATE["carried"] = False
        return with_rope(ns, attempt)

    def tracked_student_rotation(ns):
        rotate = student_rotation(ns)
        STATE["carried"] = rotate is not None
        return rotate

    close = rebind(mi, "close", recording)
    with_rope = rebind(mi, "with_rope", tracked_with_rope)
    student_rotation = rebind(mi, "student_rotation", tracked_student_rotation)


def measure_case(args):
    """(case id, [(test, should fail, wrong verdicts, {carried: max passed}, {carried: min failed})])."""
    index, secrets, every_test = args
    case = CASES[index]
    _install_recorder()
    ns, sources = solution_namespace(ASSIGNMENT, case.answers)
    student = StudentNamespace(Session(LocalChannel(ns)), sources)
    rows = []
    for test in ALL_TESTS if every_test else GROUPS[case.group][1]:
        should_fail = test in case.fails
        wrong, passed, failed = 0, {}, {}
        STATE["test"] = test
        for secret in secrets:
            RECORDS.clear()
            with contextlib.redirect_stdout(io.StringIO()):
                message = verdict.run_check(mi.CHECKS[test], student, secret)
            wrong += (message is None) == should_fail
            for carried, ratio, name in RECORDS:
                if ratio <= 1:
                    passed[name, carried] = max(passed.get((name, carried), 0.0), ratio)
                elif should_fail:
                    failed[name, carried] = min(failed.get((name, carried), math.inf), ratio)
        rows.append((test, should_fail, wrong, passed, failed))
    return case.id, rows


def _better(table, key, candidate, smaller):
    old = table.get(key)
    if old is None or (candidate[0] < old[0] if smaller else candidate[0] > old[0]):
        table[key] = candidate


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--secrets", type=int, default=50)
    parser.add_argument("--groups", nargs="*", default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--every-test", action="store_true", help="judge every case on every test")
    parser.add_argument("--correct-only", action="store_true", help="only the correct cases")
    opts = parser.parse_args()
    secrets = [f"margins-{k}" for k in range(opts.secrets)]
    todo = [
        (k, secrets, opts.every_test)
        for k, case in enumerate(CASES)
        if (not opts.groups or case.group in opts.groups) and not (opts.correct_only and case.fails)
    ]
    with multiprocessing.get_context("fork").Pool(opts.workers) as pool:
        results = pool.map(measure_case, todo, chunksize=1)
    worst, closest, structural = {}, {}, {}  # key -> (ratio, case, test)
    wrong_verdicts, unmeasured = [], []
    for case_id, rows in results:
        for test, should_fail, wrong, passed, failed in rows:
            if wrong:
                wrong_verdicts.append((case_id, test, wrong))
            if not should_fail:
                for (name, carried), ratio in passed.items():
                    _better(worst, (name, carried), (ratio, case_id, test), smaller=False)
            elif failed:
                for (name, _), ratio in failed.items():
                    band = tolerances.PRECISION_BAND / getattr(tolerances, name)
                    _better(closest, name, (ratio, case_id, test), smaller=True)
                    if ratio >= band:
                        _better(structural, name, (ratio, case_id, test), smaller=True)
            else:
                unmeasured.append((case_id, test))
    print(f"{len(secrets)} secrets, {len(todo)} cases; ratio = relative error / threshold")
    for name in NAMES:
        tol = getattr(tolerances, name)
        print(f"\n{name} = {tol:.0e}")
        for carried, label in ((False, "worst correct"), (True, "worst correct, carried rope")):
            w = worst.get((name, carried))
            if w:
                print(
                    f"  {label}: {w[0] * tol:.2e} ({w[1]}, {w[2]}), {1 / max(w[0], 1e-300):.1e}x below"
                )
        c, p = closest.get(name), structural.get(name)
        if c:
            print(f"  closest mistake: {c[0] * tol:.2e} ({c[1]}, {c[2]}), {c[0]:.1e}x above")
        if p and p != c:
            print(f"  closest beyond PRECISION_BAND: {p[0] * tol:.2e} ({p[1]}, {p[2]})")
    print(f"\nwrong verdicts: {wrong_verdicts or 'none'}")
    print(f"mistakes caught by a shape, rule or exception (no ratio): {len(unmeasured)}")
    for case_id, test in unmeasured:
        print(f"  {case_id}: {test}")


if __name__ == "__main__":
    main()
