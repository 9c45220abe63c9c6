"""One term on the classroom's JupyterHub, in Chromium (Playwright), as its real accounts.

The instructor releases ``attention_worksheet`` and ``attention_variants``. Ada and Ben log in
through the hub's login page and fetch both from the *Assignments* list; their answers to the
worksheet are written into their fetched notebooks (with nbformat, owned by them: typing them is not what is
tested); *Validate* and *Submit* are clicked on the page. Ada submits a blank notebook, then
the solution (the newest counts); Ben submits a partly wrong one after the due date. The
instructor collects, grades with ``attncourse grade``, scores a written answer in formgrader
and returns feedback; each student fetches theirs on the page and opens it. Checked on the
page and in the gradebook. A hub user outside the course is told why he gets no server.
"""

import datetime
import os
import re
import tempfile
import time
from contextlib import closing, contextmanager
from pathlib import Path

import nbformat
import pytest
import requests
from casetable import load
from chromium import CHROMIUM, CHROMIUM_ARGS, ensure_chromium
from classroomkit import ADA, BEN, EVE, INSTRUCTOR, as_user, nbgrader_as, password
from nbgrader.api import Gradebook

from devtools.submissions import solution_submission

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("classroom")]

RELEASED = ("attention_worksheet", "attention_variants")
GRADED = "attention_worksheet"
WRITTEN = "q4b_same_for_k_v"
ANSWER = "The same block structure holds for K and V, since each head's weights are stacked alike."
COMMENT = "Right; name the block-diagonal matrix for V as well."
MANUAL_SCORE = 1.5
# fails Q1(a)'s visible test
WRONG = next(c for c in load("attention_worksheet").cases if c.name == "one_shape_only")


def instructor(room, *cmd):
    """``cmd`` as the instructor in the course directory; fails the test with its output."""
    done = as_user(room, INSTRUCTOR, *cmd, cwd=room.course, timeout=600)
    assert done.returncode == 0, f"{cmd}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


def put_notebook(room, student, assignment, nb):
    """Write ``nb`` over the student's fetched notebook, owned by the student."""
    path = room.home(student) / assignment / f"{assignment}.ipynb"
    nbformat.write(nb, path)
    st = room.home(student).stat()
    os.chown(path, st.st_uid, st.st_gid)


@contextmanager
def logged_in(pw, room, name, shots):
    """A Chromium page of ``name``, logged in through the hub's login page, in JupyterLab."""
    browser = pw.chromium.launch_persistent_context(
        tempfile.mkdtemp(dir=shots, prefix=f"profile-{name}-"),
        executable_path=str(CHROMIUM),
        args=CHROMIUM_ARGS,
        headless=True,
        viewport={"width": 1400, "height": 1000},
    )
    page = browser.new_page()
    page.set_default_timeout(120_000)
    try:
        page.goto(f"{room.url}/hub/login")
        page.fill("#username_input", name)
        page.fill("#password_input", password(room, name))
        page.click("#login_submit")
        page.wait_for_url(re.compile(f"/user/{name}/lab"), timeout=240_000)
        page.locator(".jp-LabShell").wait_for(timeout=120_000)
        yield page
    except BaseException:
        page.screenshot(path=shots / f"{name}-failed.png")
        raise
    finally:
        browser.close()


def assignment_list(page):
    """Open nbgrader's *Assignment List* from the Nbgrader menu; return the panel."""
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    page.get_by_role("menuitem", name="Assignment List", exact=True).click()
    panel = page.locator("#nbgrader-assignment-list")
    panel.locator("#released_assignments_list_loading").wait_for(state="hidden")
    return panel


def row(panel, section, assignment):
    """The assignment's row in the released, fetched or submitted list (its notebooks' rows
    nested under it are not)."""
    rows = panel.locator(f"#{section}_assignments_list .list_item:not(.nested_list_item)")
    return rows.filter(has_text=assignment)


def fetch(panel, assignment):
    row(panel, "released", assignment).get_by_role("button", name="Fetch").click()
    row(panel, "fetched", assignment).wait_for()


