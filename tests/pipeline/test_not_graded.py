"""Not graded is never shown as graded, and a name the course lacks stops a command first.

In-process, no kernel: the unreadable file's reason (line and column, as the json module
finds them) and next step, the names each command checks, and the grading summary that
counts graded, untouched, unreadable, refused and missing students apart.
"""

import io
import json
import re
from contextlib import closing

import nbformat
import pytest
import tiny_course
from nbgrader.api import Gradebook

from attncourse import cli
from attncourse.course import ROOT, assignments, notebook_path
from attncourse.feedback import generate_feedback
from attncourse.gradebook import db_url
from attncourse.gradingsummary import class_totals, outcome_of, print_summary
from attncourse.handoffs import StudentResult
from attncourse.names import UnknownName, check_known
from attncourse.pipeline import grade
from attncourse.runrecord import RunRecord
from attncourse.status import NEXT_STEP, Status
from attncourse.tolerantexporter import TolerantNotebookExporter, unreadable_cell, why_unreadable

# one worker: the module's fixtures are built once (spread over workers, each built them)
pytestmark = pytest.mark.xdist_group("not_graded")

NOTEBOOK = nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]))


def exported(text):
    """The notebook TolerantNotebookExporter makes of a submitted file's ``text``."""
    output, _ = TolerantNotebookExporter().from_file(io.StringIO(text))
    return nbformat.reads(output, as_version=4)


@pytest.mark.parametrize("cut", [40, 75, len(NOTEBOOK) - 3])
def test_an_unreadable_notebook_says_where_its_json_breaks_and_what_to_do(cut):
    text = NOTEBOOK[:cut]
    with pytest.raises(json.JSONDecodeError) as parsed:
        json.loads(text)
    nb = exported(text)
    reason = RunRecord.of(nb).unreadable
    where = f"line {parsed.value.lineno}, column {parsed.value.colno}"
    assert reason.startswith(f"the file is not valid JSON at {where} ("), reason
    (cell,) = nb.cells
    assert where in cell.source and NEXT_STEP[Status.UNREADABLE] in cell.source
    assert "re-upload a notebook saved from Jupyter" in cell.source


def test_a_readable_notebook_passes_untouched_and_other_damage_is_named():
    nb = exported(NOTEBOOK)
    assert RunRecord.of(nb).unreadable is None and nb.cells[0].source == "x = 1"
    assert why_unreadable(b"\xff\xfe{", ValueError()).startswith("the file is not UTF-8")
    assert why_unreadable("", ValueError()) == "the file is empty"
    assert "not a notebook" in why_unreadable('{"cells": 3}', ValueError("bad cells"))


# --- unknown names ----------------------------------------------------------------------------


def test_an_unknown_name_lists_those_the_course_has_close_matches_first():
    known = ["attention_worksheet", "attention_theory", "attention_variants", "mla_inference"]
    check_known("assignment", ["attention_theory"], known)  # a known one passes
    with pytest.raises(UnknownName) as unknown:
        check_known("assignment", ["attention_varients"], known)
    message = str(unknown.value)
    assert "no assignment 'attention_varients'" in message
    assert message.index("did you mean attention_variants") < message.index("mla_inference")
    with pytest.raises(UnknownName, match="it has: attention_worksheet, attention_theory"):
        check_known("assignment", ["nonexistent"], known)
    with pytest.raises(UnknownName, match="it has none"):
        check_known("student", ["zed"], [])


