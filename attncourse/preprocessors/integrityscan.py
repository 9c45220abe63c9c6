"""Sanitize stage, before ``OverwriteCells``: scan the submission for integrity findings.

The rules are in :mod:`attncourse.integrity`; nothing of the submission runs.
"""

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor

from attncourse.integrity.coursenotebook import course_notebook
from attncourse.integrity.findings import scan_notebook, store


class IntegrityScan(NbGraderPreprocessor):
    """Sanitize stage: scan the submission against the gradebook and store the findings.

    Runs before ``OverwriteCells`` restores the locked cells; the findings go into the
    notebook's metadata, where ``FlagIntegrity`` reads them after the autograder has saved
    its scores.
    """

    def preprocess(
        self, nb: NotebookNode, resources: ResourcesDict
    ) -> tuple[NotebookNode, ResourcesDict]:
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            course = course_notebook(CourseDirectory(parent=self), gb, info)
        findings = scan_notebook(nb, course)
        store(nb, findings)
        for finding in findings:
            self.log.warning("Integrity finding for %s: %s", info["student"], finding.describe())
        return nb, resources
