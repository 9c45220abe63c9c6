"""Sanitize stage, first: the student's copy of the run record is dropped, and no link or
special file of the student's folder reaches a kernel.

The folder is checked once more after :class:`attncourse.plainfiles.Refusals`, the pre-convert hook
(this is all that runs when that hook is not configured: it then also deletes what
nbgrader's copy made of a link in ``autograded/``, before any kernel sees it), and every
refusal is recorded in the notebook's metadata under ``attncourse.refused_files``, as
``"<relative path>: <what it is>"``.
"""

import os
import shutil
from pathlib import Path

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Instance, default

from attncourse.constants import METADATA_KEY
from attncourse.plainfiles import (
    WHY,
    Refusals,
    refusal,
    special_entries,
)
from attncourse.runrecord import READING_REPAIRS, RunRecord


class RefuseSpecialFiles(NbGraderPreprocessor):
    """Sanitize stage, first: no link or special file of the student's folder reaches a kernel,
    and the notebook records what was refused."""

    refusals = Instance(
        Refusals,
        help="What was refused before autograde read the notebook (the pre-convert hook's, or "
        "the grading process's from the job's run record); its own when none is given.",
    ).tag(config=True)

    @default("refusals")
    def _own_refusals(self) -> Refusals:
        return Refusals()

    def preprocess(
        self, nb: NotebookNode, resources: ResourcesDict
    ) -> tuple[NotebookNode, ResourcesDict]:
        # The run's record is the grader's alone: what the submitted file carries under the
        # course's key (forged protections, refusals, repairs) is dropped on entry. Only a note
        # that the file was unreadable or refused stays: the exporter wrote it on its placeholder,
        # and a student who forges one only fails their own tests; the exporter's repairs come
        # in the resources.
        said = RunRecord.of(nb)
        nb.metadata.pop(METADATA_KEY, None)
        # the exporter's reasons are words: another value is the file's own, dropped
        unreadable, refused = (
            v if isinstance(v, str) else None for v in (said.unreadable, said.refused)
        )
        repairs = list(resources.get(READING_REPAIRS) or [])  # the exporter's, not the file's
        if unreadable or refused or repairs:
            RunRecord(unreadable=unreadable, refused=refused, repairs=repairs).store(nb)
        folder = resources.get("metadata", {}).get("path")  # submitted/<student>/<assignment>
        if not folder:
            return nb, resources
        refused = self.refusals.of(folder)  # logged where they were refused
        late = [rel for rel, _, _ in special_entries(folder)]
        if late:  # still there when nbgrader copied the folder: undo what its copy made of them
            self._remove_copies(late, resources["nbgrader"])
            now = self.refusals.refuse(folder)
            for entry in now:
                self.log.warning("Refused %s/%s: %s; removed, never followed", folder, entry, WHY)
            refused += now
        if refused:
            record = RunRecord.of(nb)
            known = record.refused_files
            known.extend(e for e in refused if e not in known)
            record.store(nb)
        return nb, resources

    def _remove_copies(self, rels: list[str], info: dict) -> None:
        """Delete what nbgrader's copy made of ``rels`` in ``autograded/``, unless the instructor's
        ``source/`` provides that file (nbgrader copied the instructor's over it then)."""
        coursedir = CourseDirectory(config=self.config)
        dest = Path(
            coursedir.format_path(
                coursedir.autograded_directory, info["student"], info["assignment"]
            )
        )
        source = Path(coursedir.format_path(coursedir.source_directory, ".", info["assignment"]))
        for rel in rels:
            copy = dest / rel
            if os.path.lexists(source / rel) or not os.path.lexists(copy):
                continue
            if refusal(copy) is None and copy.is_dir():
                shutil.rmtree(copy)
            else:
                os.unlink(copy)
            self.log.warning("Deleted %s: autograde had copied the target of a refused link", copy)
