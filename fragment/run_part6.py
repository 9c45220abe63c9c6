"""Run Part 6's fragment as a student's notebook would (the course's first cell, then every code
cell in order, solutions in place) and save the sweep's numbers and plot beside it.

    .venv/bin/python fragment/run_part6.py   # writes part6_results.json and part6_plot.png
"""

import json
import resource
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from cellrun import run_cell  # noqa: E402
from fragmentrun import SOLUTION, first_cell  # noqa: E402

from attncourse.cells import grade_id, is_answer, is_test_cell  # noqa: E402


def main() -> None:
    nb = nbformat.read(HERE / "part6.ipynb", as_version=4)
    ns = {"__name__": "__main__"}
    wall, cpu = time.perf_counter(), time.process_time()
    for cell in [first_cell(), *nb.cells]:
        if cell.cell_type != "code" or is_test_cell(cell):
            continue
        run_cell(SOLUTION[grade_id(cell)] if is_answer(cell) else cell.source, ns)
        if grade_id(cell) == "p6_plot":
            plt.gcf().savefig(HERE / "part6_plot.png", dpi=120)
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
    (HERE / "part6_results.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["total"]))


if __name__ == "__main__":
    main()
