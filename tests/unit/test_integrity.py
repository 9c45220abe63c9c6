"""The integrity scan: every tampering pattern is found, no correct answer is accused.

Unit tests scan in-memory notebooks (milliseconds); the slow test runs the
scan and the flagging through the real ``nbgrader autograde`` with the
course's config, on the toy assignment of ``toy_course``.
"""

import copy

import nbformat
import pytest
import toy_course
from nbgrader.api import Gradebook

from attncourse.cells import grade_id
from attncourse.course import ROOT, assignments, notebook_path
from attncourse.gradebook import cell_scores, db_url
from attncourse.integrity.command import scan_submissions
from attncourse.integrity.coursenotebook import CourseNotebook
from attncourse.integrity.findings import COMMENT_HEADER, findings_of, scan_notebook
from attncourse.integrity.scanner import scan_source
from devtools.submissions import fill, solution_answers, solution_submission


def toy_release():
    """The toy assignment as students receive it: hidden tests removed, answers as stubs."""
    nb = copy.deepcopy(toy_course.source_notebook())
    course = CourseNotebook.from_notebook(nb)
    for cell in nb.cells:
        ref = course.cells[grade_id(cell)]
        if ref.answer:
            cell.source = "# YOUR CODE HERE\nraise NotImplementedError()"
        else:
            cell.source = min(ref.sources, key=len)
    return nb


TOY = CourseNotebook.from_notebook(toy_course.source_notebook())


def toy_submission(**answers):
    filled = solution_answers(toy_course.source_notebook())
    filled.update(answers)
    return fill(toy_release(), filled)


def kinds(source):
    return {kind for kind, _, _ in scan_source(source, TOY.protected, TOY.allowed_imports)}


# name, student code in an answer cell, the kind of finding it must raise
TAMPERING = [
    ("import a module", "import math", "import"),
    ("import from torch", "from torch.nn import functional as F", "import"),
    ("__import__", "os = __import__('os')", "import"),
    ("importlib", "importlib.import_module('os')", "import"),
    ("rebind torch.allclose", "torch.allclose = lambda *a, **k: True", "rebinding"),
    ("setattr on torch", "setattr(torch, 'allclose', print)", "rebinding"),
    ("setattr on torch.testing", "setattr(torch.testing, 'assert_close', print)", "rebinding"),
    ("rebind np.testing", "np.testing.assert_allclose = print", "rebinding"),
    ("rebind np.allclose", "np.allclose = lambda *a, **k: True", "rebinding"),
    ("rebind Tensor.__eq__", "torch.Tensor.__eq__ = lambda s, o: True", "rebinding"),
    ("rebind nn.Module", "nn.Module.__call__ = print", "rebinding"),
    ("rebind through type()", "type(torch.ones(1)).__eq__ = lambda s, o: True", "rebinding"),
    ("rebind through an alias", "T = torch.testing\nT.assert_close = print", "rebinding"),
    (
        "rebind through an import alias",
        "import attncourse.judge.checks as c\nc.fail = print",
        "rebinding",
    ),
    ("rebind builtins.isinstance", "builtins.isinstance = print", "rebinding"),
    ("rebind __builtins__", "__builtins__.isinstance = print", "rebinding"),
    ("rebind the course helpers", "attncourse.judge.checks.check_close = print", "rebinding"),
    ("delete torch.allclose", "del torch.allclose", "rebinding"),
    ("rebind isinstance", "isinstance = lambda *a: True", "rebinding"),
    ("rebind AssertionError", "AssertionError = Warning", "rebinding"),
    ("rebind torch", "torch = None", "rebinding"),
    ("rebind np", "np = None", "rebinding"),
    ("rebind nn by def", "def nn():\n    pass", "rebinding"),
    ("rebind in a loop target", "for np in range(3):\n    pass", "rebinding"),
    ("rebind via global", "def f():\n    global isinstance\n    isinstance = print", "rebinding"),
    (
        "always-equal class",
        "class Yes:\n    def __eq__(self, other):\n        return True",
        "rebinding",
    ),
    (
        "torch function hook",
        "class T:\n    def __torch_function__(self, *a):\n        pass",
        "rebinding",
    ),
    ("tensor subclass", "class Fake(torch.Tensor):\n    pass", "rebinding"),
    ("sys.modules", "torch.sys.modules['torch'] = None", "interpreter"),
    ("getattr computed name", "m = getattr(torch, 'sy' + 's')", "interpreter"),
    ("getattr of sys", "m = getattr(np, 'sys').modules", "interpreter"),
    ("gc", "torch.gc = 1\nx = np.gc", "interpreter"),
    ("ctypes", "np.ctypes.memmove(1, 2, 3)", "interpreter"),
    ("inspect", "f = torch.inspect.currentframe()", "interpreter"),
    ("frame globals", "f = (lambda: 0).__globals__", "interpreter"),
    ("globals()[...] =", "globals()['torch'] = None", "interpreter"),
    ("vars()", "vars(torch)['allclose'] = print", "interpreter"),
    ("exec", "exec('torch.allclose = print')", "dynamic code"),
    ("eval", "eval('1')", "dynamic code"),
    ("compile", "c = compile('1', 'x', 'eval')", "dynamic code"),
    ("get_ipython", "get_ipython().run_cell('x = 1')", "interpreter"),
    ("shell escape", "!pip install numpy", "interpreter"),
    ("run magic", "%run other.py", "interpreter"),
    ("rebinding inside %time", "%time torch.allclose = print", "rebinding"),
    ("unparsable rebinding", "torch.allclose = print\nthis is not python (", "rebinding"),
    ("unparsable import", "import os\ndef (:", "import"),
    ("unparsable exec", "exec('x')\n)(", "dynamic code"),
]


