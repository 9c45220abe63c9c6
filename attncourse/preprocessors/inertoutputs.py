"""Student output is inert: graders and students see it as text and images, never as markup.

Whatever a student's code displays is written into the autograded notebook, and
formgrader and ``generate_feedback`` render that notebook into pages served from
the grading server's origin. An object whose ``_repr_html_`` returns
``<img src=x onerror=...>`` would then run script as the grader (stored XSS),
and feedback would carry it to students. :class:`InertOutputs`, registered in
``nbgrader_config.py`` after ``LimitOutput`` in autograde, first in
``GenerateFeedback`` and on the formgrader's ``HTMLExporter``, keeps of every code
cell's outputs only the MIME types that cannot run code or carry markup (text and
raster images), drops output metadata (``isolated``, image sizes and file names
reach the page's HTML) and the notebook's widget state.
"""

import re

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import List, Unicode

from attncourse.constants import METADATA_KEY

OUTPUT_TYPES = {"stream", "error", "display_data", "execute_result"}
# A raster image is base64 text; anything else there is not an image.
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")


class InertOutputs(NbGraderPreprocessor):
    """Reduce every code cell's outputs to plain text and raster images."""

    allowed_types = List(
        Unicode(),
        ["text/plain", "image/png", "image/jpeg", "image/gif"],
        help="MIME types an output may keep; every other one (HTML, JavaScript, SVG, "
        "widgets, Markdown, LaTeX, PDF, unknown types) is dropped.",
    ).tag(config=True)

    # nbconvert's exporters configure every preprocessor's display_data_priority; NbGraderPreprocessor
    # declares it without config=True, which logs a warning per exporter (GetGrades does the same).
    display_data_priority = List(Unicode(), help="Unused here.").tag(config=True)

    note = Unicode(
        "[HTML output removed: student output is shown as text]",
        help="text/plain put in an output that had no text of its own once its rich "
        "representations are dropped.",
    ).tag(config=True)

    def preprocess(
        self, nb: NotebookNode, resources: ResourcesDict
    ) -> tuple[NotebookNode, ResourcesDict]:
        nb.metadata.pop("widgets", None)  # widget state is rendered as script by nbconvert
        return super().preprocess(nb, resources)

    def preprocess_cell(
        self, cell: NotebookNode, resources: ResourcesDict, index: int
    ) -> tuple[NotebookNode, ResourcesDict]:
        if cell.cell_type == "code":
            cell.outputs = [self._inert(o) for o in cell.get("outputs", []) if self._known(o)]
        return cell, resources

    @staticmethod
    def _known(output: NotebookNode) -> bool:
        return output.get("output_type") in OUTPUT_TYPES

    def _inert(self, output: NotebookNode) -> NotebookNode:
        if output.output_type not in ("display_data", "execute_result"):
            return output  # streams and errors are text, escaped by every template
        data = output.get("data", {})
        kept = {k: v for k, v in data.items() if k in self.allowed_types and _plain(k, v)}
        if set(kept) != set(data) and "text/plain" not in kept:
            kept["text/plain"] = self.note
        output.data = kept
        output.metadata = _kept_metadata(output.get("metadata", {}))
        return output


def _plain(mime: str, value) -> bool:
    """True when ``value`` is what ``mime`` promises: text, or base64 for an image."""
    text = "".join(value) if isinstance(value, list) else value
    if not isinstance(text, str):
        return False
    return not mime.startswith("image/") or _BASE64.fullmatch(text) is not None


def _kept_metadata(metadata: dict) -> dict:
    """Only the pipeline's own stderr marker (feedback hides stderr by it); templates read the
    rest (``isolated``, image ``width``/``height``/``filenames``) into the page's HTML."""
    ours = metadata.get(METADATA_KEY)
    if isinstance(ours, dict) and ours.get("stream") == "stderr":
        return {METADATA_KEY: {"stream": "stderr"}}
    return {}
