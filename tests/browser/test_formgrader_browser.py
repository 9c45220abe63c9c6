"""Grading by hand in a real browser: JupyterLab's formgrader, driven by Playwright.

The browser is Debian's Chromium (``/usr/bin/chromium``, installed with apt-get
when missing and we are root), never one downloaded by a test tool. The test
serves a scratch course with an autograded submission of ``attention_variants``,
opens formgrader from JupyterLab's *Nbgrader* menu, grades a written answer
(score and comment) and reads both back from the gradebook.

A hostile submission then checks that a grader's browser runs nothing a student
wrote: an answer whose output is ``<img src=x onerror=...>`` (the script would
mark the page and create a file through the Jupyter contents API) and written
answers with raw HTML, opened in formgrader and in JupyterLab itself. The
control: formgrader without the course's protections (the kernel's HTML output
kept, no ``c.HTMLExporter`` settings) runs it and the file appears.
"""

import re
import tempfile
import time
from contextlib import closing, contextmanager

import nbformat
import pytest
import tiny_course
from chromium import CHROMIUM, CHROMIUM_ARGS, ensure_chromium
from nbformat.v4 import new_markdown_cell
from nbgrader.api import Gradebook

from attncourse.course import ROOT, assignments, nbgrader, notebook_path
from attncourse.formgrader import running
from attncourse.gradebook import db_url
from attncourse.workload import manual_cells, workload_table
from devtools.autograde import prepare
from devtools.submissions import solution_answers, solution_submission, write_submission

ASSIGNMENT = "attention_variants"
STUDENT = "alice"
STUDENT_ANSWER = "The two ranks are equal, because the tiled matrix only repeats rows of W."
# What the same answer carries that would act in the grader's browser if rendered as written:
# log the grader out (formgrader's saves then go nowhere), reach the contents API, tell an
# outside server when the work was opened, and swallow the rest of the answer.
HOSTILE_TAIL = (
    "\n\n![](/logout)\n\n![notes](/api/contents/notes.txt) and [my files](/api/contents)\n\n"
    "![seen](https://tracker.example/seen.png)\n\n<table>\n\n"
    "So the argument holds for every head."
)

# one worker: the module's fixtures are built once (spread over workers, each built them)
pytestmark = pytest.mark.xdist_group("formgrader_browser")
COMMENT = "Equality is right; say why repeating rows leaves the row space unchanged."
# alice's Part 5 softmax goes row by row: its no-loop test fails with the judge's longest lines.
SOFTMAX = "        alpha = logits.softmax(dim=-1)"
LOOPY = "        alpha = torch.stack([row.softmax(dim=-1) for row in logits.unbind(1)], 1)"
MHA = solution_answers(nbformat.read(notebook_path(ROOT, "source", ASSIGNMENT), as_version=4))[
    "p5_mha"
]
MANUAL_SCORE = 1.5


def saves(response, kind):
    """True for formgrader's answer to saving a grade or a comment (a PUT to its API)."""
    return f"/formgrader/api/{kind}/" in response.url and response.request.method == "PUT"


def first_criterion(source_cell):
    """The opening words of the first mark-scheme criterion, as a grader reads them."""
    scheme = source_cell.source.split("**Mark scheme**", 1)[1]
    bullet = re.search(r"^\s*[-*]\s+(.+)$", scheme, re.MULTILINE)[1]
    return re.split(r"[$*`\\]", bullet)[0].strip()[:40]


@pytest.fixture(scope="module")
def graded_course(tmp_path_factory):
    """A scratch course where one student's submission of ASSIGNMENT is autograded."""
    course = prepare(tmp_path_factory.mktemp("formgrader") / "course", [ASSIGNMENT])
    source = nbformat.read(notebook_path(course, "source", ASSIGNMENT), as_version=4)
    written = manual_cells(source)[0].grade_id
    answers = {written: STUDENT_ANSWER + HOSTILE_TAIL, "p5_mha": MHA.replace(SOFTMAX, LOOPY)}
    nb = solution_submission(course, ASSIGNMENT, answers)
    write_submission(course, STUDENT, ASSIGNMENT, nb)
    nbgrader("autograde", ASSIGNMENT, "--force", cwd=course, quiet=True)
    cell = next(
        c for c in source.cells if c.metadata.get("nbgrader", {}).get("grade_id") == written
    )
    return course, source, written, cell


