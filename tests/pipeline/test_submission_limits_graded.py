"""The limits in one real ``nbgrader autograde`` run: hostile students beside an honest one;
each refusal names its limit and cell in the graded notebook, the honest score is unchanged."""

import nbformat
import pytest

from attncourse.constants import AUTOGRADED
from attncourse.course import ROOT, nbgrader, notebook_path
from attncourse.gradebook import cell_scores
from attncourse.runrecord import RunRecord
from devtools import hostile
from devtools.autograde import prepare
from devtools.submissions import solution_submission, write_submission

pytestmark = [
    pytest.mark.slow,
    pytest.mark.kernel,
    pytest.mark.xdist_group("submission_limits_graded"),
]

ASSIGNMENT = "attention_worksheet"
LIMITS = """
c.SubmissionLimits.max_cells = 120
c.SubmissionLimits.max_notebook_bytes = 5_000_000
c.ResilientExecute.max_outputs = 200
"""


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = prepare(tmp_path_factory.mktemp("limits") / "course", [ASSIGNMENT])
    with open(course / "nbgrader_config.py", "a") as config:
        config.write(LIMITS)
    honest = solution_submission(ROOT, ASSIGNMENT)
    students = {
        "honest": honest,
        "cells": hostile.many_cells(honest, 300),
        "outputs": hostile.many_outputs(honest, 5_000),
        "bomb": hostile.parse_bomb(honest, cells=6),
        "attachment": hostile.attachment(honest, megabytes=6),
    }
    for student, nb in students.items():
        write_submission(course, student, ASSIGNMENT, nb)
    nbgrader("autograde", ASSIGNMENT, "--force", cwd=course, check=False, quiet=True)
    return course, cell_scores(course, ASSIGNMENT)


def record(course, student):
    path = notebook_path(course, AUTOGRADED, ASSIGNMENT, student)
    return RunRecord.of(nbformat.read(path, as_version=4))


def test_the_honest_student_keeps_full_marks_and_each_hostile_one_a_row(graded):
    _, scores = graded
    auto = [(s, top) for s, top, manual in scores["honest"].values() if not manual]
    assert auto and all(s == top for s, top in auto)
    assert set(scores) == {"honest", "cells", "outputs", "bomb", "attachment"}
    for student in ("cells", "outputs", "bomb"):  # only added cells were refused
        assert scores[student] == scores["honest"], student


@pytest.mark.parametrize(
    "student, limit, where",
    [
        ("cells", "SubmissionLimits.max_cells", "cells past the first 120"),
        ("outputs", "too many outputs", "a cell you added after"),
        ("bomb", "SubmissionLimits.max_parse_bytes", "a cell you added after"),
        ("bomb", "SubmissionLimits.max_cell_source_bytes", "a cell you added after"),
    ],
)
def test_each_refusal_names_its_limit_and_its_cell(graded, student, limit, where):
    course, _ = graded
    faults = record(course, student).faults
    assert any(limit in f["fault"] and where in f["where"] for f in faults), faults


def test_a_file_over_the_size_limit_is_refused_whole_by_name(graded):
    course, _ = graded
    said = record(course, "attachment").refused
    assert said and "SubmissionLimits.max_notebook_bytes" in said