@pytest.mark.parametrize(("name", "code", "kind"), TAMPERING, ids=[t[0] for t in TAMPERING])
def test_tampering_is_found_and_charged_to_its_part(name, code, kind):
    nb = toy_submission(double_answer=toy_course.DOUBLE_SOLUTION + "\n" + code)
    findings = scan_notebook(nb, TOY)
    assert kind in {f.kind for f in findings}, (name, findings)
    assert {(f.grade_id, f.part) for f in findings} == {("double_answer", "double_answer")}


# correct code a student may write that must not be reported
INNOCENT = [
    "import numpy as np\nimport torch\nfrom torch import nn",  # the first cell's imports again
    "model = nn.Linear(3, 4, bias=False)\nmodel.eval()\nmodel.weight.data = torch.zeros(4, 3)",
    "class MyMHA(nn.Module):\n    def __init__(self, D):\n        super().__init__()\n"
    "        self.W_Q = nn.Linear(D, D)\n        setattr(self, 'W_K', nn.Linear(D, D))",
    "def f(x):\n    type = x.dtype\n    isinstance = 3\n    return type, isinstance",
    "fast = torch.compile\nx = np.linalg.norm(np.ones(3))",
    "%time y = 2 * np.ones(3)",
    "%matplotlib inline",
    "for h in range(3):\n    print(h)",
    "x = torch.ones(3)\nx[0] = 2\ny = [i for i in range(3)]",
]


@pytest.mark.parametrize("code", INNOCENT)
def test_correct_code_is_not_reported(code):
    assert kinds(code) == set()


def test_toy_solution_and_blank_release_have_no_findings():
    assert scan_notebook(toy_submission(), TOY) == []
    assert scan_notebook(toy_release(), TOY) == []


def test_locked_cell_edit_is_found_and_charged_to_the_part_it_tests():
    nb = toy_submission()
    test_cell = next(c for c in nb.cells if grade_id(c) == "scale_test")
    test_cell.source = test_cell.source.replace("assert", "pass  #")
    (finding,) = scan_notebook(nb, TOY)
    assert (finding.kind, finding.grade_id, finding.part) == (
        "locked cell edited",
        "scale_test",
        "scale_answer",
    )
    assert TOY.part_grades("scale_answer") == ["scale_test"]


def test_module_level_code_in_an_added_cell_is_charged_to_every_answer_part():
    """It runs before every answer is called: the part above it is not the one it can change."""
    nb = toy_submission()
    nb.cells.insert(0, nbformat.v4.new_code_cell("torch.allclose = print"))
    nb.cells.insert(6, nbformat.v4.new_code_cell("np.allclose = print"))
    parts = sorted((f.cell, f.part) for f in scan_notebook(nb, TOY))
    assert parts == [
        (0, "double_answer"),
        (0, "scale_answer"),
        (6, "double_answer"),
        (6, "scale_answer"),
    ]