@pytest.mark.slow
@pytest.mark.browser
def test_grader_scores_and_comments_a_written_answer_in_formgrader(graded_course, tmp_path):
    ensure_chromium()
    from playwright.sync_api import expect, sync_playwright

    course, source, written, source_cell = graded_course
    screenshot = tmp_path / "formgrader.png"
    with running(course, tmp_path / "jupyterlab.log") as (base, token), sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            tempfile.mkdtemp(dir=tmp_path, prefix="chromium-profile-"),
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            refused = outside_requests(browser)
            page = browser.new_page()
            asked = []  # by formgrader's frame (JupyterLab's own file browser uses the API)
            page.on(
                "request",
                lambda r: asked.append(r.url) if "/formgrader" in r.frame.url else None,
            )
            page.set_default_timeout(60_000)
            page.goto(f"{base}/lab?token={token}")
            page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
            page.get_by_role("menuitem", name="Formgrader", exact=True).click()

            formgrader = page.frame_locator("iframe")
            formgrader.get_by_role("link", name="Manual Grading").click()
            formgrader.get_by_role("link", name=ASSIGNMENT, exact=True).click()
            expect(formgrader.get_by_role("columnheader", name="Notebook ID")).to_be_visible()
            formgrader.get_by_role("link", name=ASSIGNMENT, exact=True).click()
            expect(formgrader.get_by_role("columnheader", name="Submission ID")).to_be_visible()
            formgrader.get_by_role("link", name="Submission #1").click()

            score = formgrader.locator(f"input.score#{written}")
            comment = formgrader.locator(f"textarea.comment#{written}-comment")
            answer_cell = formgrader.locator("div.cell", has=score)
            shown = answer_cell.inner_text()
            assert STUDENT_ANSWER in shown and "So the argument holds for every head." in shown
            assert "/logout" in shown and "<table>" in shown, "addresses and tags shown as text"
            expect(score).to_have_class(re.compile(r"\bneeds_manual_grade\b"))

            for cell in manual_cells(source):
                answer = formgrader.locator("div.cell", has=formgrader.locator(f"#{cell.grade_id}"))
                below = answer.locator("xpath=following-sibling::div[1]")
                expect(below).to_contain_text("Mark scheme (graders only)")
                expect(below).to_contain_text(cell.grade_id)
            shown = answer_cell.locator("xpath=following-sibling::div[1]").inner_text()
            assert first_criterion(source_cell) in shown, f"{written}'s criteria are not shown"

            with page.expect_response(lambda r: saves(r, "grade")) as saved:
                score.fill(str(MANUAL_SCORE))
                score.press("Tab")
            assert saved.value.ok
            with page.expect_response(lambda r: saves(r, "comment")) as saved:
                comment.fill(COMMENT)
                comment.press("Tab")
            assert saved.value.ok
            answer_cell.scroll_into_view_if_needed()
            page.screenshot(path=screenshot)
        finally:
            browser.close()
    reached = [url for url in asked if re.search(r"/logout|/api/contents|tracker\.example", url)]
    assert reached == [] and refused == [], "the answer made the grader's browser ask for these"

    assert screenshot.stat().st_size > 10_000
    with closing(Gradebook(db_url(course), "attention")) as gb:
        grade = gb.find_grade(written, ASSIGNMENT, ASSIGNMENT, STUDENT)
        assert grade.manual_score == MANUAL_SCORE
        assert not grade.needs_manual_grade
        note = gb.find_comment(written, ASSIGNMENT, ASSIGNMENT, STUDENT)
        assert note.manual_comment == COMMENT


