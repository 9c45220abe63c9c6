"""The class report: figures and tables built from a graded course."""

import base64
import json
import re

import pytest
import toy_course
from nbformat.v4 import new_output

from attncourse.report import (
    build_report,
    failure_message,
    mistake_cause,
    not_attempted,
    render,
    run_summary_path,
)

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


def error(evalue, ename="GradingError"):
    return new_output("error", ename=ename, evalue=evalue, traceback=[])


def test_mistakes_group_by_cause_with_the_sizes_taken_out():
    drawn = [
        "MyMHA(13, 14, 8, 10, 6) raised ValueError: got shape [2, 5, 7], max error 0.0123",
        "MyMHA(9, 11, 4, 12, 5) raised ValueError: got shape [3, 9, 4], max error 1.5e-03",
    ]
    causes = {mistake_cause(error(evalue)) for evalue in drawn}
    assert causes == {"GradingError: MyMHA(…) raised ValueError: got shape […], max error …"}
    named = (
        "scale: values differ\n  expected: 0.5\n  got: 0.25\n  likely cause: missing 1/sqrt(D_qk)"
    )
    assert mistake_cause(error(named)) == "missing 1/sqrt(D_qk)"
    other = "scale: values differ\n  likely cause: divides by d instead of sqrt(d)"
    assert mistake_cause(error(other)) != mistake_cause(error(named))


def test_a_stub_left_as_it_was_is_not_attempted_not_a_mistake():
    assert not_attempted(error("", ename="NotImplementedError"))
    assert not_attempted(error("MyGQA(3, 4) raised NotImplementedError"))
    assert not not_attempted(error("MyGQA: values differ\n  likely cause: contiguous grouping"))


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
    assert re.search(
        r"<td>tamper</td><td>Part 2</td><td>rebinding</td><td>[^<]*</td>"
        r"<td>line \d+ of the answer cell</td>",
        page,
    )
    assert "<td>locked cell edited</td>" in page
    assert "execution time recorded in the autograded notebooks" in page
    flagged = re.findall(r"<tr><td>(\w+)</td><td>integrity: [^<]+</td></tr>", page)
    assert flagged == ["locked", "tamper"], "the students autograde flagged for a finding"
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


@pytest.mark.slow
@pytest.mark.xdist_group("toy_course")
def test_autograde_ticks_nbgrader_flag_for_a_finding_and_the_pipeline_carries_it(course):
    from contextlib import closing

    from nbgrader.api import Gradebook

    from attncourse.gradebook import autograde_results, db_url, save_autograde_results

    url = db_url(course)
    flags = {}
    with closing(Gradebook(url)) as gb:
        for student in ("perfect", "wrong", "tamper", "locked", "blank"):
            nb = gb.find_submission_notebook(toy_course.ASSIGNMENT, toy_course.ASSIGNMENT, student)
            flags[student] = nb.flagged
    assert flags == {"perfect": 0, "wrong": 0, "tamper": 1, "locked": 1, "blank": 0}

    tamper = autograde_results(url, toy_course.ASSIGNMENT, "tamper")
    perfect = autograde_results(url, toy_course.ASSIGNMENT, "perfect")
    with closing(Gradebook(url)) as gb:
        for student in ("tamper", "perfect"):
            nb = gb.find_submission_notebook(toy_course.ASSIGNMENT, toy_course.ASSIGNMENT, student)
            nb.flagged = student == "perfect"  # a grader flagged perfect; tamper's flag cleared
        gb.db.commit()
        for student, results in (("tamper", tamper), ("perfect", perfect)):
            save_autograde_results(gb, toy_course.ASSIGNMENT, student, results, LatePenalty())
        for student in ("tamper", "perfect"):
            nb = gb.find_submission_notebook(toy_course.ASSIGNMENT, toy_course.ASSIGNMENT, student)
            assert nb.flagged, f"{student}: the finding's flag, or the grader's, is kept"


class LatePenalty:
    """No late submission in the toy class: the penalty plugin is never asked."""

    plugin_inst = None
