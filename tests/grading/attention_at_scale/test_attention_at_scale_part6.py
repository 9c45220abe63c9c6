"""Part 6 of attention_at_scale run alone (``fragmentrun``): the solution passes every visible
and hidden check, its points and parts, and the model answer quotes the sweep's numbers. Its
case table joins the assignment's (``cases_attention_at_scale``): judged, and caught by the
visible checks, with the other parts' rows (``test_assignments``, ``test_visible_checks``)."""

import json
from pathlib import Path

from fragmentrun import PART6_CHECKS, part6_notebook, source_notebook, verdicts

from attncourse.cells import grade_id, is_test_cell
from attncourse.parts import cell_parts

RESULTS = Path(__file__).parents[2] / "data" / "attention_at_scale_part6_results.json"


def test_solution_passes_every_visible_and_hidden_check():
    got = verdicts()
    assert set(got) == set(PART6_CHECKS)
    assert all(v == (None, None) for v in got.values()), got


def test_points_ids_and_parts():
    nb = part6_notebook()
    graded = [c.metadata["nbgrader"] for c in nb.cells if c.metadata["nbgrader"]["grade"]]
    assert sum(m["points"] for m in graded) == 25
    assert all(m["grade_id"].startswith("p6_") for m in (c.metadata["nbgrader"] for c in nb.cells))
    assert graded[-1]["points"] == 8 and graded[-1]["grade_id"] == "p6_what_the_plot_shows"
    tests = {grade_id(c) for c in nb.cells if is_test_cell(c)}
    assert tests == set(PART6_CHECKS)
    parts = {gid: p.part for gid, p in cell_parts(source_notebook()).items()}
    assert parts["p6_mqar_batch"] == "Part 6(a)"
    assert parts["p6_cache_accounting"] == parts["p6_causality"] == "Part 6(b)"
    assert parts["p6_train_step"] == "Part 6(c)"


def test_model_answer_states_the_recorded_numbers():
    """The model answer's table of accuracies is the one the solution's sweep recorded
    (devtools/part6_sweep.py), to the two decimals it quotes."""
    results = json.loads(RESULTS.read_text())
    nb = part6_notebook()
    answer = next(c.source for c in nb.cells if grade_id(c) == "p6_what_the_plot_shows")
    rows = {}
    for line in answer.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] in ("MHA", "GQA", "MQA", "MLA"):
            rows[cells[0].lower()] = cells[1:]
    caches = results["settings"]["caches"]
    assert set(rows) == set(results["accuracy"])
    for kind, quoted in rows.items():
        recorded = [f"{results['accuracy'][kind][str(c)]:.2f}" for c in caches]
        assert quoted == recorded, f"{kind}: the answer quotes {quoted}, the sweep gave {recorded}"


def test_a_count_two_mistakes_give_names_both():
    """Part 6(b): where the secret sizes make two named mistakes give the same count, the
    message names both (H = 8, d_h = 6, r = 44, d_R = 8: the latent counted twice and the
    up-projected keys and values are both 96); a count only one gives names that one."""
    from attncourse.grading.attention_at_scale.experiment import cache_mistakes

    mla = cache_mistakes("mla", 8, 1, 6, 44, 8)
    assert "latent counted twice" in mla[96] and "up-projected" in mla[96]
    assert mla[44] == "the rotary key forgotten: MLA caches the latent c_s and the rotary key k^R_s"
    gqa = cache_mistakes("gqa", 8, 4, 6, 44, 8)  # G d_h = 2 (H/G) d_h = 24
    assert "K and V counted once" in gqa[24] and "H/G heads" in gqa[24]
    assert "; or " not in cache_mistakes("mla", 8, 1, 10, 20, 4)[2 * 20 + 4]
