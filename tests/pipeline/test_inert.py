"""Rendered student output is inert: formgrader and feedback show it as text, never run it.

The outputs and Markdown below are what a student can put in a submission:
``_repr_html_``/``_repr_javascript_``/``_repr_svg_`` objects, widgets, output
metadata that nbconvert's templates write into attributes, raw HTML and
``javascript:`` links in written answers. They are checked three ways: the
preprocessor alone, the formgrader's page (its exporter under the course's
config) and real ``nbgrader generate_feedback``; each against a control that
renders the same notebook the stock way and finds the payload live.
"""

import copy
import re
import subprocess
import sys
from contextlib import closing
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
import tiny_course
from nbconvert.exporters import HTMLExporter
from nbformat.v4 import new_code_cell, new_markdown_cell, new_output, new_raw_cell
from nbgrader.api import Gradebook
from nbgrader.server_extensions.formgrader import handlers
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from attncourse.course import ROOT, notebook_path, venv_path
from attncourse.preprocessors.inertoutputs import InertOutputs

# one worker: the module's fixtures are built once (spread over workers, each built them)
pytestmark = pytest.mark.xdist_group("inert")

MARK = "PWNED_7c1d"  # in every payload: wherever it runs, it names itself
IMG = f"<img src=x onerror=\"document.title='{MARK}'\">"
SCRIPT = f"<script>document.title='{MARK}'</script>"
SVG = f'<svg xmlns="http://www.w3.org/2000/svg"><script>alert("{MARK}")</script></svg>'
NOTE = InertOutputs().note
# A 1x1 PNG, as matplotlib writes a plot: an honest image must survive untouched.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
DANGEROUS = {
    "text/html": IMG,
    "application/javascript": f"document.title='{MARK}'",
    "text/javascript": f"document.title='{MARK}'",
    "image/svg+xml": SVG,
    "application/vnd.jupyter.widget-view+json": {"model_id": MARK, "version_major": 2},
    "application/vnd.jupyter.widget-state+json": {"state": {}},
    "text/markdown": SCRIPT,
    "text/latex": f"$${MARK}$$",
    "application/pdf": "JVBERi0=",
    "application/x-unknown": MARK,
}
WRITTEN = (
    f"My proof: $0 \\le h < H$.\n\n{IMG}\n\n{SCRIPT}\n\n[click me](javascript:alert('{MARK}'))\n\n"
    f"<a href=\"javascript:alert('{MARK}')\">me too</a>"
)


def display(mime, value, text=None, metadata=None):
    data = {mime: value}
    if text is not None:
        data["text/plain"] = text
    return new_output("display_data", data=data, metadata=metadata or {})


def inert(cell):
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb, _ = InertOutputs().preprocess(nb, {})
    return nb.cells[0]


@pytest.mark.parametrize("mime", sorted(DANGEROUS))
def test_every_active_type_is_reduced_to_text(mime):
    cell = new_code_cell("x", outputs=[display(mime, DANGEROUS[mime])])
    assert inert(cell).outputs[0].data == {"text/plain": NOTE}


def test_the_student_text_repr_is_kept_when_the_html_goes():
    out = new_output(
        "execute_result",
        data={"text/html": IMG, "text/plain": "<Shown object>"},
        metadata={"text/html": {"isolated": True}},
        execution_count=3,
    )
    kept = inert(new_code_cell("Shown()", outputs=[out])).outputs[0]
    assert kept.data == {"text/plain": "<Shown object>"}
    assert kept.metadata == {} and kept.execution_count == 3


def test_output_metadata_that_templates_write_into_attributes_is_dropped():
    sized = display("image/png", PNG, metadata={"image/png": {"width": f"1 onerror={MARK}"}})
    named = display("image/png", PNG, metadata={"filenames": {"image/png": "javascript:x"}})
    stderr = display("text/plain", "warning\n", metadata={"attncourse": {"stream": "stderr"}})
    cell = inert(new_code_cell("x", outputs=[sized, named, stderr]))
    assert [o.metadata for o in cell.outputs] == [{}, {}, {"attncourse": {"stream": "stderr"}}]


def test_an_image_that_is_not_base64_is_not_an_image():
    out = display("image/png", f'x" onerror="{MARK}')
    assert inert(new_code_cell("x", outputs=[out])).outputs[0].data == {"text/plain": NOTE}


def test_honest_plots_text_and_errors_survive_unchanged():
    outputs = [
        new_output("stream", name="stdout", text="loss 0.25\n"),
        display("image/png", PNG, text="<Figure size 640x480 with 1 Axes>"),
        display("image/jpeg", "/9j/4AAQSkZJRg==", text="photo"),
        new_output("execute_result", data={"text/plain": "tensor([1., 2.])"}, execution_count=1),
        new_output("error", ename="GradingError", evalue="values differ", traceback=["x"]),
    ]
    cell = new_code_cell("plot()", outputs=copy.deepcopy(outputs))
    assert inert(cell).outputs == outputs