def validate(page, panel, assignment):
    """Click *Validate* on the fetched notebook; return the dialog's text and close it."""
    notebook = panel.locator("#fetched_assignments_list .nested_list_item", has_text=assignment)
    if not notebook.get_by_role("button", name="Validate").is_visible():
        row(panel, "fetched", assignment).locator("a", has_text=assignment).first.click()
    notebook.get_by_role("button", name="Validate").click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=240_000)
    text = dialog.inner_text()
    dialog.get_by_role("button").last.click()
    dialog.wait_for(state="detached")
    return text


def submit(panel, assignment, times):
    """Click *Submit*; wait until the submitted list shows the ``times``-th submission (the
    only assignment submitted in this term)."""
    row(panel, "fetched", assignment).get_by_role("button", name="Submit").click()
    submitted = panel.locator("#submitted_assignments_list").get_by_text(re.compile(r" UTC$"))
    deadline = time.monotonic() + 120
    while submitted.count() < times and time.monotonic() < deadline:
        time.sleep(0.5)
    assert submitted.count() == times


def feedback(page, panel, room, student):
    """Fetch the feedback on the page and open it; return its text."""
    rows = row(panel, "submitted", GRADED)
    rows.get_by_role("button", name="Fetch Feedback").first.click()
    rows.get_by_text("(view feedback)").first.wait_for()
    (html,) = (room.home(student) / GRADED / "feedback").glob(f"*/{GRADED}.html")
    relative = html.relative_to(room.home(student))
    page.goto(f"{room.url}/user/{student}/files/{relative}")
    return page.locator("body").inner_text()


def due(room, assignment, when):
    stamp = when.strftime("%Y-%m-%d %H:%M:%S UTC")
    nbgrader_as(room, INSTRUCTOR, "db", "assignment", "add", assignment, f"--duedate={stamp}")


