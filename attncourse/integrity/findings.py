"""Integrity findings: a notebook's, against the course's cells; kept in its metadata.

Scanned in the sanitize stage, stored in the notebook (:func:`store`), read after the
autograder has saved its scores (:func:`findings_of`) by the plugin that flags parts, the
feedback and the report.
"""

import ast
from dataclasses import asdict, dataclass

from nbformat.notebooknode import NotebookNode

from attncourse.cells import grade_id
from attncourse.constants import METADATA_KEY
from attncourse.integrity.coursenotebook import CourseNotebook, normalize
from attncourse.integrity.scanner import scan_source
from attncourse.ipythoncode import cell_tree, parse
from attncourse.pointers import cell_places
from attncourse.pointing import Place, enclosing_name, pointer

COMMENT_HEADER = "Integrity check:"


@dataclass(frozen=True)
class Finding:
    """One integrity finding: where it is (as the student sees it: :mod:`attncourse.pointers`),
    which part it costs, what it is."""

    cell: int  # the cell's index in the notebook (never in a message)
    grade_id: str | None
    part: str | None  # the grade id of the answer whose part it costs
    kind: str
    line: int | None  # in the cell's own source, 1-based
    detail: str
    label: str = ""  # the part of the cell it is in ("Part 5"); "" for a cell of no part
    function: str = ""  # the def/class around it ("MyMHA.forward")
    place: str = ""  # "the answer cell", "a cell you added after Part 5"; "" for the notebook

    @property
    def where(self) -> str:
        """ "`MyMHA.forward`, line 3 of the answer cell" ("" for the whole notebook)."""
        if not self.place:
            return ""
        return pointer(Place(self.label, self.place), self.function, self.line)

    def describe(self) -> str:
        """ "import: ... [Part 5: `MyMHA.forward`, line 3 of the answer cell]"."""
        if not self.place:
            return f"{self.kind}: {self.detail}"
        prefix = f"{self.label}: " if self.label else ""
        return f"{self.kind}: {self.detail} [{prefix}{self.where}]"


def scan_notebook(nb: NotebookNode, course: CourseNotebook) -> list[Finding]:
    """Every :class:`Finding` in submitted notebook ``nb`` against the trusted ``course`` cells.

    A finding in a course cell or an answer cell is charged to that cell's part. One in a cell
    the student added is charged to the parts whose answers it can affect: a ``def`` or
    ``class`` to the answers that use its name (directly or through the student's other
    definitions), module-level code to every answer part (it runs before all of them).
    """
    findings = []
    part = course.first_part
    uses = _names_used_by_answers(nb, course)
    places = cell_places(nb)
    for index, cell in enumerate(nb.cells):
        gid = grade_id(cell)
        ref = course.cells.get(gid)
        if ref is not None:
            part = course.part_of[gid]
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        text = normalize(source)
        hits = []
        if ref is not None and ref.locked:
            if text not in ref.sources:
                hits = [("locked cell edited", None, "the source differs from the course's")]
        elif cell.cell_type == "code" and text not in course.trusted:
            hits = scan_source(source, course.protected, course.allowed_imports)
        for hit in hits:
            parts = [part] if ref is not None else _parts_affected(source, hit[1], uses, part)
            place = places[index]
            function = enclosing_name(cell_tree(source), hit[1])
            findings += [
                Finding(index, gid, p, *hit, place.part, function, place.cell) for p in parts
            ]
    return findings


def _definitions(tree):
    """name -> the top-level def/class/assignment statements binding it."""
    out = {}
    for node in tree.body if tree is not None else []:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.setdefault(node.name, []).append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        out.setdefault(name.id, []).append(node)
    return out


def _loaded(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _names_used_by_answers(nb, course):
    """answer part -> every name its answer cell uses, followed through the definitions of the
    cells the student added (a helper's helpers count)."""
    added = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and grade_id(cell) not in course.cells:
            for name, nodes in _definitions(parse(_text(cell))).items():
                added.setdefault(name, []).extend(nodes)
    uses = {}
    for cell in nb.cells:
        gid = grade_id(cell)
        ref = course.cells.get(gid)
        if cell.cell_type != "code" or ref is None or not ref.answer:
            continue
        tree = parse(_text(cell))
        todo = list(_loaded(tree)) if tree is not None else []
        seen = set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for node in added.get(name, []):
                todo.extend(_loaded(node))
        uses[course.part_of[gid]] = seen
    return uses


def _parts_affected(source, line, uses, fallback):
    """The parts a finding at ``line`` of an added cell can change (see :func:`scan_notebook`)."""
    tree = parse(source)
    if tree is None or line is None:
        return sorted(uses) or [fallback]
    for node in tree.body:
        if node.lineno <= line <= (node.end_lineno or node.lineno):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                parts = sorted(p for p, names in uses.items() if node.name in names)
                return parts or [fallback]
            break
    return sorted(uses) or [fallback]


def _text(cell):
    return cell.source if isinstance(cell.source, str) else "".join(cell.source)


def store(nb: NotebookNode, findings: list[Finding]) -> None:
    """Keep ``findings`` in the notebook's metadata (the sanitize stage's scan)."""
    nb.metadata.setdefault(METADATA_KEY, {})["integrity"] = [asdict(f) for f in findings]


def findings_of(nb: NotebookNode) -> list[Finding]:
    """The findings :func:`store` kept in a (sanitized or autograded) notebook."""
    stored = nb.metadata.get(METADATA_KEY, {}).get("integrity", [])
    return [Finding(**f) for f in stored]


def flagged_comment(findings: list[Finding], flagged: list[str]) -> str:
    """The gradebook comment of a part with findings (shown in formgrader and the feedback)."""
    text = "\n".join([COMMENT_HEADER, ""] + [f"- {f.describe()}" for f in findings])
    if flagged:
        text += f"\n\nFlagged for review: {', '.join(flagged)}."
        text += "\nThe tests' score stands unless a grader enters a manual score."
    return text
