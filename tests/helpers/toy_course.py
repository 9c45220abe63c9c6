"""A two-part toy assignment for the tests of the grading plugins (integrity, feedback, export, report).

It has what every course notebook has — a locked setup cell with the allowed
imports, code answer cells each followed by a test cell judged outside the kernel
(its checks, ``TOY_CHECKS``, live in the scratch course as ``toy_checks.py``, named
by ``c.ResilientExecute.checks_modules``), and a manually graded written answer
with a mark scheme —
and it autogrades in seconds, so the plugins can be tested through the real
``nbgrader autograde``/``generate_feedback``/``export`` without waiting for the
course's own assignments.
"""

import functools
import shutil
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from attncourse.course import ROOT, nbgrader
from devtools.generated import generate
from devtools.submissions import fill, solution_answers, strip_markers, write_submission

ASSIGNMENT = "toy"

SCALE_SOLUTION = '''def scale(x, d):
    """Divide the scores x by sqrt(d)."""
    ### BEGIN SOLUTION
    return x / np.sqrt(d)
    ### END SOLUTION'''

SCALE_TEST = '''"""Part 1: scale divides the scores by sqrt(d)."""
assert scale(np.ones(4), 4).shape == (4,)'''

DOUBLE_SOLUTION = '''def double(x):
    """Twice x."""
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION'''

DOUBLE_TEST = '''"""Part 2: double doubles."""
assert double(1) is not None'''

# The toy's hidden tests, judged in the grader's process (written into the scratch course).
TOY_CHECKS = '''"""Hidden tests of the toy assignment."""
import numpy as np
import torch

from attncourse.judge.checks import answer, call, check_close, describe, fail


def check_scale(ns):
    scale = answer(ns, "scale", "scale")
    check_close(
        "scale(x, 9)",
        call(scale, (np.full(3, 6.0), 9), "scale(x, 9)"),
        torch.full((3,), 2.0, dtype=torch.float64),
        1e-12,
        mistakes={"divides by d instead of sqrt(d)": torch.full((3,), 6.0 / 9, dtype=torch.float64)},
    )


def check_double(ns):
    got = call(answer(ns, "double", "double"), (21,), "double(21)")
    if type(got) not in (int, float) or got != 42:
        fail("double(21)", 42, describe(got), "returned x instead of 2 * x")


CHECKS = {"scale_test": check_scale, "double_test": check_double}
'''

CONFIG = """
# The toy assignment's checks live in this scratch course (tests/helpers/toy_course.py).
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
c.ResilientExecute.checks_modules = {"toy": "toy_checks"}
"""

WHY_SOLUTION = """Why divide by sqrt(d)?

### BEGIN SOLUTION
The dot product of two random d-dimensional vectors has variance d.

**Mark scheme** (2 points): 1 for the variance d, 1 for the saturated softmax.
### END SOLUTION"""


def _meta(grade_id, *, grade=False, solution=False, locked=False, points=0):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3}
    meta["solution"] = solution
    if grade:
        meta["points"] = points
    return {"nbgrader": meta}


def source_notebook():
    """The instructor notebook of the toy assignment."""
    cells = [
        new_code_cell(
            "import numpy as np\nimport torch\nfrom torch import nn",
            metadata=_meta("setup", locked=True),
        ),
        new_markdown_cell("## Part 1\n\nWrite `scale`.", metadata=_meta("scale_text", locked=True)),
        new_code_cell(SCALE_SOLUTION, metadata=_meta("scale_answer", solution=True)),
        new_code_cell(SCALE_TEST, metadata=_meta("scale_test", grade=True, locked=True, points=2)),
        new_code_cell(DOUBLE_SOLUTION, metadata=_meta("double_answer", solution=True)),
        new_code_cell(
            DOUBLE_TEST, metadata=_meta("double_test", grade=True, locked=True, points=1)
        ),
        new_markdown_cell(
            WHY_SOLUTION, metadata=_meta("why_scale", grade=True, solution=True, points=2)
        ),
    ]
    for cell in cells:  # ids from the grade ids: the same notebook each time (and course key)
        cell.id = cell.metadata.nbgrader["grade_id"].replace("_", "-")
    nb = new_notebook(cells=cells)
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def make_course(dest):
    """A course directory with the toy assignment in source/, released (gradebook recorded)."""
    dest = Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy2(ROOT / "nbgrader_config.py", dest / "nbgrader_config.py")
    with open(dest / "nbgrader_config.py", "a") as config:
        config.write(CONFIG)
    (dest / "toy_checks.py").write_text(TOY_CHECKS)
    nbformat.write(source_notebook(), dest / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    generate(dest, [ASSIGNMENT])
    return dest


def release_notebook(course):
    return nbformat.read(Path(course) / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)


def submission(course, **answers):
    """The release with the solution, and ``answers`` (grade_id -> source) on top."""
    filled = solution_answers(source_notebook())
    filled.update(answers)
    return fill(release_notebook(course), filled)


def submit(course, student, nb):
    return write_submission(course, student, ASSIGNMENT, nb)


def autograde(course, *args):
    nbgrader("autograde", ASSIGNMENT, "--force", *args, cwd=course, check=False, quiet=True)


def class_submissions(course):
    """The toy class: a perfect, a wrong, a tampering, a locked-cell-editing and a blank student."""
    locked = submission(course)
    test = next(
        c for c in locked.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "scale_test"
    )
    test.source = test.source.replace("assert", "pass  #")
    return {
        "perfect": submission(course),
        "wrong": submission(course, scale_answer="def scale(x, d):\n    return x / d\n"),
        "tamper": submission(
            course,
            double_answer=strip_markers(DOUBLE_SOLUTION)
            + "\ntorch.allclose = lambda *a, **k: True",
        ),
        "locked": locked,
        "blank": release_notebook(course),
    }


@functools.cache
def graded_course(base):
    """The toy class autograded once per test process in ``base``/toy_graded (copy to change it)."""
    course = make_course(Path(base) / "toy_graded")
    for student, nb in class_submissions(course).items():
        submit(course, student, nb)
    autograde(course)
    return course
