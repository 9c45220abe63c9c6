"""The class report: what the page shows, read back from the page."""

import base64
import json
import re
import shutil
import time
from fractions import Fraction
from types import SimpleNamespace

import nbformat
import pytest
import toy_course
from bs4 import BeautifulSoup
from chromium import CHROMIUM, CHROMIUM_ARGS, ensure_chromium
from nbformat.v4 import new_output

from attncourse.course import ROOT, assignments, notebook_path
from attncourse.integrity.findings import Finding
from attncourse.judge.rules import FROM_OUTSIDE
from attncourse.parts import cell_parts, part_order
from attncourse.report.causes import cause_of, not_attempted
from attncourse.report.collect import (
    ClassReport,
    course_order,
    display_names,
    not_handed_in,
    run_summary_path,
)
from attncourse.report.model import (
    RULE_NOT_VERIFIABLE,
    AssignmentReport,
    Mistake,
    PartResult,
    Submission,
)
from attncourse.report.page import build_report, render
from attncourse.status import Status, SubmissionStatus
from attncourse.workload import manual_cells
from devtools.demo import BROKEN_STUDENT, demo_students

FIGURES = {
    "each student's trend across the assignments",
    "scores",
    "failure rate per part",
    "score per part",
    "mistakes by cause",
    "grading time per student",
}


def figures(page):
    """alt text -> decoded PNG bytes of every embedded figure."""
    soup = BeautifulSoup(page, "html.parser")
    out = {}
    for img in soup.find_all("img"):
        kind, data = img["src"].split(",", 1)
        assert kind == "data:image/png;base64"
        out[img["alt"]] = base64.b64decode(data)
    return out


def error(evalue, ename="GradingError"):
    return new_output("error", ename=ename, evalue=evalue, traceback=[])


def rows_of(table):
    """The text of every row of an HTML table (a bs4 element), header first."""
    return [[c.get_text(" ", strip=True) for c in tr.find_all(["th", "td"])] for tr in table("tr")]


def table_after(section, heading):
    """The first table after the heading ``heading`` of ``section`` (a bs4 element)."""
    return section.find(lambda t: t.name in ("h3", "h4") and t.get_text() == heading).find_next(
        "table"
    )


# --- causes ------------------------------------------------------------------------------


def test_the_cause_is_the_likely_cause_the_judge_named():
    named = (
        "MyMHA: values differ\n  expected: x\n  got:      y\n  likely cause: missing 1/sqrt(D_qk)"
    )
    assert cause_of(error(named)).text == "missing 1/sqrt(D_qk)"
    plain = error("name 'MyGQA' is not defined", ename="NameError")
    assert cause_of(plain).text == "NameError: a name is not defined"


def test_named_causes_group_with_the_sizes_taken_out():
    drawn = [
        "MyMHA(13, 14, 8, 10, 6): values differ\n  got: 0.0123\n  likely cause: H=4 heads, not 13",
        "MyMHA(9, 11, 4, 12, 5): values differ\n  got: 1.5e-03\n  likely cause: H=2 heads, not 11",
    ]
    assert {cause_of(error(e)) for e in drawn} == {cause_of(error(drawn[0]))}
    assert cause_of(error(drawn[0])).named
    assert cause_of(error(drawn[0])).text == "H=… heads, not …"
    inline = "the answer could not be checked (TypeError: x); likely cause: an unexpected kind"
    assert cause_of(error(inline)).text == "an unexpected kind"
    other = "scale: values differ\n  likely cause: divides by d instead of sqrt(d)"
    assert cause_of(error(other)) != cause_of(error(drawn[0]))


def test_raw_errors_group_by_kind_with_the_sizes_and_names_taken_out():
    undefined = [
        error(
            "Part 10: `W_DKV_MLA` is not defined\n  expected: `W_DKV_MLA` defined\n  got: nothing"
        ),
        error("Part 5: `MyMHA` is not defined\n  expected: `MyMHA` defined\n  got: nothing"),
        error("your code raised NameError while it was being checked: name 'np2' is not defined"),
    ]
    causes = [cause_of(e) for e in undefined]
    assert {c.text for c in causes} == {"NameError: a name is not defined"}
    assert [c.detail for c in causes] == ["W_DKV_MLA", "MyMHA", "np2"]
    assert not any(c.named for c in causes)
    raised = [
        "MyMHA(13, 14, 8, 10, 6) raised RuntimeError: shape '[2, 5, 7]' is invalid for size 70",
        "MyMHA(9, 11, 4, 12, 5) raised RuntimeError: shape '[3, 9, 4]' is invalid for size 108",
    ]
    assert {cause_of(error(e)).text for e in raised} == {
        "RuntimeError: shape '[…]' is invalid for size …"
    }


