"""``attncourse grade`` on the toy class, on the local Dask cluster it starts itself: same
scores as plain nbgrader, a readable summary, and re-grading keeps what graders entered."""

import io
import json

import pytest
from nbgrader.api import Gradebook
from toy_course import ASSIGNMENT, class_submissions, graded_course, make_course, submit

from attncourse.gradebook import cell_scores, db_url
from attncourse.pipeline import grade

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("toy")]

IDS = ASSIGNMENT, ASSIGNMENT


def test_parallel_grading_matches_plain_nbgrader_and_summarizes(tmp_path, tmp_path_factory):
    course = make_course(tmp_path / "course")
    students = class_submissions(course)
    for student, nb in students.items():
        submit(course, student, nb)
    (course / "submitted" / "absent" / ASSIGNMENT).mkdir(parents=True)
    out = io.StringIO()

    status, results = grade(ASSIGNMENT, workers=2, course=course, progress=False, out=out)

    assert status == 0
    plain = graded_course(tmp_path_factory.getbasetemp())
    assert cell_scores(course, ASSIGNMENT) == cell_scores(plain, ASSIGNMENT)
    text = out.getvalue()
    assert "grading on a local Dask cluster, 2 workers" in text
    assert f"{ASSIGNMENT}: {len(students) + 1} students, 2 workers" in text
    for student in students:
        assert student in text
    assert "absent" in text and "missing" in text
    assert "sandbox: hidden" in text
    summary = json.loads(
        (course / "autograded" / ".attncourse" / ASSIGNMENT / "summary.json").read_text()
    )
    assert {r["student"] for r in summary["students"]} == {*students, "absent"}
    perfect = results["perfect"]
    assert perfect.status == "ok" and perfect.record.protections
    assert {results[s].worker for s in students} <= {"0", "1"}
    assert perfect.save_s < perfect.seconds / 2  # the client's share is small
    log = course / "autograded" / ".attncourse" / ASSIGNMENT / "perfect.log"
    assert "AutogradeApp" in log.read_text()
    autograded = course / "autograded" / "perfect" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert json.loads(autograded.read_text())["metadata"]["attncourse"]["protections"]

    # Graders score the written answer and override a test; grading again keeps both.
    with Gradebook(db_url(course)) as gb:
        gb.find_grade("why_scale", *IDS, "perfect").manual_score = 2.0
        gb.find_comment("why_scale", *IDS, "perfect").manual_comment = "Both points: variance d."
        gb.find_grade("double_test", *IDS, "tamper").manual_score = 0.5
        gb.db.commit()
    before = cell_scores(course, ASSIGNMENT)
    assert grade(ASSIGNMENT, workers=1, course=course, students=["perfect", "tamper"])[0] == 0
    scores = cell_scores(course, ASSIGNMENT)
    assert {s: scores[s] for s in ("wrong", "locked", "blank")} == {
        s: before[s] for s in ("wrong", "locked", "blank")
    }, "a regrade of two students keeps everyone else's scores"
    summary = json.loads(
        (course / "autograded" / ".attncourse" / ASSIGNMENT / "summary.json").read_text()
    )
    assert {r["student"] for r in summary["students"]} == {*students, "absent"}
    assert scores["perfect"]["why_scale"] == (2.0, 2.0, True)
    assert scores["tamper"]["double_test"] == (0.5, 1.0, True)
    assert scores["perfect"]["scale_test"] == (2.0, 2.0, False)
    with Gradebook(db_url(course)) as gb:
        assert gb.find_comment("why_scale", *IDS, "perfect").comment == "Both points: variance d."
        assert "torch.allclose" in gb.find_comment("double_answer", *IDS, "tamper").auto_comment
        assert len(gb.find_assignment(ASSIGNMENT).submissions) == len(students)
