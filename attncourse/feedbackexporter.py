"""The feedback's exporter (``c.GenerateFeedback.exporter_class``): nbgrader's HTML feedback,
or a banner for a submission that was not graded.

nbgrader renders its ``feedback`` template; this exporter renders the course's
``templates/nbconvert/templates/feedback/notgraded.html.j2`` instead, which extends the
course's ``contents.html.j2`` (nbgrader's page, its contents list naming the parts) and
changes only its ``body`` block (:mod:`attncourse.pagetemplates` puts
the course's templates on the path).
"""

from nbconvert.exporters import HTMLExporter
from traitlets import default


class FeedbackExporter(HTMLExporter):
    """nbgrader's feedback, with a banner instead of the page for a not-graded submission."""

    @default("template_file")
    def _not_graded_banner(self) -> str:
        return "notgraded.html.j2"