# The message and every box up to its cell are no wider than they show, and it ends left of the
# page's panel (other cells' code may scroll the page sideways: not the message's doing).
FITS = """el => {
    const cell = el.closest('div.cell'), panel = cell.closest('.panel');
    const chain = [];
    for (let e = el; e !== cell.parentElement; e = e.parentElement)
        chain.push([e.className, e.scrollWidth, e.clientWidth]);
    const right = el.getBoundingClientRect().right, edge = panel.getBoundingClientRect().right;
    const wide = chain.filter(([, s, w]) => s > w);
    return {fits: right <= edge && wide.length === 0, right, edge, wide};
}"""


def long_message(page):
    """The failing no-loop test's message (alice's Part 5) in a formgrader or feedback page."""
    anchor = "[id='p5_mha_no_loops_test'], a[name='p5_mha_no_loops_test']"  # formgrader, feedback
    test_cell = page.locator("div.cell", has=page.locator(anchor))
    return test_cell.locator("div.output_error pre").first


@pytest.mark.slow
@pytest.mark.browser
def test_long_messages_wrap_and_the_feedback_names_the_parts(graded_course, tmp_path):
    """A GradingError line wraps inside its cell in formgrader and in the feedback (the control:
    the same page without the course's style overflows), and the feedback's contents list names
    the parts and says "awaiting grading" for the written answers no grader has marked."""
    ensure_chromium()
    from playwright.sync_api import expect

    course, source, written, _ = graded_course
    nbgrader("generate_feedback", ASSIGNMENT, "--force", cwd=course, quiet=True)
    feedback = course / "feedback" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.html"
    with browsing(course, tmp_path / "wrap") as (page, base):
        page.set_viewport_size({"width": 800, "height": 900})  # half a laptop screen
        with closing(Gradebook(db_url(course), "attention")) as gb:
            sid = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, STUDENT).id
        page.goto(f"{base}/formgrader/submissions/{sid}")
        message = long_message(page)
        line = next(i for i, text in enumerate(MHA.splitlines(), 1) if SOFTMAX in text)
        expect(message).to_contain_text(
            f"Part 5: a list comprehension in `MyMHA.forward`, line {line} of the answer cell"
        )
        measured = message.evaluate(FITS)
        assert measured["fits"], measured
        page.evaluate("() => document.getElementById('attncourse-wrap').remove()")
        assert not message.evaluate(FITS)["fits"], "control: without the course's style it is cut"

        page.goto(feedback.as_uri())
        measured = long_message(page).evaluate(FITS)
        assert measured["fits"], measured
        entries = [" ".join(e.split()) for e in page.locator("#toc li").all_inner_texts()]
        assert (
            "Part 5 — MyMHA.forward equals a per-head loop built from its own weights, and a case "
            "you can check by hand (5.0 / 5.0)" in entries
        )
        assert any(
            e.startswith("Part 5 — MyMHA uses no loop") and "(0.0 / 2.0)" in e for e in entries
        )
        waiting = [e for e in entries if e.endswith("— written (awaiting grading)")]
        manual = [c for c in manual_cells(source) if c.grade_id != written]  # graded above
        assert len(waiting) >= len(manual) > 0, entries
        assert not [e for e in entries if e.startswith(("Test cell", "Written response"))]
        assert "Score: awaiting grading" in page.locator("body").inner_text()


def test_readme_states_the_manual_grading_workload():
    """The README's table of grading minutes is the one the mark schemes give today."""
    readme = (ROOT / "README.md").read_text()
    assert workload_table(ROOT) in readme, (
        "README.md's manual-grading table is out of date; paste the output of `make workload`"
    )


# --- a hostile submission: what the student wrote must not run in the grader's browser --------

MARK = "attncourse_pwned"
# Marks the window it runs in and creates <course>/attncourse_pwned.txt with the grader's session.
ATTACK = (
    f"window.top.{MARK} = 1; "
    "var t = (document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || ''; "
    f"fetch('/api/contents/{MARK}.txt', {{method: 'PUT', headers: {{'Content-Type': "
    "'application/json', 'X-XSRFToken': t}, body: JSON.stringify({type: 'file', "
    f"format: 'text', content: '{MARK}'}})}})"
)
PAYLOAD = f'<img src=x onerror="{ATTACK}">'
SHOWN = f"""class Shown:
    def _repr_html_(self):
        return {PAYLOAD!r}


def answer():
    return 1


Shown()"""
WRITTEN = f"My proof: $0 \\le h < H$.\n\n{PAYLOAD}\n\n<script>{ATTACK}</script>\n\n[see](javascript:{ATTACK})"
ADDED = f"A cell I added.\n\n{PAYLOAD}"


