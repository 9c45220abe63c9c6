"""``attncourse grade`` on the toy class: same scores as plain nbgrader, and a readable summary."""

import io
import json

import pytest
from toy_course import ASSIGNMENT, class_submissions, graded_course, make_course, submit

from attncourse.gradebook import cell_scores
from attncourse.pipeline import grade

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("toy")]


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
    assert perfect["status"] == "ok" and perfect["record"]["protections"]
    assert perfect["gradebook_lock_s"] < perfect["seconds"] / 2  # kernels ran outside the lock
    log = course / "autograded" / ".attncourse" / ASSIGNMENT / "perfect.log"
    assert "AutogradeApp" in log.read_text()
