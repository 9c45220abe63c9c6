"""Autograde stage: the source notebook's mark scheme under each written answer, for graders.

What the mark-scheme cell holds, and why students never see it, is in
:mod:`attncourse.markscheme`.
"""

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor

from attncourse.course import source_notebook
from attncourse.markscheme import mark_schemes, with_mark_schemes


class InsertMarkScheme(NbGraderPreprocessor):
    """Autograde stage: insert the source notebook's mark scheme under each written answer."""

    def preprocess(
        self, nb: NotebookNode, resources: ResourcesDict
    ) -> tuple[NotebookNode, ResourcesDict]:
        info = resources["nbgrader"]
        source = source_notebook(CourseDirectory(parent=self), info["assignment"], info["notebook"])
        if source is None:
            self.log.warning("No source notebook for %s: no mark schemes shown", info["notebook"])
            return nb, resources
        nb.cells = with_mark_schemes(nb.cells, mark_schemes(source))
        return nb, resources
