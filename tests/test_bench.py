"""The benchmark's arithmetic (the benchmark itself is run by ``make bench``, not here)."""

import re

from attncourse.bench import ratio_lines


def _ratio(lines, start):
    line = next(line for line in lines if line.strip().startswith(start))
    return float(re.search(r"(\d+\.\d+)x \(rounds", line).group(1))


def test_each_ratio_is_taken_within_a_round_then_the_median_of_rounds():
    """A slow round slows every configuration in it: ratios of one round's runs cancel that,
    a ratio of medians taken over different rounds does not."""
    walls = {
        "stock": [12, 33, 24],
        "serial": [11, 31, 22],
        "1w": [10, 30, 20],
        "1t": [10, 30, 20],
        "nw": [5, 20, 16],
        "ceiling 1": [8, 24, 16],
        "ceiling n": [4, 12, 9],
    }
    lines = ratio_lines(walls, workers=2, threads=1, cores=2)
    assert _ratio(lines, "throughput 2 workers / 1 worker, 1 torch") == 1.5  # 2.0, 1.5, 1.25
    assert _ratio(lines, "the machine's ceiling") == 2.0  # 2.0, 2.0, 1.78
    assert _ratio(lines, "stock time") == 1.2  # 1.2, 1.1, 1.2
    assert "rounds: 2.00, 1.50, 1.25" in lines[1]
    assert _ratio(lines, "serial nbgrader") == 1.1  # 1.1, 1.03, 1.1
    assert _ratio(lines, "2 workers / the 2-lane floor") == 1.67  # 1.25, 1.67, 1.78
    # Per notebook: 32 submissions graded, 8 notebooks executed in the ceiling's lanes.
    per_notebook = ratio_lines(walls, workers=2, threads=1, cores=2, submissions=32, notebooks=8)
    assert _ratio(per_notebook, "2 workers / the 2-lane floor") == 0.42  # 0.31, 0.42, 0.44