def test_a_definition_in_an_added_cell_is_charged_to_the_answers_that_use_it():
    """A helper placed above Part 1 but called by Part 2's answer (through another helper)."""
    helper = "def _twice(x):\n    import math\n    return x * 2\n\n\ndef _via(x):\n    return _twice(x)\n"
    nb = toy_submission(double_answer="def double(x):\n    return _via(x)\n")
    nb.cells.insert(1, nbformat.v4.new_code_cell(helper))
    assert {(f.cell, f.part) for f in scan_notebook(nb, TOY)} == {(1, "double_answer")}
    control = toy_submission()
    control.cells.insert(1, nbformat.v4.new_code_cell(helper))  # used by no answer
    parts = {f.part for f in scan_notebook(control, TOY)}
    assert parts == {"scale_answer"}, "an unused helper stays with the part above it"


def test_copies_of_course_cells_are_trusted_even_without_metadata():
    nb = toy_submission()
    copy_of_test = copy.deepcopy(next(c for c in nb.cells if grade_id(c) == "scale_test"))
    copy_of_test.metadata = {}
    nb.cells.append(copy_of_test)
    assert scan_notebook(nb, TOY) == []


@pytest.mark.parametrize("assignment", assignments())
def test_no_false_alarm_on_the_course_solutions(assignment):
    release = nbformat.read(notebook_path(ROOT, "release", assignment), as_version=4)
    course = CourseNotebook.from_notebook(release)
    assert course.allowed_imports >= {("torch", "torch"), ("np", "numpy"), ("nn", "torch.nn")}
    assert scan_notebook(solution_submission(ROOT, assignment), course) == []
    assert scan_notebook(release, course) == []
    repeated = "\n".join(f"import {m} as {b}" for b, m in sorted(course.allowed_imports))
    assert scan_source(repeated, course.protected, course.allowed_imports) == []


@pytest.mark.parametrize("assignment", assignments())
def test_every_answer_cell_of_the_course_is_scanned(assignment):
    release = nbformat.read(notebook_path(ROOT, "release", assignment), as_version=4)
    course = CourseNotebook.from_notebook(release)
    code_answers = [
        grade_id(c)
        for c in release.cells
        if c.cell_type == "code" and grade_id(c) and course.cells[grade_id(c)].answer
    ]
    nb = solution_submission(
        ROOT, assignment, {gid: "torch.allclose = print" for gid in code_answers}
    )
    assert [f.grade_id for f in scan_notebook(nb, course)] == code_answers


@pytest.mark.slow
@pytest.mark.xdist_group("toy_course")
def test_autograde_flags_the_part_for_review_and_comments_why(graded_toy):
    scores = cell_scores(graded_toy, toy_course.ASSIGNMENT)
    assert scores["tamper"]["double_test"] == (1.0, 1.0, True)  # the judge's score stands
    assert scores["tamper"]["scale_test"] == (2.0, 2.0, False)
    assert scores["locked"]["scale_test"] == (2.0, 2.0, True)  # flagged, not zeroed
    assert scores["perfect"]["double_test"] == (1.0, 1.0, False)
    with Gradebook(db_url(graded_toy)) as gb:
        ids = toy_course.ASSIGNMENT, toy_course.ASSIGNMENT, "tamper"
        comment = gb.find_comment("double_answer", *ids).comment
        assert comment.startswith(COMMENT_HEADER)
        assert "torch.allclose" in comment and "double_test (tests gave 1/1)" in comment
        assert gb.find_comment("scale_answer", *ids).comment is None
    autograded = notebook_path(graded_toy, "autograded", toy_course.ASSIGNMENT, "tamper")
    (finding,) = findings_of(nbformat.read(autograded, as_version=4))
    assert finding.kind == "rebinding"


@pytest.mark.slow
@pytest.mark.xdist_group("toy_course")
def test_scan_submissions_reports_the_same_findings_from_the_cli(graded_toy):
    results = scan_submissions(graded_toy, toy_course.ASSIGNMENT)
    found = {s: [f.kind for f in nbs[toy_course.ASSIGNMENT]] for s, nbs in results.items()}
    assert found["tamper"] == ["rebinding"]
    assert found["locked"] == ["locked cell edited"]
    assert found["perfect"] == found["wrong"] == []
