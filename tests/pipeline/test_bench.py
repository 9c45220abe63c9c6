"""The benchmark's arithmetic and pieces (the benchmark itself is run by ``make bench``, not here)."""

import re

import nbformat

from attncourse.cells import is_test_cell
from devtools.bench import bench_submissions, floor_wall, ratio_lines


def _ratio(lines, start):
    line = next(line for line in lines if line.strip().startswith(start))
    return float(re.search(r"(\d+\.\d+)x \(target", line).group(1))


def test_each_ratio_is_taken_within_a_round_then_the_median_of_rounds():
    """A slow round slows every configuration in it: ratios of one round's runs cancel that,
    a ratio of medians taken over different rounds does not."""
    walls = {
        "stock": [10, 30, 20],
        "course": [11, 31, 22],
        "1w": [10, 30, 20],
        "nw": [5, 20, 16],
        "floor": [4, 12, 9],
    }
    lines = ratio_lines(walls, workers=2)
    assert _ratio(lines, "nbgrader autograde, the course's config / stock") == 1.1  # 1.1, 1.03, 1.1
    assert _ratio(lines, "attncourse grade, 1 worker") == 0.91  # 0.91, 0.97, 0.91
    assert (
        _ratio(lines, "attncourse grade, 2 workers / the 2-lane floor") == 1.67
    )  # 1.25, 1.67, 1.78
    assert "target <= 2.0x, met; rounds: 1.25, 1.67, 1.78" in lines[2]
    assert "target <= 1.0x, NOT met" in lines[0]


def test_the_bench_grades_complete_notebooks_one_of_them_partly_wrong():
    subs = bench_submissions("attention_variants")
    assert set(subs) == {"solution", "partly_wrong"}
    sources = {s: [c.source for c in nb.cells if not is_test_cell(c)] for s, nb in subs.items()}
    assert sources["solution"] != sources["partly_wrong"]
    for nb in subs.values():
        assert not [c for c in nb.cells if "YOUR CODE HERE" in c.source]


def test_the_floor_runs_each_notebooks_code_cells_past_a_cell_that_raises(tmp_path):
    paths = []
    for k in range(2):
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell("raise ValueError('a wrong answer')"),
            nbformat.v4.new_markdown_cell("text"),
            nbformat.v4.new_code_cell(f"open('ran-{k}', 'w').write('yes')"),
        ]
        (tmp_path / str(k)).mkdir()
        paths.append(tmp_path / str(k) / "nb.ipynb")
        nbformat.write(nb, paths[-1])
    assert floor_wall(paths, lanes=2, threads=1) > 0
    assert all((p.parent / f"ran-{k}").read_text() == "yes" for k, p in enumerate(paths))
