"""A one-part course for the tests of what reaches graders and kernels (inert output, plain files).

Its assignment ``tiny`` has a locked setup cell, one code answer whose solution
returns :data:`SECRET` (so a leak of ``source/`` shows as that string), its test
cell, and a written answer graded by hand. :func:`make_course` releases it with
the course's own ``nbgrader_config.py``: nothing here starts a kernel.
"""

import shutil
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from attncourse.course import ROOT
from devtools.generated import generate

ASSIGNMENT = "tiny"
SECRET = "SOLUTION-ONLY-7f3a9c"  # in source/ only: never in a student's folder or a kernel's view

ANSWER = f'''def answer():
    """The answer."""
    ### BEGIN SOLUTION
    return "{SECRET}"
    ### END SOLUTION'''

WRITTEN = """Why?

### BEGIN SOLUTION
Because.

**Mark scheme** (1 point): 1 for saying why.
### END SOLUTION"""


def _meta(grade_id, *, grade=False, solution=False, locked=False, points=0):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3}
    meta["solution"] = solution
    if grade:
        meta["points"] = points
    return {"nbgrader": meta}


def source_notebook():
    """The instructor notebook of ``tiny``."""
    cells = [
        new_code_cell("import numpy as np\nimport torch", metadata=_meta("setup", locked=True)),
        new_code_cell(ANSWER, metadata=_meta("answer", solution=True)),
        new_code_cell(
            "assert answer() is not None",
            metadata=_meta("answer_test", grade=True, locked=True, points=1),
        ),
        new_markdown_cell(WRITTEN, metadata=_meta("why", grade=True, solution=True, points=1)),
    ]
    for cell in cells:  # ids from the grade ids: the same notebook each time (and course key)
        cell.id = cell.metadata.nbgrader["grade_id"].replace("_", "-")
    nb = new_notebook(cells=cells)
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def make_course(dest):
    """A course directory with ``tiny`` in ``source/``, released (its cells in the gradebook)."""
    dest = Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy2(ROOT / "nbgrader_config.py", dest / "nbgrader_config.py")
    nbformat.write(source_notebook(), dest / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    generate(dest, [ASSIGNMENT])
    return dest


def release_notebook(course):
    return nbformat.read(Path(course) / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)


def cell(nb, grade_id):
    """The cell of ``nb`` with nbgrader id ``grade_id``."""
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
