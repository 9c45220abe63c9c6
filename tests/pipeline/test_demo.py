"""The demo reads like a real term: answers in the students' own words, assignments released."""

import csv
from contextlib import closing

import nbformat
import pytest
from nbgrader.api import Gradebook

from attncourse.course import ROOT, assignments, nbgrader, notebook_path
from attncourse.exchange import publish
from attncourse.gradebook import db_url
from attncourse.markscheme import MARK_SCHEME, is_manually_graded_answer, mark_schemes
from devtools.autograde import prepare
from devtools.demo import (
    BROKEN_STUDENT,
    PARTLY,
    RIGHT,
    ROSTER,
    WRONG,
    demo_module,
    import_roster,
)
from devtools.submissions import solution_submission


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


def test_every_demo_student_has_a_first_and_a_last_name():
    with open(ROOT / "demo" / ROSTER, newline="") as f:
        roster = {row["id"]: row for row in csv.DictReader(f)}
    students = {BROKEN_STUDENT}
    for assignment in assignments():
        students |= set(demo_module(assignment).STUDENTS)
    assert set(roster) == students
    assert all(row["first_name"] and row["last_name"] for row in roster.values())


@pytest.mark.slow
def test_the_demo_class_has_names_in_the_gradebook_and_grades_csv(tmp_path):
    course = prepare(tmp_path / "demo", ["attention_worksheet"])
    import_roster(course)
    with closing(Gradebook(db_url(course), "attention")) as gb:
        names = {s.id: (s.first_name, s.last_name) for s in gb.students}
    assert names["dan"] == ("Dan", "Moreau") and all(all(n) for n in names.values())
    nbgrader("export", cwd=course, quiet=True)
    with open(course / "grades.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {(r["student_id"], r["first_name"], r["last_name"]) for r in rows} >= {
        ("ada", "Ada", "Byrne"),
        ("dan", "Dan", "Moreau"),
    }
