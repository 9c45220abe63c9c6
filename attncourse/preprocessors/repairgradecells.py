"""Sanitize stage, before ``OverwriteCells``: put back grade and locked cells a student lost.

A cell deleted, or stripped of its nbgrader metadata, or duplicated would otherwise abort
the student's grading or lose its points; the repairs are recorded in the notebook.
"""

import copy
import difflib
import uuid
from collections import defaultdict
from pathlib import Path

import nbformat
from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.nbgraderformat import SCHEMA_VERSION
from nbgrader.preprocessors import NbGraderPreprocessor

from attncourse.cells import grade_id
from attncourse.pointers import cell_places
from attncourse.runrecord import RunRecord


def _well_formed(meta) -> bool:
    """nbgrader metadata that nbgrader's own steps can read: a dict of nbgrader's schema version
    (its CheckCellMetadata raises on any other, a missing one too), whose flags are booleans,
    whose points a finite number, with a grade id (a non-empty string) where a flag is set."""
    if not isinstance(meta, dict):
        return False
    version = meta.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:
        return False
    flags = [meta.get(k) for k in ("grade", "solution", "locked", "task")]
    if any(f is not None and not isinstance(f, bool) for f in flags):
        return False
    points = meta.get("points")
    if points is not None and (
        isinstance(points, bool) or not isinstance(points, (int, float)) or not 0 <= points < 1e9
    ):
        return False
    gid = meta.get("grade_id")
    if gid is None:
        return not any(flags)
    return isinstance(gid, str) and bool(gid)


def drop_malformed_metadata(nb: NotebookNode) -> int:
    """Drop the nbgrader metadata of every cell where it is malformed (a forged or damaged
    cell becomes a plain one; a course cell among them is put back below); how many."""
    dropped = 0
    for cell in nb.cells:
        if "nbgrader" in cell.metadata and not _well_formed(cell.metadata["nbgrader"]):
            del cell.metadata["nbgrader"]
            dropped += 1
    return dropped


