"""Measure the margins behind the thresholds of ``attncourse.grading.attention_variants``.

Run ``.venv/bin/python tests/grading/attention_variants/margins_attention_variants.py [--secrets N] [--experiment]
[--rounding]``. Every in-process case of the mutation table (tampering cases aside)
is judged through :func:`casetable.run_in_process`, the runner of the fast tests,
with ``check_close`` recording the relative error of each comparison, under N
fresh secrets. Per comparison it prints the worst correct answer, the smallest
wrong answer that the comparison rejected, the threshold, and both margins.

``--experiment`` also judges the Part 13 experiment (the task's full size, seconds
a case) for the cases of the experiment cell and those whose mistake elsewhere
must cost it, and prints, for every such case, each check of the experiment that
it reaches and the per-row ratio of the output rows against the float64 MLA
(deviation / allowance, a row passes at <= 1), measured for every case whether or
not an earlier check already failed it.

``--rounding`` measures the float32 rounding of the logits behind ROUNDING_ETA on
the instructor's experiment, with the course's 1/sqrt(fan_in)-scaled data and with the
original problem's unscaled randn data (three seeds each).
"""

import contextlib
import io
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).resolve().parents[2] / "helpers")]

import torch  # noqa: E402
from cases_attention_variants import ASSIGNMENT, EXPERIMENT_DATA, UNSCALED_DATA  # noqa: E402
from casetable import load, rebind, run_in_process  # noqa: E402
from cellrun import fresh_namespace, run_cell  # noqa: E402

from attncourse.course import ROOT, notebook_path  # noqa: E402
from attncourse.grading import attention_variants as av  # noqa: E402
from attncourse.grading.attention_variants import references, tolerances  # noqa: E402
from attncourse.grading.attention_variants.experiment import check_experiment  # noqa: E402
from attncourse.judge import checks, verdict  # noqa: E402
from devtools.submissions import solution_answers  # noqa: E402

TABLE = load(ASSIGNMENT)
EXPERIMENT_TEST = "p13_experiment_test"


def plan(case, experiment):
    """(answers, tests) of ``case`` in process; without ``experiment`` never the experiment's
    test (and its stub wherever the case does not replace the experiment cell)."""
    if experiment:
        return TABLE.in_process(case)
    return TABLE.in_process(case, TABLE.judged(case) - {EXPERIMENT_TEST})


def label(what):
    return re.sub(r"\s*\((D=[^)]*|the task's sizes)\)|\s*at batch elements \[[^]]*\]", "", what)


def measure(experiment=False, secrets=1):
    """comparison -> [tol, worst correct, case, smallest rejected, case]; experiment rows."""
    records = []
    rows = defaultdict(list)  # case -> [(output, worst ratio)]

    def recording(what, got, ref, tol, mistakes=None, shape_cause=None):
        err = checks.rel_error(checks.tensor(got, what), checks.tensor(ref, "reference"))
        records.append((label(what), tol, err))
        return original_close(what, got, ref, tol, mistakes, shape_cause)

    def recording_rows(what, got, ref, slack, cause):
        ratio = references.row_ratios(got, ref, slack)
        records.append((label(what), 1.0, float(ratio.max())))
        return original_rows(what, got, ref, slack, cause)

    original_run = verdict.run_check
    current = {}

    def run_check(check, ns, secret, test_index=None):
        if check is check_experiment:
            with contextlib.suppress(Exception), checks.secret_scope(secret):
                rows[current["case"]].extend(experiment_rows(ns))
        return original_run(check, ns, secret, test_index=test_index)

    original_close = rebind(av, "check_close", recording)
    original_rows = rebind(av, "check_rows", recording_rows)
    verdict.run_check = run_check
    table = defaultdict(lambda: [None, 0.0, "", math.inf, ""])
    cases = [c for c in TABLE.cases if not c.alone]
    if experiment:
        cases = [c for c in cases if EXPERIMENT_TEST in plan(c, True)[1]]
    try:
        for _ in range(secrets):
            for case in cases:
                current["case"] = case.name
                records.clear()
                run_in_process(ASSIGNMENT, *plan(case, experiment))
                for what, tol, err in records:
                    row = table[what]
                    row[0] = tol
                    if case.correct and err > row[1]:
                        row[1:3] = err, case.name
                    if not case.correct and tol < err < row[3]:
                        row[3:5] = err, case.name
    finally:
        rebind(av, "check_close", original_close)
        rebind(av, "check_rows", original_rows)
        verdict.run_check = original_run
    return table, rows


