"""The feedback's exporter (``c.GenerateFeedback.exporter_class``): nbgrader's HTML feedback,
with a banner page for a submission that was not graded.

nbgrader renders its ``feedback`` template, found in its own template folder before any on
``JUPYTER_PATH``; this exporter looks first in ``templates/feedback_status/``, whose
``index.html.j2`` extends nbgrader's (reached as ``feedback/index.html.j2`` through the
folder above it) and changes only its ``body`` block.
"""

from pathlib import Path

import nbgrader
from nbconvert.exporters import HTMLExporter
from traitlets import default

from attncourse.pagetemplates import TEMPLATES

STATUS_TEMPLATE = TEMPLATES / "feedback_status"
NBGRADER_TEMPLATES = (
    Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"
)


class FeedbackExporter(HTMLExporter):
    """nbgrader's feedback, with a banner instead of the page for a not-graded submission."""

    @default("template_paths")
    def _status_template_first(self) -> list[str]:
        return [str(STATUS_TEMPLATE), *self._template_paths(), str(NBGRADER_TEMPLATES)]
