"""Part 6 of attention_at_scale on its fragment: the solution passes, every case of its table
gets its verdicts from the judge, and the visible checks catch each named mistake at its own
part with no false alarm on a correct alternative."""

import json

import nbformat
import pytest
from cases_attention_at_scale_part6 import CASES, GROUPS, MESSAGES
from casetable import Table, assert_table_size
from fragmentrun import FRAGMENT, source_notebook, verdicts

from attncourse.cells import grade_id, is_test_cell
from attncourse.grading.attention_at_scale.experiment import EXPERIMENT_CHECKS
from attncourse.parts import cell_parts

TABLE = Table("attention_at_scale", tuple(CASES), GROUPS)
RESULTS = FRAGMENT.parent / "part6_results.json"


def test_solution_passes_every_visible_and_hidden_check():
    got = verdicts()
    assert set(got) == set(EXPERIMENT_CHECKS)
    assert all(v == (None, None) for v in got.values()), got


def test_points_ids_and_parts():
    nb = nbformat.read(FRAGMENT, as_version=4)
    graded = [c.metadata["nbgrader"] for c in nb.cells if c.metadata["nbgrader"]["grade"]]
    assert sum(m["points"] for m in graded) == 25
    assert all(m["grade_id"].startswith("p6_") for m in (c.metadata["nbgrader"] for c in nb.cells))
    assert graded[-1]["points"] == 8 and graded[-1]["grade_id"] == "p6_what_the_plot_shows"
    tests = {grade_id(c) for c in nb.cells if is_test_cell(c)}
    assert tests == set(EXPERIMENT_CHECKS)
    parts = {gid: p.part for gid, p in cell_parts(source_notebook()).items()}
    assert parts["p6_mqar_batch"] == "Part 6(a)"
    assert parts["p6_cache_accounting"] == parts["p6_causality"] == "Part 6(b)"
    assert parts["p6_train_step"] == "Part 6(c)"


def test_table_has_enough_cases():
    assert_table_size(TABLE)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_hidden_and_visible_verdicts(case):
    """The judge fails exactly the case's fails (naming the mistake where MESSAGES says); the
    visible check of each failing test fails too, and no visible check fails a correct case."""
    got = verdicts(case.answers)
    for test, (seen, judged) in got.items():
        if test in case.fails:
            assert judged is not None, f"{case.id}: the judge passed a wrong answer at {test}"
            assert seen is not None, f"{case.id}: no visible check of {test} catches it"
        else:
            assert judged is None, f"{case.id}: the judge rejected it at {test}:\n{judged}"
            assert seen is None, f"{case.id}: a false alarm at {test}:\n{seen}"
    if case.id in MESSAGES:
        test, words = MESSAGES[case.id]
        assert words in got[test][1], (
            f"{case.id}: {test}'s message lacks {words!r}:\n{got[test][1]}"
        )


def test_model_answer_states_the_recorded_numbers():
    """The model answer's table of accuracies is the one the solution's sweep recorded
    (fragment/run_part6.py), to the two decimals it quotes."""
    results = json.loads(RESULTS.read_text())
    nb = nbformat.read(FRAGMENT, as_version=4)
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