def test_a_stub_left_as_it_was_is_not_attempted_not_a_mistake():
    assert not_attempted(error("", ename="NotImplementedError"))
    assert not_attempted(error("MyGQA(3, 4) raised NotImplementedError"))
    assert not not_attempted(error("MyGQA: values differ\n  likely cause: contiguous grouping"))


# --- what the report reads and derives -----------------------------------------------------


def test_assignments_come_in_course_order_and_others_after():
    names = ["mla_inference", "zeta", "attention_variants", "alpha", "attention_worksheet"]
    assert course_order(names) == [
        "attention_worksheet",
        "attention_variants",
        "mla_inference",
        "alpha",
        "zeta",
    ]


def test_students_are_named_as_the_gradebook_names_them():
    students = [
        SimpleNamespace(id="ada", first_name="Ada", last_name="Lovelace"),
        SimpleNamespace(id="s1", first_name=None, last_name=None),
        SimpleNamespace(id="jo1", first_name="Jo", last_name="Smith"),
        SimpleNamespace(id="jo2", first_name="Jo", last_name="Smith"),
    ]
    assert display_names(students) == {
        "ada": "Ada Lovelace",
        "s1": "s1",
        "jo1": "Jo Smith (jo1)",
        "jo2": "Jo Smith (jo2)",
    }


def test_a_submission_never_read_is_refused_with_the_runs_words():
    refused = "refused toy.ipynb: a symbolic link; never read"
    assert not_handed_in({"status": "missing", "details": refused}, "") == SubmissionStatus(
        Status.REFUSED, refused
    )
    assert not_handed_in(None, "no submission") == SubmissionStatus(Status.MISSING, "no submission")


def part(score, max_score, failed=0, tests=1, attempted=True, waiting=0, written=0):
    result = PartResult(score, max_score, tests, failed, attempted=attempted)
    result.written, result.waiting, result.waiting_points = written, waiting, 4.0 * waiting
    result.max_score += result.waiting_points
    return result


PATCH = f"Part 1: the judge cannot verify the no-loops rule\n  likely cause: {FROM_OUTSIDE}"


def small_class():
    """Part 1, Part 2 (autograded) and Q3(b) (written): ada right, ben wrong in both parts,
    eve's library patch fails three tests of Part 1 and she left Part 2 as released; cy
    handed in the release, dan an unreadable file (their tests failed: not counted)."""
    graded = SubmissionStatus(Status.GRADED)
    report = AssignmentReport("attention_variants", 14.0)
    report.parts = ["Part 1", "Part 2", "Q3(b)"]
    report.kinds = {"Part 1": {"answer", "test"}, "Part 2": {"answer", "test"}}
    report.kinds["Q3(b)"] = {"written"}
    subs = {
        "ada": {"Part 1": part(5, 5), "Part 2": part(5, 5)},
        "ben": {"Part 1": part(0, 5, failed=1), "Part 2": part(2, 5, failed=1)},
        "eve": {"Part 1": part(2, 5, failed=3, tests=3), "Part 2": part(0, 5, 1, attempted=False)},
    }
    for student, parts in subs.items():
        parts["Q3(b)"] = part(0, 0, tests=0, waiting=1, written=1)
        report.submissions[student] = Submission(student, graded, 0, parts)
    for student, status in (("cy", Status.UNTOUCHED), ("dan", Status.UNREADABLE)):
        parts = {p: part(0, 5, failed=1, attempted=False) for p in ("Part 1", "Part 2")}
        parts["Q3(b)"] = part(0, 4, tests=0, written=1)
        report.submissions[student] = Submission(student, SubmissionStatus(status, "why"), 0, parts)
    for test in ("p1_values", "p1_rules", "p1_shapes"):
        report.mistakes.append(Mistake("eve", "Part 1", test, cause_of(error(PATCH))))
    wrong = "Part 1: values differ\n  likely cause: missing 1/sqrt(D_qk)"
    report.mistakes.append(Mistake("ben", "Part 1", "p1_values", cause_of(error(wrong))))
    undefined = "Part 2: `W_DKV_MLA` is not defined\n  got: nothing"
    report.mistakes.append(Mistake("ben", "Part 2", "p2", cause_of(error(undefined))))
    finding = Finding(3, "p1", "Part 1", "rebinding", 1, "assigns torch.allclose")
    other = Finding(3, "p1", "Part 1", "rebinding", 2, "assigns torch.testing.assert_close")
    report.findings = [("eve", finding), ("eve", other), ("eve", finding)]
    return report


