"""Margins of Part 6's thresholds (``tolerances``, Part 6): what the checks measure on every
case of the table, correct and wrong, over several secrets.

    .venv/bin/python tests/grading/attention_at_scale/margins_attention_at_scale_part6.py --secrets 5

Prints, per measured quantity, the worst correct answer and the closest wrong one.
"""

import argparse
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).resolve().parents[2] / "helpers")]

from fragmentrun import verdicts  # noqa: E402
from part6_rows import CASES  # noqa: E402

from attncourse.grading.attention_at_scale import training  # noqa: E402


def measured(case, secret):
    """{quantity: [values]} the judge computed for ``case`` under ``secret``."""
    record = {"causal": [], "loss": []}
    change, gap = training.earlier_change, training.relative_gap

    def changes(*args):
        record["causal"].append(change(*args))
        return record["causal"][-1]

    def gaps(*args):
        record["loss"].append(gap(*args))
        return record["loss"][-1]

    training.earlier_change, training.relative_gap = changes, gaps
    try:
        verdicts(case.answers, secret=secret)
    finally:
        training.earlier_change, training.relative_gap = change, gap
    loss = record["loss"]
    return {"causal": record["causal"], "loss": loss[:1], "decrease": loss[1:2]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--secrets", type=int, default=3)
    secrets = [f"margins-{i}" for i in range(parser.parse_args().secrets)]
    worst, closest = {}, {}
    for case in CASES:
        if case.group == "mqar":
            continue
        for secret in secrets:
            for name, values in measured(case, secret).items():
                if not values:
                    continue
                if case.correct:
                    bad = min(values) if name == "decrease" else max(values)
                    keep = min if name == "decrease" else max
                    worst[name] = keep(worst.get(name, bad), bad)
                elif name == "causal" and "p6_causality" in case.fails:
                    closest[name] = min(closest.get(name, max(values)), max(values))
                elif name == "loss" and "p6_train_step" in case.fails and values[0] > 0:
                    closest[name] = min(closest.get(name, values[0]), values[0])
    print(f"secrets: {len(secrets)}")
    for name in ("causal", "loss", "decrease"):
        print(f"{name}: worst correct {worst.get(name)}, closest mistake {closest.get(name)}")


if __name__ == "__main__":
    main()