@pytest.fixture(scope="module")
def hostile_course(tmp_path_factory):
    """The tiny course with mallory's autograded submission: HTML output, HTML in Markdown."""
    course = tiny_course.make_course(tmp_path_factory.mktemp("hostile") / "course")
    nb = tiny_course.release_notebook(course)
    tiny_course.cell(nb, "answer").source = SHOWN
    tiny_course.cell(nb, "why").source = WRITTEN
    nb.cells.insert(0, new_markdown_cell(ADDED))
    write_submission(course, "mallory", tiny_course.ASSIGNMENT, nb)
    nbgrader("autograde", tiny_course.ASSIGNMENT, "--force", cwd=course, quiet=True)
    return course


def dropped_by_payload(path):
    """True once the payload's PUT through the contents API has written ``path``."""
    return path.exists() and path.read_text() == MARK


def marked(page):
    """True when the payload ran in the page or any of its frames."""
    return any(f.evaluate(f"() => Boolean(window.{MARK})") for f in page.frames)


def unprotect(course):
    """The control: mallory's notebook as autograde writes it without InertOutputs (the kernel's
    HTML output kept) and formgrader's exporter without the course's HTMLExporter settings."""
    config = course / "nbgrader_config.py"
    lines = config.read_text().splitlines()
    config.write_text("\n".join(line for line in lines if "c.HTMLExporter." not in line) + "\n")
    path = notebook_path(course, "autograded", "tiny", "mallory")
    nb = nbformat.read(path, as_version=4)
    for output in tiny_course.cell(nb, "answer").outputs:
        if output.output_type == "execute_result":
            output.data["text/html"] = PAYLOAD
    path.chmod(0o644)
    nbformat.write(nb, path)


@contextmanager
def browsing(course, tmp_path):
    """Chromium logged in to a JupyterLab server on ``course``; yields (page, base URL)."""
    from playwright.sync_api import sync_playwright

    tmp_path.mkdir()
    with running(course, tmp_path / "jupyterlab.log") as (base, token), sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            tempfile.mkdtemp(dir=tmp_path, prefix="chromium-profile-"),
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            page = browser.new_page()
            page.set_default_timeout(60_000)
            page.goto(f"{base}/lab?token={token}")
            yield page, base
        finally:
            browser.close()


