"""Autograde reads a notebook that is not valid JSON, or too large, as an empty one that says why.

:class:`TolerantNotebookExporter` (``c.Autograde.exporter_class``) keeps one damaged file
from aborting that student's grading: the notebook's record says why it was unreadable
(where the JSON breaks, by line and column, as the json module finds it), and
:class:`~attncourse.preprocessors.resilientexecute.ResilientExecute` fails its tests
with that reason. A file larger than ``SubmissionLimits.max_notebook_bytes`` is refused
the same way, before its JSON is parsed (no more than the limit is ever read).
"""

import json
from typing import IO

import nbformat
from nbconvert.exporters import NotebookExporter
from nbconvert.exporters.exporter import ResourcesDict

from attncourse.preprocessors.submissionlimits import SubmissionLimits
from attncourse.runrecord import RunRecord
from attncourse.status import Status, SubmissionStatus


def why_unreadable(data: bytes | str, error: Exception) -> str:
    """Why ``data`` (a submitted file) is not a notebook, in words: where its JSON breaks
    (line and column), that it is not UTF-8, or nbformat's own complaint."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            return f"the file is not UTF-8 text (byte {e.start} is {data[e.start : e.start + 1]!r})"
    try:
        json.loads(data)
    except json.JSONDecodeError as e:
        if not data.strip():
            return "the file is empty"
        return f"the file is not valid JSON at line {e.lineno}, column {e.colno} ({e.msg})"
    return f"the file is JSON but not a notebook ({type(error).__name__}: {error})"[:500]


def unreadable_cell(reason: str) -> nbformat.NotebookNode:
    """The one cell of an unreadable submission's notebook: the reason and the next step."""
    step = SubmissionStatus(Status.UNREADABLE, reason).next_step
    return nbformat.v4.new_markdown_cell(
        f"**This submission could not be read:** {reason}.\n\n**What to do:** {step}."
    )


def refused_cell(reason: str) -> nbformat.NotebookNode:
    """The one cell of a submission refused whole: the reason and the next step."""
    step = SubmissionStatus(Status.REFUSED, reason).next_step
    return nbformat.v4.new_markdown_cell(
        f"**This submission was not graded:** {reason}.\n\n**What to do:** {step}."
    )


class TolerantNotebookExporter(NotebookExporter):
    """A notebook exporter that turns an unreadable file into an empty notebook saying why."""

    def from_file(
        self, file_stream: IO, resources: ResourcesDict | None = None, **kw
    ) -> tuple[str, ResourcesDict]:
        limit = SubmissionLimits(config=self.config).max_notebook_bytes
        data = file_stream.read(limit + 1)
        if len(data) > limit:
            reason = (
                f"the notebook file is larger than the course's limit of {limit:,} bytes "
                "(SubmissionLimits.max_notebook_bytes); it was not read"
            )
            nb = nbformat.v4.new_notebook(cells=[refused_cell(reason)])
            RunRecord(refused=reason).store(nb)
            return self.from_notebook_node(nb, resources=resources, **kw)
        try:
            nb = nbformat.reads(data, as_version=4)
        except Exception as e:  # not JSON, not a notebook, not UTF-8: the student's problem
            reason = why_unreadable(data, e)
            nb = nbformat.v4.new_notebook(cells=[unreadable_cell(reason)])
            RunRecord(unreadable=reason).store(nb)
        return self.from_notebook_node(nb, resources=resources, **kw)
