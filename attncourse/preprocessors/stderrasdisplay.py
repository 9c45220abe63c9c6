"""Autograde stage: a warning on stderr stays visible but no longer fails its test.

nbgrader scores any graded cell with stderr output as failed; the output is kept as display
data marked as stderr (the feedback drops it by that mark).
"""

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor

from attncourse.constants import METADATA_KEY


class StderrAsDisplay(NbGraderPreprocessor):
    """Show stderr of graded cells as display output, so a warning alone never zeroes a test."""

    def preprocess_cell(
        self, cell: NotebookNode, resources: ResourcesDict, index: int
    ) -> tuple[NotebookNode, ResourcesDict]:
        if cell.cell_type == "code" and utils.is_grade(cell):
            for i, out in enumerate(cell.outputs):
                if out.output_type == "stream" and out.name == "stderr":
                    cell.outputs[i] = NotebookNode(
                        output_type="display_data",
                        data={"text/plain": out.text},
                        metadata={METADATA_KEY: {"stream": "stderr"}},
                    )
        return cell, resources