def experiment_rows(ns):
    """Worst row ratio of output_vanilla and output_reduced, whatever the other checks say."""
    data = {n: ns[n] for n in (*references.MLA_DATA, "x", "y", "output_vanilla", "output_reduced")}
    w = {n: data[n].to(torch.float64) for n in references.MLA_DATA}
    B, H = data["x"].shape[0], references.EXPERIMENT["H"]
    batches = sorted(
        checks.rng_for("p13_experiment/rows").sample(range(B), tolerances.EXPERIMENT_BATCHES)
    )
    ref, slack = references.mla_rows(data["x"][batches], data["y"][batches], w, H)
    out = []
    for name in ("output_vanilla", "output_reduced"):
        ratio = references.row_ratios(data[name][batches], ref, slack)
        relative = (data[name][batches].double() - ref).norm(dim=-1) / ref.norm(dim=-1)
        kept = relative[slack < tolerances.ROWS_TOL * ref.norm(dim=-1)]
        out.append((name, float(ratio.max()), float(kept.max()) if kept.numel() else math.nan))
    return out


def rounding(runs=3):
    """Float32 logit error / (|q_h| |k_{h,l}| / sqrt(d)) of the instructor's experiment, per key,
    worst over 4 batch elements, both paths (the larger scale of the two, as mla_rows uses)."""
    source = notebook_path(ROOT, "source", ASSIGNMENT)
    import nbformat

    solution = solution_answers(nbformat.read(source, as_version=4))
    scalings = {"scaled (the course's)": EXPERIMENT_DATA, "randn (the original's)": UNSCALED_DATA}
    for data, text in scalings.items():
        worst = 0.0
        for run in range(runs):
            ns = fresh_namespace()
            cell = solution["p13_experiment"]
            assert EXPERIMENT_DATA in cell
            # a fresh draw each run: the course's seed, then others
            cell = cell.replace(
                EXPERIMENT_DATA, text.replace("manual_seed(2024)", f"manual_seed({2024 + run})")
            )
            with contextlib.redirect_stdout(io.StringIO()):
                for gid in ("p5_mha", "p13_reduced_matrices"):
                    run_cell(solution[gid], ns)
                run_cell(cell, ns)
            worst = max(worst, _logit_error(ns))
        print(f"rounding, {data} data: float32 logit error <= {worst:.2e} of its scale")


def _logit_error(ns):
    H, D, r = references.EXPERIMENT["H"], references.EXPERIMENT["D"], references.EXPERIMENT["r"]
    d = D // H
    x, y = ns["x"][:4], ns["y"][:4]
    W_DKV, W_UK, W_Q = (ns[n].double() for n in ("W_DKV", "W_UK", "W_Q"))

    def heads(t, n):
        return t.view(t.shape[0], t.shape[1], H, n).transpose(1, 2)

    latent = y.double() @ W_DKV.T
    q, k = heads(x.double() @ W_Q.T, d), heads(latent @ W_UK.T, d)
    exact = q @ k.transpose(-2, -1) / math.sqrt(d)
    q_hat = math.sqrt(r / d) * torch.einsum("nhld,hdr->nhlr", q, W_UK.view(H, d, r))
    scale = torch.maximum(
        q.norm(dim=-1)[..., None] * k.norm(dim=-1)[:, :, None, :] / math.sqrt(d),
        q_hat.norm(dim=-1)[..., None] * latent.norm(dim=-1)[:, None, None, :] / math.sqrt(r),
    )
    worst = 0.0
    with torch.no_grad():
        for model, size in ((ns["model_MHA_vanilla"], d), (ns["model_MHA_reduced"], r)):
            qf, kf = heads(model.W_Q(x), size), heads(model.W_K(y), size)
            logits = (qf @ kf.transpose(-2, -1) / math.sqrt(size)).double()
            worst = max(worst, float(((logits - exact).abs() / scale).max()))
    return worst


def main():
    secrets = int(sys.argv[sys.argv.index("--secrets") + 1]) if "--secrets" in sys.argv else 1
    if "--rounding" in sys.argv:
        rounding()
    experiment = "--experiment" in sys.argv
    table, rows = measure(experiment, secrets)
    for what, (tol, hi, hi_case, lo, lo_case) in sorted(table.items()):
        print(
            f"{what}\n  tol {tol:.0e}: worst correct {hi:.1e} ({hi_case}), "
            f"smallest wrong {lo:.1e} ({lo_case}); margins {tol / max(hi, 1e-300):.0e}x "
            f"and {lo / tol:.0e}x"
        )
    if experiment:
        lose = {c.name: EXPERIMENT_TEST in c.fails for c in TABLE.cases}
        print(
            "\nrows of the experiment's outputs (worst ratio, a row passes at <= 1; worst "
            "relative error on rows without a near-tie):"
        )
        for case, found in sorted(rows.items()):
            for name, ratio, kept in found:
                verdict_ = "wrong" if lose[case] else "right"
                print(f"  {verdict_} {case:40s} {name:15s} ratio {ratio:.1e}  rel {kept:.1e}")


if __name__ == "__main__":
    main()
