"""Export: nbgrader's CSV and the Canvas import file; re-autograding keeps what graders entered."""

import csv

import pytest
import toy_course
from nbgrader.api import Gradebook

from attncourse.export import POINTS_POSSIBLE, export_grades
from attncourse.gradebook import cell_scores, db_url

IDS = toy_course.ASSIGNMENT, toy_course.ASSIGNMENT


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.reader(fh))


@pytest.mark.slow
@pytest.mark.xdist_group("toy_course")
def test_export_writes_nbgrader_csv_and_canvas_import_file(course):
    assert export_grades(course) == 0
    stock = {row["student_id"]: row for row in csv.DictReader(open(course / "grades.csv"))}
    assert stock["perfect"]["score"] == "3.0" and stock["perfect"]["max_score"] == "5.0"
    assert stock["tamper"]["score"] == "3.0"  # flagged for review, the judge's score stands
    header, points, *rows = read_csv(course / "canvas_grades.csv")
    assert header == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "toy"]
    assert points == [POINTS_POSSIBLE, "", "", "", "", "5"]
    scores = {row[3]: row[5] for row in rows}
    assert scores == {"blank": "0", "locked": "3", "perfect": "3", "tamper": "3", "wrong": "1"}


@pytest.mark.slow
@pytest.mark.xdist_group("toy_course")
def test_canvas_ids_come_from_the_canvas_roster(course):
    roster = course / "canvas_export.csv"
    roster.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section,Toy (4242),Current Score\n"
        f"{POINTS_POSSIBLE},,,,,5.00,(read only)\n"
        '"Perfect, Pat",101,S101,perfect,Sec A,,\n'
        '"Wrong, Wes",102,S102,wrong,Sec B,,\n'
        '"Absent, Abe",103,S103,absent,Sec A,,\n'
    )
    assert export_grades(course, roster=roster) == 0
    header, points, *rows = read_csv(course / "canvas_grades.csv")
    assert header[5] == "Toy (4242)"
    by_login = {row[3]: row for row in rows}
    assert by_login["perfect"] == ["Perfect, Pat", "101", "S101", "perfect", "Sec A", "3"]
    assert by_login["wrong"] == ["Wrong, Wes", "102", "S102", "wrong", "Sec B", "1"]
    assert by_login["absent"][5] == "0"  # on the roster, never submitted
    assert by_login["blank"][:3] == ["blank", "", ""]  # not on the roster: no Canvas id


@pytest.mark.slow
@pytest.mark.xdist_group("toy_course")
def test_reautograde_keeps_manual_scores_and_comments(course):
    with Gradebook(db_url(course)) as gb:
        gb.find_grade("why_scale", *IDS, "perfect").manual_score = 2.0
        gb.find_comment("why_scale", *IDS, "perfect").manual_comment = "Both points: variance d."
        gb.find_grade("double_test", *IDS, "tamper").manual_score = 1.0  # grader confirms
        gb.find_comment("double_answer", *IDS, "tamper").manual_comment = "Harmless, restored."
        gb.db.commit()
    toy_course.autograde(course, "--student=perfect")
    toy_course.autograde(course, "--student=tamper")
    scores = cell_scores(course, toy_course.ASSIGNMENT)
    assert scores["perfect"]["why_scale"] == (2.0, 2.0, True)
    assert scores["tamper"]["double_test"] == (1.0, 1.0, True)
    with Gradebook(db_url(course)) as gb:
        assert gb.find_comment("why_scale", *IDS, "perfect").comment == "Both points: variance d."
        comment = gb.find_comment("double_answer", *IDS, "tamper")
        assert comment.manual_comment == "Harmless, restored."
        assert "torch.allclose" in comment.auto_comment  # the finding is still on record
        assert gb.find_grade("double_test", *IDS, "tamper").auto_score == 1.0  # the judge's
