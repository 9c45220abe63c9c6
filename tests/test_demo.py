"""The demo reads like a real term: answers in the students' own words, assignments released."""

import nbformat
import pytest

from attncourse.autograde import prepare
from attncourse.course import ROOT, assignments, notebook_path
from attncourse.demo import PARTLY, RIGHT, WRONG, demo_module
from attncourse.exchange import publish
from attncourse.markscheme import MARK_SCHEME, is_manually_graded_answer, mark_schemes
from attncourse.submissions import solution_submission


def written_answers(assignment, answers):
    """grade_id -> the written answers of one demo student's submission."""
    nb = solution_submission(ROOT, assignment, answers)
    return {
        c.metadata.nbgrader["grade_id"]: c.source for c in nb.cells if is_manually_graded_answer(c)
    }


@pytest.mark.parametrize("assignment", assignments())
def test_demo_students_write_their_own_answers_right_partly_right_and_wrong(assignment):
    source = nbformat.read(notebook_path(ROOT, "source", assignment), as_version=4)
    schemes = mark_schemes(source)
    demo = demo_module(assignment)
    assert set(demo.WRITTEN) == set(schemes), "every written question has demo answers"
    levels = set()
    for student, answers in demo.STUDENTS.items():
        if answers == "release":
            continue
        for grade_id, text in written_answers(assignment, answers).items():
            assert MARK_SCHEME not in text and "Model answer" not in text, (student, grade_id)
            assert text.strip() not in schemes[grade_id][1], f"{student} copied the model answer"
            levels |= {lv for lv in (RIGHT, PARTLY, WRONG) if demo.WRITTEN[grade_id][lv] == text}
    assert levels == {RIGHT, PARTLY, WRONG}, "the class has right, partly right and wrong answers"


@pytest.mark.slow
def test_the_demo_publishes_its_assignments_to_the_exchange(tmp_path):
    course = prepare(tmp_path / "demo", ["attention_worksheet"])
    assert publish("attention_worksheet", course).returncode == 0
    released = course / "exchange" / "attention" / "outbound" / "attention_worksheet"
    assert (released / "attention_worksheet.ipynb").is_file()