COMMANDS = [
    ["grade", "nonexistent"],
    ["grade", "nonexistent", "--student", "ada"],
    ["feedback", "nonexistent"],
    ["scan", "nonexistent"],
    ["similarity", "nonexistent"],
    ["collect", "nonexistent"],
    ["return-feedback", "nonexistent"],
    ["collect-lms", "download.zip", "nonexistent"],
    ["instance", "nonexistent", "--student", "ada"],
    ["bench", "--assignment", "nonexistent"],
    ["release", "attention_variants", "nonexistent"],
    ["release-zip", "nonexistent"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: argv[0])
def test_every_command_given_an_unknown_assignment_exits_non_zero_with_the_list(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main([*argv, *([] if argv[0] == "instance" else ["--course", str(ROOT)])])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"attncourse {argv[0]}: no assignment 'nonexistent' in this course" in err
    assert all(a in err for a in assignments()), err


def test_a_known_assignment_reaches_the_command(monkeypatch):
    args = cli.build_parser().parse_args(["scan", "attention_variants", "--course", str(ROOT)])
    cli.check_assignments(args)  # no UnknownName


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny course with ada's submission (nothing graded)."""
    course = tiny_course.make_course(tmp_path_factory.mktemp("names") / "course")
    (course / "submitted" / "ada" / tiny_course.ASSIGNMENT).mkdir(parents=True)
    return course


def test_grading_a_student_the_course_lacks_stops_before_anything_starts(tiny):
    with pytest.raises(UnknownName) as unknown:
        grade(tiny_course.ASSIGNMENT, course=tiny, students=["adda"], progress=False)
    assert "no student 'adda'" in str(unknown.value) and "did you mean ada" in str(unknown.value)
    assert not (tiny / "autograded").exists(), "nothing ran"
    # Control: a student on the roster with nothing handed in is graded as missing.
    out = io.StringIO()
    status, results = grade(
        tiny_course.ASSIGNMENT, course=tiny, students=["ada"], progress=False, out=out
    )
    assert status == 0 and results["ada"].outcome == Status.MISSING
    assert "next step: nothing was handed in" in out.getvalue()


# --- the grading summary ----------------------------------------------------------------------


def result(student, outcome, reason="", status="ok", score=0.0):
    next_step = NEXT_STEP.get(Status(outcome), "") if outcome else ""
    return StudentResult(
        student,
        status=status,
        score=score,
        max_score=10.0,
        outcome=outcome,
        reason=reason,
        next_step=next_step,
    )


def test_the_summary_counts_each_status_apart_with_reason_and_next_step():
    results = [
        result("ada", "graded", score=9.0),
        result("ben", "graded", status="faults", score=4.0),
        result("cy", "untouched", "every answer cell is as released"),
        result("dan", "unreadable", "the file is not valid JSON at line 60, column 5 (...)"),
        result("eve", "missing", "no a.ipynb submitted", status="missing"),
        result("fay", "refused", "refused a.ipynb: symlink to '/x'", status="missing"),
        result("gus", "", status="error"),
    ]
    out = io.StringIO()
    print_summary({"assignment": "a", "workers": 2, "wall_s": 1.0}, results, out)
    text = out.getvalue()
    assert (
        "totals: 2 graded, 1 untouched, 1 unreadable, 1 missing, 1 refused, 1 grading failed"
        in text
    )
    assert "graded runs: 1 faults, 1 ok" in text
    lines = text.splitlines()
    cy = next(line for line in lines if line.startswith("cy "))
    assert "untouched" in cy and "0/10" not in cy, "an untouched notebook shows no score"
    not_graded = text.split("not graded (4)", 1)[1]
    for r in results[2:6]:
        assert f"{r.student}: {r.outcome}: {r.reason}" in not_graded
        assert f"next step: {r.next_step}" in not_graded
    assert "line 60, column 5" in not_graded and "re-upload a notebook" in not_graded
    assert class_totals(results[:1]).startswith("1 graded, 0 untouched")


def test_a_missing_or_refused_notebook_is_told_apart_and_a_failed_run_is_no_status(tmp_path):
    missing = StudentResult("eve", missing="no a.ipynb submitted")
    assert outcome_of(missing, tmp_path, "a", None).status is Status.MISSING
    refused = StudentResult("fay", missing="refused a.ipynb: symlink to '/x': ...")
    assert outcome_of(refused, tmp_path, "a", None).status is Status.REFUSED
    assert outcome_of(StudentResult("gus", error="grading failed"), tmp_path, "a", None) is None
    unreadable = StudentResult("dan", record=RunRecord(unreadable="not JSON"))
    assert outcome_of(unreadable, tmp_path, "a", None).status is Status.UNREADABLE


# --- the feedback -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def feedback_pages(tmp_path_factory):
    """student -> feedback HTML of the tiny course: ada answered, cy handed in the release, zed
    a file that is not JSON (autograded notebooks written as autograde leaves them, not run)."""
    course = tiny_course.make_course(tmp_path_factory.mktemp("feedback") / "course")
    release = tiny_course.release_notebook(course)
    answered = nbformat.from_dict(release)
    tiny_course.cell(answered, "answer").source = "def answer():\n    return 42"
    reason = why_unreadable(NOTEBOOK[:75], ValueError())
    unreadable = nbformat.v4.new_notebook(cells=[unreadable_cell(reason)])
    unreadable.cells += [c for c in release.cells if c.metadata.get("nbgrader", {}).get("grade")]
    RunRecord(unreadable=reason).store(unreadable)
    with closing(Gradebook(db_url(course), "attention")) as gb:
        for student, nb in {"ada": answered, "cy": release, "zed": unreadable}.items():
            gb.update_or_create_student(student)
            gb.add_submission(tiny_course.ASSIGNMENT, student)
            path = notebook_path(course, "autograded", tiny_course.ASSIGNMENT, student)
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, path)
    assert generate_feedback(course, tiny_course.ASSIGNMENT, quiet=True) == 0
    pages = course.glob(f"feedback/*/{tiny_course.ASSIGNMENT}/*.html")
    return {path.parent.parent.name: path.read_text() for path in pages}


def body(page):
    """The page's body as text, tags dropped, spaces collapsed."""
    text = re.sub(r"<[^>]+>", " ", "<body" + page.split("<body", 1)[1])
    return re.sub(r"\s+", " ", text).strip()


@pytest.mark.slow
def test_the_feedback_of_a_not_graded_submission_starts_with_why_and_what_to_do(feedback_pages):
    zed = body(feedback_pages["zed"])
    assert zed.startswith("tiny: not graded (unreadable) Why: the file is not valid JSON at line")
    assert "What to do: re-upload a notebook saved from Jupyter" in zed
    assert "Student's answer" not in zed and "Score" not in zed, "no release stub, no 0.0"
    assert zed.count("not valid JSON") == 1, "the reason once, not under every test"
    cy = body(feedback_pages["cy"])
    assert cy.startswith("tiny: not graded (untouched) Why: every answer cell is as released")
    assert NEXT_STEP[Status.UNTOUCHED] in cy
    # Control: a graded submission gets nbgrader's page, scores and answers, and no banner.
    ada = body(feedback_pages["ada"])
    assert "not graded" not in ada and "Student's answer" in ada and "Score" in ada
    assert (
        'id="not-graded"' in feedback_pages["zed"]
        and 'id="not-graded"' not in feedback_pages["ada"]
    )