@pytest.mark.slow
@pytest.mark.browser
def test_a_hostile_submission_runs_nothing_in_formgrader_or_jupyterlab(hostile_course, tmp_path):
    ensure_chromium()
    from playwright.sync_api import expect

    course = hostile_course
    raw = notebook_path(course, "autograded", "tiny", "mallory").read_text()
    assert PAYLOAD.replace('"', '\\"') in raw, "the written answers keep the student's text"
    answer = tiny_course.cell(nbformat.reads(raw, as_version=4), "answer")
    assert all(set(o.get("data", {})) <= {"text/plain"} for o in answer.outputs)
    dropped = course / f"{MARK}.txt"

    with browsing(course, tmp_path / "protected") as (page, base):
        page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
        page.get_by_role("menuitem", name="Formgrader", exact=True).click()
        formgrader = page.frame_locator("iframe")
        formgrader.get_by_role("link", name="Manual Grading").click()
        formgrader.get_by_role("link", name="tiny", exact=True).click()
        expect(formgrader.get_by_role("columnheader", name="Notebook ID")).to_be_visible()
        formgrader.get_by_role("link", name="tiny", exact=True).click()
        formgrader.get_by_role("link", name="Submission #1").click()
        why = formgrader.locator("div.cell", has=formgrader.locator("input.score#why"))
        expect(why).to_contain_text("My proof", timeout=60_000)
        expect(why).to_contain_text("<script>")  # shown as the text the student typed
        expect(formgrader.locator("div.cell").first).to_contain_text("A cell I added")
        shown = formgrader.locator("div.cell", has_text="Shown()").locator(".output_area")
        expect(shown).to_contain_text("<__main__.Shown at 0x")  # its text repr, as text
        page.wait_for_timeout(3000)  # a broken image fails, and would fire onerror, at once
        assert formgrader.locator("[onerror]").count() == 0
        assert formgrader.locator("a[href^='javascript' i]").count() == 0
        assert not marked(page) and not dropped.exists()

        # JupyterLab's own view of the autograded notebook: it sanitizes the Markdown it renders.
        page.goto(f"{base}/lab/tree/autograded/mallory/tiny/tiny.ipynb?reset")  # only it open
        added = page.locator(".jp-MarkdownOutput", has_text="A cell I added")
        expect(added).to_be_visible(timeout=60_000)  # a loaded machine takes a while to open it
        expect(page.locator(".jp-MarkdownOutput", has_text="My proof")).to_be_visible()
        page.wait_for_timeout(3000)
        assert page.locator(".jp-Notebook [onerror]").count() == 0
        assert not marked(page) and not dropped.exists()

    # Control: without InertOutputs and the HTMLExporter settings the same page runs the payload.
    unprotect(course)
    with browsing(course, tmp_path / "control") as (page, base):
        page.goto(f"{base}/formgrader/gradebook/tiny/tiny")
        page.get_by_role("link", name="Submission #1").click()
        page.wait_for_function(f"() => window.{MARK} === 1", timeout=60_000)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not dropped_by_payload(dropped):
            time.sleep(0.2)
        assert dropped_by_payload(dropped), "control: unprotected formgrader ran the payload"


# --- offline: every formula of the course renders, nothing is loaded from outside -------------

LOOPBACK = {"127.0.0.1", "localhost", "[::1]", "::1"}


def outside_requests(context):
    """Refuse (and list) every request of ``context`` that would leave the machine."""
    from urllib.parse import urlsplit

    refused = []

    def route(r):
        parts = urlsplit(r.request.url)
        if parts.scheme in ("data", "blob", "file", "about") or parts.hostname in LOOPBACK:
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    return refused


def formula_count(nb):
    """How many formulas the markdown cells of ``nb`` hold (as the page's renderer finds them)."""
    from nbconvert.filters.markdown_mistune import MarkdownWithMath

    from attncourse.safemarkdown import SafeRenderer

    count = 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            renderer = SafeRenderer()
            MarkdownWithMath(renderer=renderer).render(cell.source)
            count += len(renderer.math)
    return count


@pytest.fixture(scope="module")
def whole_course(tmp_path_factory):
    """A scratch course with every assignment released and one student's solution submission of
    each in the gradebook and autograded/ (written, not run: the pages only render it), and
    the feedback of each; yields (course, {assignment: formulas in it})."""
    course = prepare(tmp_path_factory.mktemp("offline") / "course", assignments(ROOT))
    formulas = {}
    for assignment in assignments(course):
        nb = solution_submission(course, assignment)
        formulas[assignment] = formula_count(nb)
        with closing(Gradebook(db_url(course), "attention")) as gb:
            gb.update_or_create_student(STUDENT)
            gb.add_submission(assignment, STUDENT)
        path = notebook_path(course, "autograded", assignment, STUDENT)
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, path)
        nbgrader("generate_feedback", assignment, "--force", cwd=course, quiet=True)
    return course, formulas


def typeset(frame):
    """Wait for MathJax in ``frame`` to finish; return (formulas typeset, errors)."""
    frame.wait_for_function("() => window.MathJax && MathJax.isReady", timeout=60_000)
    frame.evaluate("() => new Promise(done => MathJax.Hub.Queue(() => done(true)))")
    return frame.evaluate(
        "() => [document.querySelectorAll('script[type^=\"math/\"]').length,"
        " document.querySelectorAll('.MathJax_Error, merror').length]"
    )


