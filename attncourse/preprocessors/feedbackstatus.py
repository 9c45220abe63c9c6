"""Feedback stage, after InertOutputs: what became of the submission, for the banner.

It puts the submission's :class:`~attncourse.status.SubmissionStatus` (read from the
autograded notebook's record and the release) in ``resources["attncourse_status"]``;
the feedback template (``feedback/notgraded.html.j2`` of the course's templates, used through
:class:`attncourse.feedbackexporter.FeedbackExporter`) shows a not-graded submission as
a banner with the reason and the next step, instead of a page of zeros and release stubs.
"""

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor

from attncourse.course import release_notebook
from attncourse.status import status_of

RESOURCE = "attncourse_status"


class FeedbackStatus(NbGraderPreprocessor):
    """Feedback stage: the submission's status, reason and next step for the banner."""

    def preprocess(
        self, nb: NotebookNode, resources: ResourcesDict
    ) -> tuple[NotebookNode, ResourcesDict]:
        status = status_of(nb, release_notebook(CourseDirectory(parent=self), resources))
        resources[RESOURCE] = {
            "status": status.status.value,
            "graded": status.graded,
            "reason": status.reason,
            "next_step": status.next_step,
        }
        return nb, resources