def test_a_term_on_the_hub(hub, tmp_path):
    ensure_chromium()
    from playwright.sync_api import sync_playwright

    room, started = hub
    began = time.monotonic()
    bin_ = room.env / "bin"
    steps = {}

    def done(step):
        steps[step] = round(time.monotonic() - began, 1)
        print(f"{steps[step]:7.1f} s  {step}", flush=True)

    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=7)
    due(room, GRADED, later)
    instructor(room, bin_ / "nbgrader", "generate_assignment", GRADED, "--force")
    for assignment in RELEASED:
        instructor(room, bin_ / "nbgrader", "release_assignment", assignment, "--force")
    done("instructor released both")
    course_release = room.course / "release" / GRADED / f"{GRADED}.ipynb"
    blank = nbformat.read(course_release, as_version=4)
    right = solution_submission(room.course, GRADED, {WRITTEN: ANSWER})
    wrong = solution_submission(room.course, GRADED, WRONG.answers)

    with sync_playwright() as pw:
        with logged_in(pw, room, ADA, tmp_path) as page:
            done("ada logs in")
            panel = assignment_list(page)
            for assignment in RELEASED:
                fetch(panel, assignment)
            put_notebook(room, ADA, GRADED, blank)
            submit(panel, GRADED, 1)
            put_notebook(room, ADA, GRADED, right)
            assert "Success! Your notebook passes all the tests." in validate(page, panel, GRADED)
            submit(panel, GRADED, 2)
            done("ada fetched, validated, submitted twice")

        # nbgrader keeps the due date to the second: the next whole second after ada's last
        # submission (truncating now could put her 0.1 s late), then ben submits after it
        deadline = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        deadline += datetime.timedelta(seconds=1)
        due(room, GRADED, deadline)
        wait = (deadline - datetime.datetime.now(datetime.UTC)).total_seconds()
        time.sleep(max(wait, 0) + 0.2)
        with logged_in(pw, room, BEN, tmp_path) as page:
            panel = assignment_list(page)
            for assignment in RELEASED:
                fetch(panel, assignment)
            put_notebook(room, BEN, GRADED, wrong)
            shown = validate(page, panel, GRADED)
            assert "The following cell failed:" in shown, shown
            assert "return one shape per weight" in shown, shown
            submit(panel, GRADED, 1)
            done("ben fetched, validated, submitted late")

        instructor(room, bin_ / "attncourse", "collect", GRADED)
        instructor(room, bin_ / "attncourse", "grade", GRADED, "--workers", "2")
        done("instructor collected and graded")

        db = f"sqlite:///{room.course / 'gradebook.db'}"
        with closing(Gradebook(db, room.course_id)) as gb:
            ada_notebook = gb.find_submission_notebook(GRADED, GRADED, ADA).id
        with logged_in(pw, room, INSTRUCTOR, tmp_path) as page:
            with page.expect_response(lambda r: "/formgrader/api/comments" in r.url):
                page.goto(f"{room.url}/user/{INSTRUCTOR}/formgrader/submissions/{ada_notebook}/")
            page.wait_for_load_state("networkidle")
            score = page.locator(f"input.score#{WRITTEN}")
            assert ANSWER in page.locator("div.cell", has=score).inner_text()
            with page.expect_response(lambda r: "/formgrader/api/grade/" in r.url) as saved:
                score.fill(str(MANUAL_SCORE))
                score.press("Tab")
            assert saved.value.ok
            comment = page.locator(f"textarea.comment#{WRITTEN}-comment")
            with page.expect_response(lambda r: "/formgrader/api/comment/" in r.url) as saved:
                comment.fill(COMMENT)
                comment.press("Tab")
            assert saved.value.ok
        done("instructor graded the written answer in formgrader")

        instructor(room, bin_ / "attncourse", "feedback", GRADED)
        instructor(room, bin_ / "attncourse", "return-feedback", GRADED)
        done("instructor returned feedback")

        with closing(Gradebook(db, room.course_id)) as gb:
            scores = {s: gb.find_submission(GRADED, s) for s in (ADA, BEN)}
            total = {s: (sub.score, sub.max_score) for s, sub in scores.items()}
            late = {s: sub.total_seconds_late for s, sub in scores.items()}
            grade = gb.find_grade(WRITTEN, GRADED, GRADED, ADA)
            assert grade.manual_score == MANUAL_SCORE and not grade.needs_manual_grade
            assert gb.find_comment(WRITTEN, GRADED, GRADED, ADA).manual_comment == COMMENT
        assert late[ADA] == 0 and late[BEN] > 0
        assert total[ADA][0] > total[BEN][0] > 0, total

        for student in (ADA, BEN):
            with logged_in(pw, room, student, tmp_path) as page:
                text = feedback(page, assignment_list(page), room, student)
            shown = re.search(r"Score: ([\d.]+) / ([\d.]+)", text)
            assert shown, text[:1000]
            assert (float(shown[1]), float(shown[2])) == total[student], (student, text[:500])
            assert (COMMENT in text) == (student == ADA)
        done("students fetched and opened their feedback")

    print(f"hub start {started:.1f} s; term {time.monotonic() - began:.1f} s")


def test_a_hub_user_outside_the_course_is_told_why_he_has_no_server(hub):
    room, _ = hub
    with requests.Session() as s:
        s.get(f"{room.url}/hub/login")
        form = {"username": EVE, "password": password(room, EVE), "_xsrf": s.cookies["_xsrf"]}
        s.post(f"{room.url}/hub/login", data=form)
        page = s.get(f"{room.url}/hub/spawn/{EVE}")
    assert page.status_code == 403 or "has no access to this course" in page.text
    assert f"{EVE} has no access to this course" in page.text
    assert "Ask the instructor to add you to the course" in page.text
    assert not (room.home(EVE) / ".local").exists()


def test_the_hub_refuses_a_wrong_password(hub):
    room, _ = hub
    with requests.Session() as s:
        s.get(f"{room.url}/hub/login")
        form = {"username": ADA, "password": "not-her-password", "_xsrf": s.cookies["_xsrf"]}
        page = s.post(f"{room.url}/hub/login", data=form)
    assert "Invalid username or password" in page.text
    assert Path(room.home(ADA)).exists()