def test_failure_rates_count_only_graded_submissions_that_attempted_the_part():
    report = small_class()
    assert report.failure_rate("Part 1") == (["ben", "eve"], ["ada", "ben", "eve"])
    assert report.failure_rate("Part 2") == (["ben"], ["ada", "ben"])
    assert report.not_attempted("Part 2") == ["eve"]
    assert {s: [x.student for x in subs] for s, subs in report.apart().items()} == {
        Status.UNTOUCHED: ["cy"],
        Status.UNREADABLE: ["dan"],
    }


def test_one_patch_is_one_mistake_and_one_finding_per_part():
    report = small_class()
    groups = report.mistake_groups()
    assert [(g.cause.text, sorted(g.students), g.parts, g.cause.named) for g in groups] == [
        (FROM_OUTSIDE, ["eve"], ["Part 1"], True),
        ("missing 1/sqrt(D_qk)", ["ben"], ["Part 1"], True),
        ("NameError: a name is not defined", ["ben"], ["Part 2"], False),
    ]
    assert groups[2].details == {"W_DKV_MLA"}
    ((student, finding),) = report.findings_once()
    assert (student, finding.part, finding.kind) == ("eve", "Part 1", "rebinding")
    assert finding.detail == "assigns torch.allclose; assigns torch.testing.assert_close"
    assert report.integrity_by_part() == {"Part 1": {"rebinding": 1, RULE_NOT_VERIFIABLE: 1}}


NAMES = {"ada": "Ada Lovelace", "ben": "Ben Okafor", "eve": "Eve Martin", "dan": "Dan Reyes"}


def test_the_page_shows_rates_matrix_backlog_and_who_is_counted_apart():
    page = render(ClassReport([small_class()], NAMES))
    soup = BeautifulSoup(page, "html.parser")
    section = soup.find("section", id="attention_variants")
    assert "default-src 'none'" in soup.find("meta", attrs={"http-equiv": True})["content"]
    assert not soup.find("script")
    assert set(figures(page)) >= FIGURES - {"grading time per student"}  # none recorded
    rates = rows_of(table_after(section, "Failure rate per part"))
    assert [r[:5] for r in rates[1:]] == [
        ["Part 1", "2", "3", "67%", "Ben Okafor, Eve Martin"],
        ["Part 2", "1", "2", "50%", "Ben Okafor"],
    ]
    assert rates[2][5] == "Eve Martin"  # left Part 2 as released: not attempted, not failed
    assert "Dan" not in str(table_after(section, "Failure rate per part")) and "cy" not in rates
    apart = rows_of(table_after(section, "Not graded: counted apart"))
    assert [r[:3] for r in apart[1:]] == [
        ["untouched", "1", "cy"],
        ["unreadable", "1", "Dan Reyes"],
    ]
    heat = next(alt for alt in figures(page) if "heat map" in alt)
    shown = soup.find("div", class_="default").table
    assert rows_of(shown)[0] == ["student", "total", "Part 1", "Part 2", "Q3(b)"]
    students = [r[0] for r in rows_of(shown)[1:]]
    assert students == ["Ben Okafor", "Eve Martin", "Ada Lovelace"]  # lowest total first
    assert f"rows: {', '.join(students)}; columns: Part 1, Part 2, Q3(b)" in heat
    assert rows_of(shown)[2][2:] == ["2/5", "–", "awaiting"]
    backlog = section.find("p", class_="backlog")
    assert backlog["data-waiting"] == "3"
    assert rows_of(table_after(section, "Written answers waiting for a grader"))[1] == [
        "Q3(b)",
        "3",
        "3",
    ]


