"""The course's side of a notebook: its trusted cells, its parts, what students may import
and which names they may not rebind, from the gradebook or from a notebook."""

import ast
from dataclasses import dataclass

import nbformat
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory

from attncourse import upstream
from attncourse.cells import grade_id
from attncourse.course import source_notebook
from attncourse.integrity.scanner import BASE_PROTECTED, import_bindings
from attncourse.ipythoncode import parse


@dataclass(frozen=True)
class CourseCell:
    """A cell of the course's notebook as the gradebook (or the release) records it."""

    grade_id: str
    cell_type: str
    locked: bool
    answer: bool
    graded: bool
    sources: frozenset  # normalized, as recorded and without its hidden tests

    @classmethod
    def of(cls, grade_id, cell_type, locked, answer, graded, source):
        versions = {normalize(source), normalize(without_hidden_tests(source))}
        return cls(grade_id, cell_type, locked and not answer, answer, graded, frozenset(versions))


def normalize(source):
    """Source text compared modulo trailing whitespace on lines and blank lines at the ends."""
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def without_hidden_tests(source):
    """``source`` with nbgrader's hidden-test region removed (what students were shown)."""
    cell = nbformat.v4.new_code_cell(source)
    upstream.without_hidden_tests(cell)
    return cell.source


class CourseNotebook:
    """The trusted cells of one notebook, its parts, allowed imports and protected names."""

    def __init__(self, cells):
        self.cells = {cell.grade_id: cell for cell in cells}
        self.order = [cell.grade_id for cell in cells]
        self.trusted = {s for cell in cells if not cell.answer for s in cell.sources}
        answers = [gid for gid in self.order if self.cells[gid].answer]
        self.first_part = answers[0] if answers else None
        self.part_of = {}
        part = self.first_part
        for gid in self.order:
            if self.cells[gid].answer:
                part = gid
            self.part_of[gid] = part
        self.allowed_imports = set()
        self.protected = set(BASE_PROTECTED)
        for cell in cells:
            if cell.answer or cell.cell_type != "code":
                continue
            for source in cell.sources:
                tree = parse(source)
                if tree is None:
                    continue
                bindings = import_bindings(tree)
                self.protected |= {name for name, _ in bindings}
                self.protected |= {
                    node.name
                    for node in tree.body
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                }
                if not cell.graded:  # a provided cell: students see (and may repeat) its imports
                    self.allowed_imports |= set(bindings)

    def part_grades(self, part):
        """grade_ids of the autograded and manually graded cells charged to ``part``."""
        return [g for g in self.order if self.part_of[g] == part and self.cells[g].graded]

    @classmethod
    def from_notebook(cls, nb):
        """From a release (or source) notebook's cells and nbgrader metadata."""
        cells = []
        for cell in nb.cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if "grade_id" not in meta:
                continue
            cells.append(
                CourseCell.of(
                    meta["grade_id"],
                    cell.cell_type,
                    bool(meta.get("locked")),
                    bool(meta.get("solution")),
                    bool(meta.get("grade")),
                    cell.source,
                )
            )
        return cls(cells)

    @classmethod
    def from_gradebook(cls, gradebook, notebook_id, assignment_id, order):
        """From the gradebook's source cells, in the order of the ``order`` grade_ids."""
        notebook = gradebook.find_notebook(notebook_id, assignment_id)
        sources = {cell.name: cell for cell in notebook.source_cells}
        graded = {cell.name for cell in notebook.grade_cells}
        answers = {cell.name for cell in notebook.solution_cells}
        ordered = [g for g in order if g in sources] + sorted(set(sources) - set(order))
        cells = [
            CourseCell.of(
                gid,
                sources[gid].cell_type,
                bool(sources[gid].locked),
                gid in answers,
                gid in graded,
                sources[gid].source,
            )
            for gid in ordered
        ]
        return cls(cells)


def course_notebook(coursedir: CourseDirectory, gradebook: Gradebook, info: dict) -> CourseNotebook:
    """The :class:`CourseNotebook` of the notebook an nbgrader preprocessor is working on."""
    source = source_notebook(coursedir, info["assignment"], info["notebook"])
    order = [g for g in map(grade_id, source.cells) if g] if source else []
    return CourseNotebook.from_gradebook(gradebook, info["notebook"], info["assignment"], order)