class RepairGradeCells(NbGraderPreprocessor):
    """Restore deleted and metadata-stripped grade/locked cells from the gradebook.

    Order and metadata come from the release notebook (what the student got);
    the cell's content comes from the gradebook, which ``OverwriteCells`` then
    enforces as usual. A cell without metadata is re-labelled when it sits
    where the missing cell belongs and is the same kind of cell with a similar
    source; otherwise a fresh copy is inserted there.
    """

    def preprocess(
        self, nb: NotebookNode, resources: ResourcesDict
    ) -> tuple[NotebookNode, ResourcesDict]:
        malformed = drop_malformed_metadata(nb)
        if malformed:
            record = RunRecord.of(nb)
            record.repairs.append(
                f"dropped nbgrader metadata that nbgrader cannot read from {malformed} cell(s)"
            )
            record.store(nb)
        reference, names = self._reference(resources)
        if not reference:
            return nb, resources
        repairs = []
        # Locked cells first (their source identifies them), then answers by position.
        order = sorted(
            range(len(reference)),
            key=lambda k: reference[k][1].metadata.nbgrader.get("solution", False),
        )
        for position in order:
            gid, ref = reference[position]
            present = self._labelled(nb)
            if gid in present:
                continue
            before = [present[g] for g, _ in reference[:position] if g in present]
            after = [present[g] for g, _ in reference[position + 1 :] if g in present]
            lo = max(before, default=-1)
            hi = min([i for i in after if i > lo], default=len(nb.cells))
            match = self._match(nb.cells, lo, hi, ref)
            if match is not None:
                nb.cells[match].metadata["nbgrader"] = copy.deepcopy(ref.metadata.nbgrader)
                repairs.append(f"restored the nbgrader metadata of {names[gid]}")
            else:
                nb.cells.insert(lo + 1, self._fresh(ref))
                repairs.append(f"restored {names[gid]}, which was deleted")
        repairs += self._restore_flags(nb, dict(reference), names)
        for gid, copies in self._duplicates(nb).items():
            for i in copies[:-1]:
                cell = nb.cells[i]
                if cell.cell_type == "code" and not cell.metadata.nbgrader.get("solution"):
                    # A copy of the course's own cell holds no work of the student's: emptied,
                    # it cannot run the course's test code as if the student had written it.
                    cell.source = f"# a copy of {names.get(gid, gid)}, emptied by the grader"
                del cell.metadata["nbgrader"]  # a plain cell now: it runs, it is not graded
            name = names.get(gid, f"the cell `{gid}`")
            repairs.append(f"{name} appears {len(copies)} times; the last copy is graded")
        for message in repairs:
            self.log.warning("%s: %s", resources["nbgrader"].get("student"), message)
        if repairs:
            record = RunRecord.of(nb)
            record.repairs.extend(repairs)
            record.store(nb)
        return nb, resources

    FLAGS = ("grade", "solution", "locked", "points", "task")

    def _restore_flags(self, nb, reference, names):
        """A grade or locked cell's flags (and kind) are the gradebook's: a test cell marked as a
        solution, unlocked or given other points by the student is put back, and graded."""
        repairs = []
        for gid, index in self._labelled(nb).items():
            ref = reference.get(gid)
            if ref is None:
                continue
            cell = nb.cells[index]
            if cell.cell_type != ref.cell_type:
                nb.cells[index] = self._fresh(ref)
                if ref.metadata.nbgrader.get("solution"):  # the student's answer is kept
                    nb.cells[index].source = cell.source
                repairs.append(f"{names[gid]} was turned into a {cell.cell_type} cell; restored")
                continue
            mine, want = cell.metadata.nbgrader, ref.metadata.nbgrader
            changed = [k for k in self.FLAGS if mine.get(k) != want.get(k)]
            if changed:
                cell.metadata["nbgrader"] = copy.deepcopy(want)
                repairs.append(
                    f"restored the nbgrader flags of {names[gid]} (the submission changed "
                    f"{', '.join(changed)})"
                )
        return repairs

    @staticmethod
    def _labelled(nb):
        return {
            c.metadata.nbgrader["grade_id"]: i
            for i, c in enumerate(nb.cells)
            if c.metadata.get("nbgrader", {}).get("grade_id")
        }

    @staticmethod
    def _duplicates(nb):
        """grade_id -> indices of its copies, for every grade_id that appears more than once.

        nbgrader's own DeduplicateIds leaves an empty metadata dict on the extra
        copies, which CheckCellMetadata then rejects, aborting the whole class
        (nbgrader #1083); removing the key instead keeps them plain cells.
        """
        copies = defaultdict(list)
        for i, c in enumerate(nb.cells):
            gid = c.metadata.get("nbgrader", {}).get("grade_id")
            if gid:
                copies[gid].append(i)
        return {gid: idx for gid, idx in copies.items() if len(idx) > 1}

    @staticmethod
    def _match(cells, lo, hi, ref):
        """Index of the unlabelled cell in (lo, hi) that is ``ref`` stripped of metadata, or None."""
        candidates = [
            i
            for i in range(lo + 1, hi)
            if cells[i].cell_type == ref.cell_type and not cells[i].metadata.get("nbgrader")
        ]
        if not candidates:
            return None
        ratio = {
            i: difflib.SequenceMatcher(None, cells[i].source, ref.source).ratio()
            for i in candidates
        }
        best = max(candidates, key=ratio.get)
        answer = ref.metadata.nbgrader.get("solution", False)
        if ratio[best] >= 0.6 or (answer and len(candidates) == 1):
            return best
        return None

    def _fresh(self, ref):
        cell = copy.deepcopy(ref)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.id = uuid.uuid4().hex[:8]
        return cell

    def _reference(self, resources):
        """[(grade_id, release cell)] in release order, with the gradebook's source for each,
        and grade_id -> the cell's name ("the answer cell of Part 5 (`mha_values`)")."""
        info = resources["nbgrader"]
        coursedir = CourseDirectory(config=self.config)
        for folder in (coursedir.release_directory, coursedir.source_directory):
            path = Path(coursedir.format_path(folder, ".", info["assignment"]))
            path = path / f"{info['notebook']}.ipynb"
            if path.exists():
                release = nbformat.read(path, as_version=4)
                break
        else:
            self.log.warning("No release notebook for %s: cannot repair cells", info["assignment"])
            return [], {}
        reference = []
        places = cell_places(release)
        names = {
            gid: f"{places[index].name} (`{gid}`)"
            for index, gid in enumerate(map(grade_id, release.cells))
            if gid
        }
        with Gradebook(info["db_url"]) as gb:
            for cell in release.cells:
                gid = cell.metadata.get("nbgrader", {}).get("grade_id")
                if not gid:
                    continue
                try:
                    source = gb.find_source_cell(gid, info["notebook"], info["assignment"])
                except MissingEntry:
                    continue
                cell = copy.deepcopy(cell)
                cell.source = source.source
                reference.append((gid, cell))
        return reference, names
