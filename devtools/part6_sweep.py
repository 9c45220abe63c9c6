"""Run Assignment 5's Part 6 as a student's notebook would (the course's first cell, then every
code cell of Part 6 in order, solutions in place) and save the sweep's numbers
(``tests/data/attention_at_scale_part6_results.json``, which a test holds the model answer to)
and its plot (``docs/attention_at_scale_part6.png``).

    .venv/bin/python devtools/part6_sweep.py

With ``--cache C --kind K`` it runs the sweep's one model K at cache size C (every model is
seeded alike, so the numbers are the full sweep's) into ``part6_results_C_K.json``; ``--merge`` then joins those
files into ``part6_results.json`` and draws the course's plot from them.
"""

import json
import re
import resource
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))
HERE = ROOT / ".part6"  # one model's numbers, before --merge joins them
RESULTS = ROOT / "tests" / "data" / "attention_at_scale_part6_results.json"
PLOT = ROOT / "docs" / "attention_at_scale_part6.png"

from cellrun import run_cell  # noqa: E402
from fragmentrun import SOLUTION, first_cell, part6_notebook  # noqa: E402

from attncourse.cells import grade_id, is_answer, is_test_cell  # noqa: E402


def main(cache=None, kind=None) -> None:
    nb = part6_notebook()
    ns = {"__name__": "__main__"}
    wall, cpu = time.perf_counter(), time.process_time()
    for cell in [first_cell(), *nb.cells]:
        if cell.cell_type != "code" or is_test_cell(cell):
            continue
        source = SOLUTION[grade_id(cell)] if is_answer(cell) else cell.source
        if cache and grade_id(cell) == "p6_experiment":
            source = re.sub(r"CACHES = \(.*?\)", f"CACHES = ({cache},)", source)
            if kind:
                source = re.sub(r"KINDS = \(.*?\)", f"KINDS = ({kind!r},)", source)
        elif cache and grade_id(cell) == "p6_plot":
            continue
        run_cell(source, ns)
        if grade_id(cell) == "p6_plot":
            plt.gcf().savefig(PLOT, dpi=120)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    results = ns["recall_results"]
    record = {
        "settings": {
            **ns["RECALL"],
            "D": ns["D_MODEL"],
            "H": ns["HEADS"],
            "steps": ns["STEPS"],
            "batch": ns["BATCH"],
            "lr": ns["LR"],
            "caches": list(ns["CACHES"]),
            "device": ns["device"],
        },
        "accuracy": {k: {str(c): r["accuracy"] for c, r in v.items()} for k, v in results.items()},
        "runs": {k: {str(c): r for c, r in v.items()} for k, v in results.items()},
        "total": {
            "wall_s": time.perf_counter() - wall,
            "process_cpu_s": time.process_time() - cpu,
            "user_cpu_s": usage.ru_utime,
        },
    }
    path = HERE / f"part6_results_{cache}_{kind}.json" if cache else RESULTS
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["total"]))


def merge() -> None:
    """part6_results_*.json -> part6_results.json and the course's plot of them."""
    parts = [json.loads(p.read_text()) for p in sorted(HERE.glob("part6_results_*.json"))]
    record = {"settings": parts[0]["settings"], "accuracy": {}, "runs": {}, "total": {}}
    record["settings"]["caches"] = sorted({int(c) for p in parts for c in p["settings"]["caches"]})
    for part in parts:
        for key in ("accuracy", "runs"):
            for kind, runs in part[key].items():
                record[key].setdefault(kind, {}).update(runs)
        for key, value in part["total"].items():
            record["total"][key] = record["total"].get(key, 0.0) + value
    settings = record["settings"]
    ns = {
        "recall_results": {
            kind: {int(c): r for c, r in runs.items()} for kind, runs in record["runs"].items()
        },
        "CACHES": tuple(settings["caches"]),
        "RECALL": {k: settings[k] for k in ("n_pairs", "n_queries", "n_keys", "n_values")},
        "STEPS": settings["steps"],
    }
    nb = part6_notebook()
    run_cell(next(c.source for c in nb.cells if grade_id(c) == "p6_plot"), ns)
    plt.gcf().savefig(PLOT, dpi=120)
    RESULTS.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    if "--merge" in sys.argv:
        merge()
    else:
        args = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))
        main(int(args["--cache"]) if "--cache" in args else None, args.get("--kind"))