def raw_tex(frame):
    """Text of the rendered markdown cells that still has a TeX delimiter."""
    texts = frame.locator(".text_cell_render").all_inner_texts()
    return [t[:80] for t in texts if "$" in t]


@pytest.mark.slow
@pytest.mark.browser
def test_formgrader_and_feedback_render_every_formula_with_no_network(whole_course, tmp_path):
    ensure_chromium()
    course, formulas = whole_course
    with browsing(course, tmp_path / "offline") as (page, base):
        refused = outside_requests(page.context)
        page.reload()
        for assignment, expected in formulas.items():
            with closing(Gradebook(db_url(course), "attention")) as gb:
                sid = gb.find_submission_notebook(assignment, assignment, STUDENT).id
            page.goto(f"{base}/formgrader/submissions/{sid}")
            typeset_count, errors = typeset(page)
            assert (typeset_count, errors) == (expected, 0), f"formgrader, {assignment}"
            assert raw_tex(page) == [], f"formgrader, {assignment}"

            feedback = course / "feedback" / STUDENT / assignment / f"{assignment}.html"
            page.goto(feedback.as_uri())
            shown = page.locator(".text_cell_render math").count()
            assert shown == expected, f"feedback of {assignment}: {shown} of {expected} formulas"
            assert page.locator("script[src]").count() == 0, "the feedback loads no script"
            assert raw_tex(page) == [], f"feedback, {assignment}"
        page.screenshot(path=tmp_path / "feedback.png", full_page=False)
    assert refused == [], "pages asked for addresses outside the machine"


# --- a submission that was not graded is never shown as graded ---------------------------------


@pytest.fixture(scope="module")
def unreadable_course(tmp_path_factory):
    """The tiny course with zed's notebook cut off mid-upload (not JSON), autograded."""
    course = tiny_course.make_course(tmp_path_factory.mktemp("unreadable") / "course")
    text = nbformat.writes(tiny_course.release_notebook(course))
    write_submission(course, "zed", tiny_course.ASSIGNMENT, text[: len(text) // 2])
    nbgrader("autograde", tiny_course.ASSIGNMENT, "--force", cwd=course, quiet=True)
    return course


@pytest.mark.slow
@pytest.mark.browser
def test_an_unreadable_submission_is_flagged_not_graded_in_formgrader(unreadable_course, tmp_path):
    ensure_chromium()
    from playwright.sync_api import expect

    course = unreadable_course
    with browsing(course, tmp_path / "unreadable") as (page, base):
        page.goto(f"{base}/formgrader/manage_submissions/tiny")
        status = page.locator("tr", has_text="zed").locator("td.status")
        expect(status).to_have_text("needs manual grading")

        page.goto(f"{base}/formgrader/gradebook/tiny/tiny")  # Manual Grading
        row = page.locator("tr", has_text="Submission #1")
        expect(row.locator("td.flagged .glyphicon-flag")).to_be_visible()
        expect(row.locator("td.needs-manual-grade")).to_have_attribute(
            "data-search", "needs manual grade"
        )
        row.get_by_role("link", name="Submission #1").click()
        comment = page.locator("textarea.comment#answer-comment")
        # the automatic comment, shown under the first answer (a grader's own replaces it)
        shown = re.compile(r"Not graded \(unreadable\).*line \d+, column \d+.*re-upload", re.S)
        expect(comment).to_have_attribute("placeholder", shown)

        # Control: the same submission without the flags is what formgrader showed before,
        # a plain "graded" (0 / 1): the badge above comes from the flags, not from the page.
        with closing(Gradebook(db_url(course), "attention")) as gb:
            notebook = gb.find_submission_notebook("tiny", "tiny", "zed")
            for grade in notebook.grades:
                grade.needs_manual_grade = False
            notebook.flagged = False
            gb.db.commit()
        page.goto(f"{base}/formgrader/manage_submissions/tiny")
        expect(page.locator("tr", has_text="zed").locator("td.status")).to_have_text("graded")
