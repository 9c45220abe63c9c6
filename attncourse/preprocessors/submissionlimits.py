"""Sanitize stage, second: the price of one submission, set by the course team.

Before anything else of the grader reads a cell (nbgrader's own steps, the integrity scan,
the kernel, the judge's rule prover), a submission is held to the limits below: cells past
``max_cells`` are dropped (the course's own cells are put back from the release by
:class:`~attncourse.preprocessors.repairgradecells.RepairGradeCells`), and a cell whose source
is too large, or whose code parses deeper or larger than the prover reads, is refused: its
source is emptied, it is never run or proved, and the cell's output names the limit. Only the
cells over a limit lose anything. The whole file's size is held at the door, before its JSON
is parsed (:class:`~attncourse.tolerantexporter.TolerantNotebookExporter`), and a cell's
output at run time (:class:`~attncourse.preprocessors.resilientexecute.ResilientExecute`).
Each refusal is a fault of the run record (``"refused: ..."``), named by the cell's place.
"""

import ast
from collections import Counter

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer

from attncourse.cells import grade_id
from attncourse.constants import METADATA_KEY
from attncourse.judge.program import python_source
from attncourse.pointers import cell_places
from attncourse.runrecord import RunRecord

REFUSED = "refused"  # the key of a refused cell's reason in its metadata (METADATA_KEY)


def refusal(cell: NotebookNode) -> str | None:
    """Why ``cell`` was refused by a limit, or None."""
    mark = cell.get("metadata", {}).get(METADATA_KEY)
    return mark.get(REFUSED) if isinstance(mark, dict) else None


def tree_size(tree: ast.AST, max_depth: int) -> int | None:
    """The nodes of ``tree``, walked without recursion; None if it nests deeper than
    ``max_depth`` (the walk stops there)."""
    nodes = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            return None
        nodes += 1
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return nodes


class SubmissionLimits(NbGraderPreprocessor):
    """Hold a submission to the course's limits before any costly step reads it."""

    max_notebook_bytes = Integer(
        20 * 2**20,
        help="Largest notebook file (bytes) that is read at all; a larger one is refused whole, "
        "before its JSON is parsed. The course's notebooks are about 100 kB without outputs.",
    ).tag(config=True, limit=True)
    max_cells = Integer(
        500,
        help="Cells a notebook may have; cells past it are dropped unread (the course's own "
        "cells are put back from the release). The course's notebooks have at most 67.",
    ).tag(config=True, limit=True)
    max_cell_source_bytes = Integer(
        50_000,
        help="Largest source of one cell (bytes); a larger cell is refused (not run, not proved). "
        "The course's largest cell is 8 kB.",
    ).tag(config=True, limit=True)
    max_parse_depth = Integer(
        100,
        help="Deepest nesting of a code cell's syntax tree that the rule prover reads; a deeper "
        "cell is refused. The course's cells nest at most 17 deep.",
    ).tag(config=True, limit=True)
    max_parse_bytes = Integer(
        200_000,
        help="Source of all the student's code cells together (bytes) that is run and proved; "
        "the cells after that are refused. The course's notebooks have at most 41 kB of code.",
    ).tag(config=True, limit=True)

    def preprocess(
        self, nb: NotebookNode, resources: ResourcesDict
    ) -> tuple[NotebookNode, ResourcesDict]:
        for cell in nb.cells:  # the grader's marks are its own: what the file carries is dropped
            cell.metadata.pop(METADATA_KEY, None)
        dropped = self._drop_extra_cells(nb)
        refused = {}
        for index, cell in enumerate(nb.cells):
            size = len(cell.source.encode("utf-8", "surrogatepass"))
            if size > self.max_cell_source_bytes:
                refused[index] = (
                    "max_cell_source_bytes",
                    f"its source is {size:,} bytes, over the course's limit of "
                    f"{self.max_cell_source_bytes:,}",
                )
                cell.source = ""
        budget = self.max_parse_bytes
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or index in refused or not cell.source.strip():
                continue
            budget -= len(cell.source.encode("utf-8", "surrogatepass"))
            why = self._too_deep(cell.source) if budget >= 0 else self._over_budget()
            if why:
                refused[index] = why
                cell.source = ""
        record = RunRecord.of(nb)
        places = cell_places(nb) if refused else {}
        said = Counter()  # (grade id, where, fault) -> cells: cells refused alike named once
        for index, (limit, why) in sorted(refused.items()):
            cell = nb.cells[index]
            gid = grade_id(cell) or ""
            where = places[index].name + (f" (`{gid}`)" if gid else "")
            reason = f"{why} (SubmissionLimits.{limit})"
            cell.metadata[METADATA_KEY] = {REFUSED: f"this cell was not graded: {reason}"}
            fault = f"refused: {reason}"
            said[gid, where, fault] += 1
            self.log.warning("Refused %s: %s", where, fault)
        for (gid, where, fault), cells in said.items():
            where = f"{where} ({cells} cells)" if cells > 1 else where
            record.faults.append({"cell": gid, "where": where, "fault": fault})
        if dropped:
            record.faults.append(
                {
                    "cell": "",
                    "where": f"the {dropped:,} cells past the first {self.max_cells}",
                    "fault": f"refused: the notebook has more than {self.max_cells} cells "
                    "(SubmissionLimits.max_cells); they were not read",
                }
            )
        if refused or dropped:
            record.store(nb)
        return nb, resources

    def _drop_extra_cells(self, nb: NotebookNode) -> int:
        """Keep ``max_cells`` cells: those with a grade id first (once each), then the others
        in order; the number dropped."""
        if len(nb.cells) <= self.max_cells:
            return 0
        keep, seen = set(), set()
        for index, cell in enumerate(nb.cells):
            gid = grade_id(cell)
            if gid is not None and gid not in seen and len(keep) < self.max_cells:
                seen.add(gid)
                keep.add(index)
        for index in range(len(nb.cells)):
            if len(keep) >= self.max_cells:
                break
            keep.add(index)
        dropped = len(nb.cells) - len(keep)
        nb.cells = [cell for index, cell in enumerate(nb.cells) if index in keep]
        return dropped

    def _too_deep(self, source: str) -> tuple[str, str] | None:
        """(limit, why) when ``source``, parsed as the prover parses it, nests too deep."""
        tree = python_source(source)
        if tree is None or tree_size(tree, self.max_parse_depth) is not None:
            return None  # within the limit, or not Python (the prover says so, at no cost)
        return "max_parse_depth", (
            f"its code nests more than {self.max_parse_depth} deep, deeper than the rule prover "
            "reads"
        )

    def _over_budget(self) -> tuple[str, str]:
        return "max_parse_bytes", (
            f"the notebook's code cells passed {self.max_parse_bytes:,} bytes in all, what the "
            "grader runs and proves, by this cell"
        )
