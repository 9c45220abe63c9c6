"""Autograde reads a notebook that is not valid JSON, or too large, as an empty one that says why.

:class:`TolerantNotebookExporter` (``c.Autograde.exporter_class``) keeps one damaged file
from aborting that student's grading: the notebook's record says why it was unreadable
(where the JSON breaks, by line and column, as the json module finds it), and
:class:`~attncourse.preprocessors.resilientexecute.ResilientExecute` fails its tests
with that reason. A file larger than ``SubmissionLimits.max_notebook_bytes`` is refused
the same way, before its JSON is parsed (no more than the limit is ever read). What its
cells carry is held to the limits once the JSON is parsed, before nbformat checks it
(:meth:`~attncourse.preprocessors.submissionlimits.SubmissionLimits.drop_carried`: the outputs
cleared, attachments within ``max_attachment_bytes``), and what was dropped is handed to the
limits' preprocessor in the resources (:class:`~attncourse.preprocessors.submissionlimits.Carried`).
A cell that nbformat cannot read, or that breaks its schema, costs that cell alone, and
attachments of the wrong shape only themselves (:mod:`attncourse.readingrepairs`); the repairs
reach the run record through the resources (``READING_REPAIRS``).
"""

import json
from typing import IO

import nbformat
from nbconvert.exporters import NotebookExporter
from nbconvert.exporters.exporter import ResourcesDict

from attncourse.preprocessors.submissionlimits import CARRIED, SubmissionLimits
from attncourse.readingrepairs import mend_cells, named_repairs, unreadable_cells, upgrade_v3
from attncourse.runrecord import READING_REPAIRS, RunRecord
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
    except RecursionError:
        return "the file's JSON nests deeper than a notebook's may (Python's parser gave up)"
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
        limits = SubmissionLimits(config=self.config)
        limit = limits.max_notebook_bytes
        # The bytes where the stream has them: a file that is not UTF-8 is the student's
        # problem, said as such, not an error of the text stream that nbconvert opened.
        data = getattr(file_stream, "buffer", file_stream).read(limit + 1)
        if len(data) > limit:
            reason = (
                f"the notebook file is larger than the course's limit of {limit:,} bytes "
                "(SubmissionLimits.max_notebook_bytes); it was not read"
            )
            nb = nbformat.v4.new_notebook(cells=[refused_cell(reason)])
            RunRecord(refused=reason).store(nb)
            return self.from_notebook_node(nb, resources=resources, **kw)
        try:
            parsed = json.loads(data.decode() if isinstance(data, bytes) else data)
            # before the limits: what is dropped there is not counted
            mended = upgrade_v3(parsed) + mend_cells(parsed)
            carried = limits.drop_carried(parsed)
            nb = nbformat.reads(json.dumps(parsed), as_version=4)
            repairs = named_repairs(nb, mended + unreadable_cells(nb))
            nbformat.validate(nb)
        except Exception as e:  # not JSON, not a notebook, not UTF-8: the student's problem
            reason = why_unreadable(data, e)
            nb = nbformat.v4.new_notebook(cells=[unreadable_cell(reason)])
            RunRecord(unreadable=reason).store(nb)
        else:
            resources = ResourcesDict() if resources is None else resources
            if repairs:  # the notebook's own record is the file's until it is reset
                resources[READING_REPAIRS] = repairs
            if carried.attachments:
                resources[CARRIED] = carried
        return self.from_notebook_node(nb, resources=resources, **kw)