def test_all_code_cells_and_the_widget_state_are_covered():
    cells = [
        new_code_cell("provided()", outputs=[display("text/html", IMG)]),
        new_code_cell("answer()", outputs=[display("text/html", IMG)], metadata=_answer("a")),
        new_code_cell("test()", outputs=[display("text/html", IMG)], metadata=_test("t")),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.cells[0].outputs.append({"output_type": "something_new", "data": {"text/html": IMG}})
    nb.metadata.widgets = {"application/vnd.jupyter.widget-state+json": {"state": {MARK: {}}}}
    nb, _ = InertOutputs().preprocess(nb, {})
    assert [c.outputs for c in nb.cells] == [[display("text/plain", NOTE)]] * 3
    assert "widgets" not in nb.metadata


def _answer(grade_id):
    meta = {"grade": False, "solution": True, "locked": False, "schema_version": 3}
    return {"nbgrader": {**meta, "grade_id": grade_id}}


def _test(grade_id):
    meta = {"grade": True, "solution": False, "locked": True, "points": 1, "schema_version": 3}
    return {"nbgrader": {**meta, "grade_id": grade_id}}


def test_course_config_registers_the_inert_steps():
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    autograde = config.Autograde.autograde_preprocessors
    limit = autograde.index("nbgrader.preprocessors.LimitOutput")
    assert autograde[limit + 1] == "attncourse.preprocessors.inertoutputs.InertOutputs"
    inert = "attncourse.preprocessors.inertoutputs.InertOutputs"
    assert config.GenerateFeedback.preprocessors[0] == inert
    assert config.HTMLExporter.preprocessors == [inert]
    assert config.HTMLExporter.filters["markdown2html"] == "attncourse.safemarkdown.SafeMarkdown"


# --- what a grader's browser and a student's feedback receive ------------------------------


class Page(HTMLParser):
    """What in an HTML page could run: script elements, event handlers, script URLs."""

    def __init__(self, html):
        super().__init__()
        self.scripts, self.handlers, self.urls, self._in_script = [], [], [], False
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append(f"<{tag} {name}={value!r}>")
            if name in ("href", "src", "action", "formaction", "data") and value:
                if value.strip().lower().startswith(("javascript:", "data:text")):
                    self.urls.append(f"<{tag} {name}={value!r}>")

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)

    def handle_endtag(self, tag):
        self._in_script = False

    def live(self):
        """Everything of the student's payload that would run in a browser (the page's own
        scripts and handlers do not name MARK)."""
        handlers = [h for h in self.handlers if MARK in h]
        return [*handlers, *self.urls, *[s for s in self.scripts if MARK in s]]


def hostile_notebook(release):
    """``release`` answered by a hostile student: rich outputs everywhere, HTML in the answers."""
    nb = copy.deepcopy(release)
    outputs = [display(mime, value) for mime, value in DANGEROUS.items()]
    outputs.append(
        display("image/png", PNG, metadata={"image/png": {"width": f"1 onerror={MARK}"}})
    )
    outputs.append(new_output("execute_result", data={"text/html": IMG}, execution_count=1))
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = copy.deepcopy(outputs)
        elif cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = WRITTEN
    nb.cells.insert(1, new_markdown_cell(f"A cell I added.\n\n{IMG}\n\n{SCRIPT}"))
    nb.cells.append(new_raw_cell(SCRIPT + IMG, metadata={"raw_mimetype": "text/html"}))
    nb.metadata.widgets = {"application/vnd.jupyter.widget-state+json": {"state": {MARK: {}}}}
    return nb


def formgrade_page(nb, config):
    """The HTML formgrader serves for ``nb``: its exporter and template, under ``config``."""
    config = copy.deepcopy(config)
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    resources = {
        "assignment_id": "tiny",
        "notebook_id": "tiny",
        "submission_id": "x",
        "index": 0,
        "total": 1,
        "base_url": "",
        "student": "mallory",
        "last_name": "",
        "first_name": "",
        "notebook_path": "autograded/mallory/tiny/tiny.ipynb",
    }
    return HTMLExporter(config=config).from_notebook_node(nb, resources=resources)[0]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return tiny_course.make_course(tmp_path_factory.mktemp("inert") / "course")


def test_formgrader_page_of_a_hostile_submission_runs_nothing(course):
    nb = hostile_notebook(tiny_course.release_notebook(course))
    stock = Page(formgrade_page(nb, Config()))
    assert len(stock.live()) > 10, "control: rendered the stock way, the payload is live"

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    html = formgrade_page(nb, config)
    page = Page(html)
    assert page.live() == []
    assert NOTE in html
    formula = "<mn>0</mn><mo>≤</mo><mi>h</mi><mo>&lt;</mo><mi>H</mi>"
    assert formula in html, "the proof's formula is rendered to MathML, its < intact"
    assert "&lt;script&gt;document.title" in html, "raw HTML is shown as the text typed"
    assert "cdnjs" not in html and re.search(r"<meta[^>]*Content-Security-Policy[^>]*>", html)


def test_feedback_of_a_hostile_submission_runs_nothing(course):
    student = "mallory"
    with closing(Gradebook(f"sqlite:///{course / 'gradebook.db'}")) as gb:
        gb.update_or_create_student(student)
        gb.add_submission(tiny_course.ASSIGNMENT, student)
    path = notebook_path(course, "autograded", tiny_course.ASSIGNMENT, student)
    path.parent.mkdir(parents=True)
    nbformat.write(hostile_notebook(tiny_course.release_notebook(course)), path)
    result = subprocess.run(
        [str(Path(sys.executable).with_name("nbgrader")), "generate_feedback", "tiny", "--force"],
        cwd=course,
        env={"PATH": venv_path(), "PYTHONWARNINGS": "ignore"},
        capture_output=True,
        text=True,
    )
    feedback = course / "feedback" / student / "tiny" / "tiny.html"
    assert feedback.exists(), result.stderr[-3000:]
    html = feedback.read_text()
    assert Page(html).live() == []
    # No tag carries a handler or a script URL; the student's text may name them, escaped.
    assert re.findall(r"<[^<>]*(?:onerror|javascript:)[^<>]*>", html) == []
    assert f"<script>document.title='{MARK}'" not in html
    assert NOTE in html and "My proof" in html
    policy = re.search(r"<meta[^>]*Content-Security-Policy[^>]*>", html)
    assert policy and "default-src 'none'" in policy[0], "the feedback runs no script at all"
