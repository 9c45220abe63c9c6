"""Autograde, sanitize stage (after ``OverwriteCells``): draw the notebook's own numbers for the
id it is graded under.

The provided cell ``student_instance`` picks its id from the hub login or ``STUDENT_ID``; in the
grader's kernel neither is the student's, so its id line is replaced by the graded id. Answers
the student computed from the printed data are then recomputed from their own numbers, and the
autograded notebook (feedback, formgrader) prints the instance they are graded against.
"""

import json

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from attncourse.cells import grade_id

INSTANCE_CELL = "student_instance"
ID_LINE = "student = "


class PinInstance(NbGraderPreprocessor):
    """The ``student_instance`` cell draws the instance of ``resources["nbgrader"]["student"]``."""

    def preprocess(
        self, nb: NotebookNode, resources: ResourcesDict
    ) -> tuple[NotebookNode, ResourcesDict]:
        student = resources.get("nbgrader", {}).get("student")
        for cell in nb.cells:
            if student and cell.cell_type == "code" and grade_id(cell) == INSTANCE_CELL:
                lines = cell.source.splitlines()
                pinned = f"{ID_LINE}{json.dumps(student)}  # the id this notebook is graded under"
                cell.source = "\n".join(
                    pinned if line.startswith(ID_LINE) else line for line in lines
                )
        return nb, resources
