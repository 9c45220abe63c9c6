"""The class report: figures and tables built from a graded course."""

import base64
import json
import re

import pytest
import toy_course
from nbformat.v4 import new_output

from attncourse.report import build_report, failure_message, render, run_summary_path

FIGURES = [
    "score distribution",
    "failure rate per test",
    "most common mistakes",
    "integrity findings",
    "grading time per student",
]


def figures(page):
    """alt text -> decoded PNG bytes of every embedded figure."""
    found = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([^"]+)">', page)
    return {alt: base64.b64decode(data) for alt, data in found}


def test_failure_message_prefers_the_likely_cause():
    error = new_output(
        "error",
        ename="GradingError",
        evalue="MyMHA: values differ\n  expected: x\n  got:      y\n  likely cause: missing 1/sqrt(D_qk)",
        traceback=[],
    )
    assert failure_message(error) == "missing 1/sqrt(D_qk)"
    plain = new_output(
        "error", ename="NameError", evalue="name 'MyGQA' is not defined", traceback=[]
    )
    assert failure_message(plain) == "NameError: name 'MyGQA' is not defined"


def test_empty_gradebook_gives_a_page_that_says_so():
    assert "No graded submissions" in render([])


@pytest.mark.slow
@pytest.mark.xdist_group("toy_course")
def test_report_has_every_figure_and_table(course):
    out = build_report(course)
    assert out == course / "reports" / "index.html"
    page = out.read_text()
    pngs = figures(page)
    assert sorted(pngs) == sorted(FIGURES)
    assert all(png.startswith(b"\x89PNG\r\n\x1a\n") for png in pngs.values())
    assert "<td>divides by d instead of sqrt(d)</td>" in page  # the mistake the class made
    assert re.search(r"<td>scale_test</td><td class=\"num\">2/5</td>", page)
    assert re.search(r"<td>tamper</td><td>double_answer</td><td>rebinding</td>", page)
    assert "<td>locked cell edited</td>" in page
    assert "execution time recorded in the autograded notebooks" in page
    for student in ("perfect", "wrong", "tamper", "locked", "blank"):
        assert re.search(rf"<td>{student}</td><td class=\"num\">\d+\.\d</td><td></td>", page)


@pytest.mark.slow
@pytest.mark.xdist_group("toy_course")
def test_report_reads_timing_from_the_run_summary_and_survives_a_missing_notebook(course):
    rows = [
        {"student": "perfect", "seconds": 12.5, "status": "graded"},
        {"student": "wrong", "seconds": 7.25, "status": "graded"},
        {"student": "ghost", "status": "missing"},
    ]
    path = run_summary_path(course / "autograded", toy_course.ASSIGNMENT)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"assignment": toy_course.ASSIGNMENT, "students": rows}))
    (course / "autograded" / "blank" / toy_course.ASSIGNMENT / "toy.ipynb").unlink()
    page = build_report(course).read_text()
    assert '<td>scale_test</td><td class="num">2/5</td>' in page  # blank's from the gradebook
    assert "the summary of the last attncourse grade run" in page
    assert '<td>perfect</td><td class="num">12.5</td><td>graded</td>' in page
    assert '<td>wrong</td><td class="num">7.2</td><td>graded</td>' in page
