"""Autograde stage, after ``SaveAutoGrades``: a submission that was not graded asks for a look.

An unreadable notebook (not JSON) or an untouched one (every answer as released) scores 0
on every test, and formgrader would show it as plainly "graded". Through nbgrader's own
mechanisms this stage makes it stand apart: every grade cell of the notebook needs manual
grading (Manage Submissions reads "needs manual grading", Manual Grading lists it), the
notebook gets nbgrader's flag, and the first answer cell's comment says why and what the
student can do (shown in formgrader). Manual scores and comments are never touched.
"""

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor

from attncourse.course import release_notebook
from attncourse.status import SubmissionStatus, status_of


def not_graded_comment(status: SubmissionStatus) -> str:
    """The gradebook comment of a submission that was not graded."""
    return (
        f"**Not graded ({status.status}):** {status.reason}.\n\n**Next step:** {status.next_step}."
    )


class FlagNotGraded(NbGraderPreprocessor):
    """Autograde stage, after ``SaveAutoGrades``: flag an unreadable or untouched notebook,
    every grade cell needing a look, the reason in the first answer cell's comment."""

    def preprocess(
        self, nb: NotebookNode, resources: ResourcesDict
    ) -> tuple[NotebookNode, ResourcesDict]:
        status = status_of(nb, release_notebook(CourseDirectory(parent=self), resources))
        if status.graded:
            return nb, resources
        info = resources["nbgrader"]
        ids = info["notebook"], info["assignment"], info["student"]
        with Gradebook(info["db_url"]) as gb:
            notebook = gb.find_submission_notebook(*ids)
            for grade in notebook.grades:
                grade.needs_manual_grade = True
            first = min(notebook.comments, key=lambda c: _position(nb, c.name), default=None)
            if first is not None:  # a grader's own comment (manual_comment) stays
                first.auto_comment = not_graded_comment(status)
            notebook.flagged = True
            gb.db.commit()
        self.log.warning("Not graded (%s) for %s: %s", status.status, ids[2], status.reason)
        return nb, resources


def _position(nb: NotebookNode, grade_id: str) -> int:
    """Where the cell ``grade_id`` is in ``nb`` (cells not found last)."""
    for i, cell in enumerate(nb.cells):
        if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            return i
    return len(nb.cells)
