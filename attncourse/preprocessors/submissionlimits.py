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

What the file's cells carry beside their source is held at the door too, by
:meth:`SubmissionLimits.drop_carried` on the parsed JSON, before nbformat checks it against
its schema (a cost of about a millisecond per output: 20,000 one-character outputs in a few
cells cost 30 s and more): submitted outputs are never graded (the notebook runs again), so
every one is cleared there, at no cost to the student; attachments (images pasted into
Markdown) are kept up to ``max_attachment_bytes``, and a cell whose attachments pass it loses
them (``"dropped: ..."``, through :class:`Carried` in the resources).
"""

import ast
import json
from collections import Counter
from dataclasses import dataclass

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
CARRIED = "attncourse_carried"  # the resources key of what the exporter dropped (Carried)


@dataclass(frozen=True)
class Carried:
    """What :meth:`SubmissionLimits.drop_carried` dropped of a submitted file: ``(cell index,
    bytes)`` of each cell whose attachments passed ``max_attachment_bytes``."""

    attachments: tuple[tuple[int, int], ...] = ()


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
    max_attachment_bytes = Integer(
        5_000_000,
        help="Bytes of attachments (images pasted into Markdown cells, as JSON) the cells of a "
        "notebook may carry together, in cell order; a cell whose attachments pass it loses them "
        "before the notebook is read. Submitted outputs are never read: the notebook runs again. The "
        "course's notebooks carry none.",
    ).tag(config=True, limit=True)

    def drop_carried(self, nb: object) -> Carried:
        """Clear the outputs of the cells of ``nb`` (a parsed notebook file, any version, in
        place; a code cell's execution count too, as grading would) and drop the attachments
        past ``max_attachment_bytes``; what was dropped."""
        if not isinstance(nb, dict):
            return Carried()
        sheets = nb.get("worksheets") if isinstance(nb.get("worksheets"), list) else []
        older = [c for w in sheets if isinstance(w, dict) for c in _cells(w)]  # nbformat 3
        for cell in older:
            if "outputs" in cell and cell.get("cell_type") == "code":
                cell["outputs"] = []
            else:
                cell.pop("outputs", None)
        for cell in _cells(nb):  # a code cell's outputs and count, as grading clears them (any
            if cell.get("cell_type") == "code":  # shape, or missing: the code alone counts)
                cell.update(outputs=[], execution_count=None)
            else:  # outputs have no place there, and the schema would still descend into them
                cell.pop("outputs", None)
        budget, dropped = self.max_attachment_bytes, []
        for index, cell in enumerate(nb.get("cells") or []):
            if isinstance(cell, dict) and "attachments" in cell:
                size = len(json.dumps(cell["attachments"]))
                budget -= size
                if budget < 0:
                    del cell["attachments"]
                    dropped.append((index, size))
        return Carried(tuple(dropped))

    def preprocess(
        self, nb: NotebookNode, resources: ResourcesDict
    ) -> tuple[NotebookNode, ResourcesDict]:
        for cell in nb.cells:  # the grader's marks are its own: what the file carries is dropped
            cell.metadata.pop(METADATA_KEY, None)
        carried = self._carried_faults(nb, resources.get(CARRIED))
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
        record.faults += carried
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
        if refused or dropped or carried:
            record.store(nb)
        return nb, resources

    def _carried_faults(self, nb: NotebookNode, carried: Carried | None) -> list[dict]:
        """A fault of the run record per cell that lost its attachments at the door."""
        if not isinstance(carried, Carried) or not carried.attachments:
            return []
        places, faults = cell_places(nb), []
        for index, size in carried.attachments:
            if index not in places:
                continue
            gid = grade_id(nb.cells[index]) or ""
            where = places[index].name + (f" (`{gid}`)" if gid else "")
            fault = (
                f"dropped: its attachments ({size:,} bytes) passed the {self.max_attachment_bytes:,}"
                " bytes of attachments a notebook may carry (SubmissionLimits.max_attachment_bytes);"
                " they were not read"
            )
            self.log.warning("Dropped the attachments of %s: %s", where, fault)
            faults.append({"cell": gid, "where": where, "fault": fault})
        return faults

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


def _cells(holder: dict) -> list[dict]:
    """The cells of a parsed notebook (or an nbformat 3 worksheet) that are JSON objects."""
    cells = holder.get("cells")
    return [c for c in cells if isinstance(c, dict)] if isinstance(cells, list) else []
