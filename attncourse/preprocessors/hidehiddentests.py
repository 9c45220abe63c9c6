"""Feedback stage: every test's result and message, no hidden test, no mark scheme.

Stock ``nbgrader generate_feedback`` renders the autograded notebook, in
which nbgrader has restored the hidden tests and whose failed test cells
carry a full traceback through the hidden test's lines (nbgrader issues #917,
#1363). :class:`HideHiddenTests`, registered in ``nbgrader_config.py`` after
``GetGrades``, makes the feedback safe to return:

- each test cell shows the source students were given: the gradebook's source
  of that cell with the ``### BEGIN HIDDEN TESTS`` region removed;
- an error in a test cell is reduced to ``ename: evalue`` — our GradingError
  messages (what was checked, expected, got, likely cause) are written to be
  shown — and the test cell's stderr is dropped (a warning's message quotes the
  source line that raised it);
- the graders' mark-scheme cells are removed;
- integrity findings, if any, are listed at the top (the part's comment, shown
  under the answer, says which parts were flagged for review).
"""

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbformat.v4 import new_markdown_cell
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor

from attncourse.cells import is_test_cell
from attncourse.constants import METADATA_KEY
from attncourse.integrity.coursenotebook import without_hidden_tests
from attncourse.integrity.findings import findings_of
from attncourse.markscheme import is_mark_scheme_cell


def is_stderr(output):
    """A stderr stream, or one the grading pipeline turned into display data to keep the score."""
    if output.output_type == "stream":
        return output.get("name") == "stderr"
    return output.get("metadata", {}).get(METADATA_KEY, {}).get("stream") == "stderr"


def reduce_outputs(outputs):
    """Test-cell outputs with tracebacks reduced to ``ename: evalue`` and stderr dropped."""
    kept = []
    for output in outputs:
        if is_stderr(output):
            continue
        if output.output_type == "error":
            output.traceback = [f"{output.ename}: {output.evalue}"]
        kept.append(output)
    return kept


def integrity_cell(findings):
    lines = ["**Integrity check.** The grader found code that is not allowed in this assignment;"]
    lines.append("an instructor reviews the affected parts.\n")
    lines += [f"- {finding.describe()}" for finding in findings]
    return new_markdown_cell("\n".join(lines), metadata={METADATA_KEY: {"integrity": True}})


class HideHiddenTests(NbGraderPreprocessor):
    """Feedback stage: strip hidden tests, tracebacks and mark schemes; list integrity findings."""

    def preprocess(
        self, nb: NotebookNode, resources: ResourcesDict
    ) -> tuple[NotebookNode, ResourcesDict]:
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            try:
                cells = gb.find_notebook(info["notebook"], info["assignment"]).source_cells
                self.sources = {cell.name: cell.source for cell in cells}
            except MissingEntry:
                self.sources = {}
        nb.cells = [cell for cell in nb.cells if not is_mark_scheme_cell(cell)]
        nb, resources = super().preprocess(nb, resources)
        findings = findings_of(nb)
        if findings:
            nb.cells.insert(0, integrity_cell(findings))
        return nb, resources

    def preprocess_cell(
        self, cell: NotebookNode, resources: ResourcesDict, index: int
    ) -> tuple[NotebookNode, ResourcesDict]:
        if is_test_cell(cell):
            gid = cell.metadata.nbgrader["grade_id"]
            if gid in self.sources:  # else not a course cell: nothing hidden in it
                cell.source = without_hidden_tests(self.sources[gid])
            cell.outputs = reduce_outputs(cell.outputs)
        return cell, resources
