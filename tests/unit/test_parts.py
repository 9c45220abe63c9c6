"""Every graded cell of every assignment belongs to a part named as its text names it."""

import nbformat
import pytest

from attncourse.course import ROOT, assignments, notebook_path
from attncourse.parts import cell_parts, part_order, short_heading

EXPECTED_ORDER = {
    "attention_worksheet": [
        "Q1(a)",
        "Q1(b)",
        "Q1(c)",
        "Q1(d)",
        "Q2",
        "Q3(a)",
        "Q3(b)",
        "Q3(c)",
        "Q4(a)",
        "Q4(b)",
        "Q4(c)",
        "Q5(a)",
        "Q5(b)",
    ],
    "attention_variants": [f"Part {n}" for n in range(1, 15)],
    "mla_inference": [
        "Part 1(a)",
        "Part 1(b)",
        "Part 1(c)",
        "Part 2",
        "Part 3(a)",
        "Part 3(b)",
        "Part 4(a)",
        "Part 4(b)",
        "Part 5",
        "Part 6(a)",
        "Part 6(b)",
        "Part 6(c)",
    ],
    "attention_at_scale": [
        "Part 1(a)",
        "Part 1(b)",
        "Part 1(c)",
        "Part 2(a)",
        "Part 2(b)",
        "Part 2(c)",
        "Part 3(a)",
        "Part 3(b)",
        "Part 4(a)",
        "Part 4(b)",
        "Part 4",
        "Part 4(c)",
        "Part 5",
        "Part 6(a)",
        "Part 6(b)",
        "Part 6(c)",
        "Part 6(d)",
    ],
}


@pytest.mark.parametrize("assignment", assignments())
def test_every_graded_cell_has_a_part(assignment):
    nb = nbformat.read(notebook_path(ROOT, "release", assignment), as_version=4)
    parts = cell_parts(nb)
    graded = [
        c.metadata.nbgrader["grade_id"]
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("grade")
    ]
    assert set(graded) <= set(parts)
    assert all(p.part and not p.part.startswith(("p", "q", "lab_")) for p in parts.values())
    if assignment in EXPECTED_ORDER:
        assert part_order(nb) == EXPECTED_ORDER[assignment]


def test_a_bare_letter_takes_its_question_number():
    nb = nbformat.read(notebook_path(ROOT, "source", "attention_theory"), as_version=4)
    parts = cell_parts(nb)
    assert parts["c_query_for_average"].part == "Q1(c)"
    assert parts["c_justification"].part == "Q1(c)"
    assert parts["f_plot"].part == "Q1(f)"  # an answer no test reads keeps its own section


def test_headings_shorten_to_the_words_students_use():
    assert short_heading("Part 6 (5 points) — the rank of the tiled projection") == "Part 6"
    assert short_heading("Question 1(a) — a distribution (5 points, written)") == "Q1(a)"
    assert short_heading("Question 4 — Multi-head attention with block matrices") == "Q4"


def test_status_tells_untouched_and_unreadable_from_graded():
    from attncourse.runrecord import RunRecord
    from attncourse.status import Status, status_of
    from devtools.submissions import solution_submission

    release = nbformat.read(notebook_path(ROOT, "release", "attention_variants"), as_version=4)
    assert status_of(release, release).status is Status.UNTOUCHED
    solved = solution_submission(ROOT, "attention_variants")
    assert status_of(solved, release).graded
    broken = nbformat.v4.new_notebook()
    RunRecord(unreadable="NotJSONError: line 60 column 5").store(broken)
    status = status_of(broken, release)
    assert status.status is Status.UNREADABLE and "line 60" in status.reason
    assert "re-upload" in status.next_step
