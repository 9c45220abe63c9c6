"""Feedback stage, after ``GetGrades``: what the feedback's contents list and score lines say.

nbgrader's feedback lists every graded cell as "Test cell" or "Written response" and shows a
written answer no grader has marked yet as 0.0. :class:`PartContents` writes into each graded
cell (``metadata.attncourse.contents``) the words the course's feedback template
(``templates/nbconvert/templates/feedback/contents.html.j2``) shows instead: the part and what
is graded ("Part 5 — MyMHA.forward on a case you can check by hand", "Part 6 — written"),
and whether the grade is still awaited (the gradebook's ``needs_manual_grade``, no score yet).
"""

import re

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor

from attncourse.cells import grade_id
from attncourse.constants import METADATA_KEY
from attncourse.parts import cell_parts, docstring_label


def summary(source: str) -> str:
    """What a test cell checks, from its docstring: "Part 5: MyMHA.forward on a case you can
    check by hand (the grader ...)." -> "MyMHA.forward on a case you can check by hand"."""
    match = re.match(r'\s*(?:"""|\'\'\')(.*?)(?:"""|\'\'\')', source, re.S)
    text = " ".join(match.group(1).split()) if match else ""
    label = docstring_label(source)
    if label and text.startswith(label):
        text = text[len(label) :].lstrip(":")
    sentence = re.split(r"\.\s+(?=[A-Z])", text.strip(), maxsplit=1)[0].rstrip(".")
    return re.sub(r"\s+\([a-z][^()]* [^()]*\)$", "", sentence).strip()  # a closing aside goes


class PartContents(NbGraderPreprocessor):
    """Name each graded cell by its part and say whether its grade is still awaited."""

    def preprocess(
        self, nb: NotebookNode, resources: ResourcesDict
    ) -> tuple[NotebookNode, ResourcesDict]:
        info = resources["nbgrader"]
        parts = cell_parts(nb)
        with Gradebook(info["db_url"]) as gb:
            for cell in nb.cells:
                gid = grade_id(cell)
                if not gid or not (utils.is_grade(cell) or utils.is_task(cell)):
                    continue
                part = parts.get(gid)
                label = (part.part if part else "") or gid
                what = "written" if cell.cell_type == "markdown" else summary(cell.source)
                try:
                    grade = gb.find_grade(
                        gid, info["notebook"], info["assignment"], info["student"]
                    )
                    awaiting = grade.needs_manual_grade and grade.manual_score is None
                    awaiting = awaiting and grade.auto_score is None  # a flagged test has one
                except MissingEntry:
                    awaiting = False
                cell.metadata.setdefault(METADATA_KEY, {}).update(
                    contents=f"{label} — {what}" if what else label, awaiting=bool(awaiting)
                )
        return nb, resources
