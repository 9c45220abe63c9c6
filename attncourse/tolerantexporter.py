"""Autograde reads a notebook that is not valid JSON as an empty one that says why.

:class:`TolerantNotebookExporter` (``c.Autograde.exporter_class``) keeps one damaged file
from aborting that student's grading: the notebook's record says why it was unreadable,
and :class:`~attncourse.preprocessors.resilientexecute.ResilientExecute` fails its tests
with that reason.
"""

from typing import IO

import nbformat
from nbconvert.exporters import NotebookExporter
from nbconvert.exporters.exporter import ResourcesDict

from attncourse.runrecord import RunRecord


class TolerantNotebookExporter(NotebookExporter):
    """A notebook exporter that turns an unreadable file into an empty notebook saying why."""

    def from_file(
        self, file_stream: IO, resources: ResourcesDict | None = None, **kw
    ) -> tuple[str, ResourcesDict]:
        try:
            nb = nbformat.read(file_stream, as_version=4)
        except Exception as e:  # not JSON, not a notebook, not UTF-8: the student's problem
            nb = nbformat.v4.new_notebook()
            reason = f"{type(e).__name__}: {e}"[:500]
            nb.cells.append(
                nbformat.v4.new_markdown_cell(f"**This submission could not be read:** {reason}")
            )
            RunRecord(unreadable=reason).store(nb)
        return self.from_notebook_node(nb, resources=resources, **kw)