def test_the_matrix_table_sorts_by_every_column_without_a_script():
    soup = BeautifulSoup(render(ClassReport([small_class()], NAMES)), "html.parser")
    orders = {div["data-order"]: div for div in soup.find_all("div", class_="sorted")}
    assert list(orders) == ["total", "student", "Part 1", "Part 2", "Q3(b)"]
    first_column = {o: [r[0] for r in rows_of(d.table)[1:]] for o, d in orders.items()}
    assert first_column["student"] == ["Ada Lovelace", "Ben Okafor", "Eve Martin"]
    assert first_column["Part 2"] == ["Ben Okafor", "Ada Lovelace", "Eve Martin"]
    for div in orders.values():  # each heading links to its own order
        links = [a["href"] for a in div.table.tr.find_all("a")]
        assert all(soup.find(id=href[1:]) for href in links)


def test_empty_gradebook_gives_a_page_that_says_so():
    assert "No graded submissions" in render(ClassReport([], {}))


# --- the toy class, autograded -----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.xdist_group("toy_course")
def test_report_of_the_toy_class(course):
    out = build_report(course)
    assert out == course / "reports" / "index.html"
    page = out.read_text()
    soup = BeautifulSoup(page, "html.parser")
    section = soup.find("section", id=toy_course.ASSIGNMENT)
    pngs = figures(page)
    assert set(pngs) >= FIGURES | {"integrity findings and unverifiable rules"}
    assert all(png.startswith(b"\x89PNG\r\n\x1a\n") for png in pngs.values())
    named = rows_of(table_after(section, "Causes the grader named"))
    assert ["divides by d instead of sqrt(d)", "1", "Part 1", "wrong"] in named
    rates = rows_of(table_after(section, "Failure rate per part"))
    # blank handed in the release: untouched, counted apart; locked's test passed as restored
    assert rates[1][:5] == ["Part 1", "1", "4", "25%", "wrong"]
    apart = rows_of(table_after(section, "Not graded: counted apart"))
    assert [r[:3] for r in apart[1:]] == [["untouched", "1", "blank"]]
    findings = rows_of(table_after(section, "Integrity findings"))
    assert ["tamper", "Part 2", "rebinding"] in [r[:3] for r in findings]
    assert ["locked", "Part 1", "locked cell edited"] in [r[:3] for r in findings]
    flagged = [r[0] for r in rows_of(table_after(section, "Flagged for review"))[1:]]
    # flagged for a finding (locked, tamper) or as not graded (blank handed in the release)
    assert flagged == ["blank", "locked", "tamper"], "the students autograde flagged"
    assert soup.find("p", class_="backlog")["data-waiting"] == "4"
    assert "execution time recorded in the autograded notebooks" in page


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
    (course / "autograded" / "wrong" / toy_course.ASSIGNMENT / "toy.ipynb").unlink()
    soup = BeautifulSoup(build_report(course).read_text(), "html.parser")
    section = soup.find("section", id=toy_course.ASSIGNMENT)
    apart = rows_of(table_after(section, "Not graded: counted apart"))
    # wrong: no autograded notebook; ghost: in the run's summary, not in the gradebook
    assert ["missing", "2", "ghost, wrong"] in [r[:3] for r in apart]
    assert "the summary of the last attncourse grade run" in str(soup)
    timing = rows_of(table_after(section, "Grading time per student"))
    assert ["perfect", "12.5", "graded"] in timing and ["wrong", "7.2", "graded"] in timing


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
    # blank handed in the release: flagged as not graded (untouched), not for a finding
    assert flags == {"perfect": 0, "wrong": 0, "tamper": 1, "locked": 1, "blank": 1}

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


# --- the demo class, in Chromium --------------------------------------------------------

DEMO_NAMES = {
    "ada": ("Ada", "Lovelace"),
    "ben": ("Ben", "Okafor"),
    "cy": ("Cy", "Young"),
    "dan": ("Dan", "Reyes"),
    "eve": ("Eve", "Martin"),
}


def demo_report(demo_class, tmp_path):
    """The report of a copy of the demo class whose students have first and last names."""
    from contextlib import closing

    from nbgrader.api import Gradebook

    from attncourse.gradebook import db_url

    course = shutil.copytree(demo_class, tmp_path / "demo")
    with closing(Gradebook(db_url(course))) as gb:
        for student in gb.students:
            first, last = DEMO_NAMES[student.id]
            gb.update_or_create_student(student.id, first_name=first, last_name=last)
    start = time.monotonic()
    out = build_report(course)
    return course, out, time.monotonic() - start


def shown_rows(locator):
    """The visible rows of the table ``locator`` names, as lists of cell texts."""
    return [
        [cell.strip() for cell in row]
        for row in locator.evaluate("t => [...t.rows].map(r => [...r.cells].map(c => c.innerText))")
    ]


