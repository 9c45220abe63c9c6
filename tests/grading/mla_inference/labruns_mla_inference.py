"""Run the timing lab of ``mla_inference`` (Part 5) several times back to back and compare.

Run ``.venv/bin/python tests/grading/mla_inference/labruns_mla_inference.py [--runs 3]``. Each run is a fresh
process that executes the solution's code cells up to the lab and the plot (the course's
cells and the model plot, as a student's Restart & Run All does), and prints what the lab
prints: per cache size and method the median and interquartile range (IQR) of the
interleaved rounds, and the GB/s fitted to the medians with the IQR of the GB/s fitted to
each round alone. The summary says whether the runs' medians of each point lie within the
largest IQR the runs report for it, how far apart the fitted GB/s of the runs are, and whether the medians of the ratio of the two methods' GB/s
(fitted round by round, so that a slow spell of the machine cancels) lie within the largest
IQR of the runs.
"""

import argparse
import json
import subprocess
import sys

RUN_ONE = r"""
import contextlib, io, json, matplotlib, nbformat
matplotlib.use("Agg")
from attncourse.cells import grade_id, is_test_cell
from attncourse.course import ROOT, notebook_path
nb = nbformat.read(notebook_path(ROOT, "source", "mla_inference"), as_version=4)
ns = {"__name__": "__main__"}
with contextlib.redirect_stdout(io.StringIO()):
    for cell in nb.cells:
        if cell.cell_type == "code" and not is_test_cell(cell):
            exec(cell.source, ns)
            if grade_id(cell) == "p5_timing_plot":
                break
print(json.dumps({"timings": ns["timings"], "bytes": ns["cache_bytes_lab"],
                  "contexts": ns["contexts_lab"], "fits": ns["fits_lab"],
                  "ratio": list(ns["ratio_lab"])}))
"""


def run_lab():
    """One fresh process running the lab: its timings, sizes and fits."""
    out = subprocess.run(
        [sys.executable, "-c", RUN_ONE], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def quartiles(values):
    ordered = sorted(values)

    def at(q):
        x = q * (len(ordered) - 1)
        low = int(x)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (x - low)

    return at(0.25), at(0.5), at(0.75)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    runs = [run_lab() for _ in range(parser.parse_args().runs)]
    sizes = runs[0]["bytes"]
    print(
        f"{'MiB':>5} {'method':>6} "
        + " ".join(f"{'run ' + str(i + 1) + ' ms (IQR)':>24}" for i in range(len(runs)))
    )
    agree = True
    for index, size in enumerate(sizes):
        for name in runs[0]["timings"]:
            stats = [quartiles([1e3 * s for s in run["timings"][name][index]]) for run in runs]
            cells = " ".join(f"{m:8.2f} ({q1:6.2f}-{q3:6.2f})" for q1, m, q3 in stats)
            width = max(q3 - q1 for q1, _, q3 in stats)
            medians = [m for _, m, _ in stats]
            inside = max(medians) - min(medians) <= width
            agree &= inside
            print(
                f"{size / 2**20:5.0f} {name:>6} {cells}  {'within' if inside else 'OUTSIDE'} the largest IQR ({width:.2f} ms)"
            )
    for name in runs[0]["fits"]:
        fits = [run["fits"][name] for run in runs]
        text = ", ".join(f"{bw:.2f} ({low:.2f}-{high:.2f})" for bw, low, high in fits)
        spread = max(f[0] for f in fits) / min(f[0] for f in fits) - 1
        print(
            f"{name}: fitted GB/s per run (per-round IQR): {text}; largest / smallest - 1 = {spread:.1%}"
        )
    ratios = [run["ratio"] for run in runs]
    width = max(high - low for _, low, high in ratios)
    medians = [m for m, _, _ in ratios]
    inside = max(medians) - min(medians) <= width
    text = ", ".join(f"{m:.2f} ({low:.2f}-{high:.2f})" for m, low, high in ratios)
    print(
        f"MHA GB/s / MLA GB/s, round by round, per run: {text}; medians "
        f"{'within' if inside else 'OUTSIDE'} the largest IQR ({width:.2f})"
    )
    print("every median time within the largest IQR of its point:", agree)


if __name__ == "__main__":
    main()