@pytest.mark.slow
@pytest.mark.browser
def test_the_demo_report_in_chromium_shows_the_class_as_graded(demo_class, tmp_path):
    from playwright.sync_api import sync_playwright

    ensure_chromium()
    course, out, seconds = demo_report(demo_class, tmp_path)
    print(f"attncourse report on the demo class: {seconds:.1f} s")
    name = {s: f"{first} {last}" for s, (first, last) in DEMO_NAMES.items()}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            problems = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.goto(out.as_uri())
            sections = page.locator("section[id]").evaluate_all("s => s.map(x => x.id)")
            assert sections == ["overview", *assignments(ROOT)]  # course order
            images = page.locator("img").evaluate_all("i => i.map(x => x.naturalWidth)")
            assert images and all(width > 0 for width in images)  # every figure drawn

            variants = page.locator("section#attention_variants")
            students = demo_students("attention_variants")
            graded = sorted(s for s, answers in students.items() if answers != "release")
            release = nbformat.read(notebook_path(course, "release", "attention_variants"), 4)

            # The heat map and the table below it: graded students by name, parts as labelled.
            heat = variants.locator("img[alt*='heat map']").get_attribute("alt")
            rows, columns = re.fullmatch(r".*; rows: (.*); columns: (.*)", heat).groups()
            table = variants.locator(".sorted:visible table")
            assert table.count() == 1
            shown = shown_rows(table)
            assert shown[0] == ["student", "total", *part_order(release)]
            assert columns.split(", ") == part_order(release)
            assert rows.split(", ") == [r[0] for r in shown[1:]]
            assert sorted(rows.split(", ")) == sorted(name[s] for s in graded)

            # A column heading re-orders the table in the browser (no script: :target).
            table.locator("th a", has_text=re.compile(r"^Part 7$")).click()
            table = variants.locator(".sorted:visible table")
            assert variants.locator(".sorted:visible").get_attribute("data-order") == "Part 7"
            part7 = [r[shown[0].index("Part 7")] for r in shown_rows(table)[1:]]
            shares = [Fraction(cell.split()[0]) for cell in part7]  # "3/10"
            assert shares == sorted(shares)

            # Failure rates: over the graded submissions that attempted the part, nobody else.
            rates = shown_rows(
                variants.locator("h3:text-is('Failure rate per part') + p + img + table")
            )
            assert {r[2] for r in rates[1:]} == {str(len(graded))}
            assert not any(
                name[BROKEN_STUDENT] in cell or name["cy"] in cell for r in rates for cell in r
            )
            apart = shown_rows(
                variants.locator("h3:text-is('Not graded: counted apart') + p + table")
            )
            assert [r[:3] for r in apart[1:]] == [
                ["untouched", "1", name["cy"]],
                ["unreadable", "1", name[BROKEN_STUDENT]],
            ]

            # The backlog: every graded student's written answers wait (the demo grades none).
            written = [
                c.grade_id
                for c in manual_cells(
                    nbformat.read(notebook_path(ROOT, "source", "attention_variants"), 4)
                )
            ]
            backlog = variants.locator("p.backlog")
            assert backlog.get_attribute("data-waiting") == str(len(written) * len(graded))
            assert backlog.inner_text().startswith(f"{len(written) * len(graded)} written answers")
            waiting = shown_rows(
                variants.locator("h3:text-is('Written answers waiting for a grader') + p + table")
            )
            parts = list(dict.fromkeys(cell_parts(release)[g].part for g in written))
            assert waiting[1:] == [[p, str(len(graded)), str(len(graded))] for p in parts]

            # One library patch: one mistake row, one finding per part.
            named = shown_rows(variants.locator("h4:text-is('Causes the grader named') + table"))
            patch = [r for r in named if r[0] == FROM_OUTSIDE]
            assert len(patch) == 1 and patch[0][1] == "1" and patch[0][3] == name["eve"]
            findings = shown_rows(
                variants.locator("h3:text-is('Integrity findings') + p + img + table")
            )
            assert [r[:3] for r in findings[1:]] == [[name["eve"], "Part 5", "rebinding"]]

            overview = shown_rows(page.locator("section#overview table").first)
            assert [r[0] for r in overview[1:]] == assignments(ROOT)
            assert overview[0][3] == "unreadable"
            assert {r[3] for r in overview[1:]} == {f"1 ({name[BROKEN_STUDENT]})"}
            assert problems == []
        finally:
            browser.close()
