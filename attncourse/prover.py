"""The rule prover that ships with the release: ``release/<assignment>/coursecheck/``, generated.

``attncourse release`` writes it beside each release notebook (:func:`write_prover`): a copy
of the judge's proving modules (:data:`SHIPPED`, their imports made relative, nothing else of
the package), the modules beside the judge they import (:data:`BESIDE`: the dangerous names,
the cell transform, the pointers' words), ``failure`` and ``cells`` (the two definitions they
use from elsewhere) and
``book`` (:class:`~attncourse.judge.history.Book`: the rules each rule test cell's check
declares, the parts, and digests of the course's own cells). Nothing of the hidden checks,
references, tolerances or secrets is in it. The instructor's source notebooks reach the same
proof through the installed ``coursecheck`` (:func:`check_rules_of_course`).
"""

import functools
import inspect
import re
import shutil
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode

from attncourse import pointing
from attncourse.cells import CodeCell, grade_id, is_answer, is_test_cell
from attncourse.course import ROOT, assignments, notebook_path
from attncourse.judge import agent, verdict
from attncourse.judge.checks import GradingError, fail
from attncourse.judge.history import Book, check_rules, defined_names, digest
from attncourse.parts import cell_parts

PACKAGE = "coursecheck"
# The judge's modules the student's copy holds, as they are (imports made relative).
SHIPPED = (
    "libraries",
    "program",
    "values",
    "reachstate",
    "walk",
    "calls",
    "scopes",
    "callgraph",
    "resolve",
    "tampering",
    "rules",
    "recordable",
    "rulebook",
    "history",
    "footprint",
    "tiling",
    "tilecheck",
)
# The modules beside the judge they import, shipped as they are (imports made relative).
BESIDE = ("dangerous", "ipythoncode", "pointing")
HEADER = "# Generated from the course's judge by the release build: do not edit.\n"
INIT = '''"""The rules of this notebook's parts, proved on your own code as you ran it.

A rule test cell calls ``check_rules("<its grade id>")``: the same proof the grader runs,
on the cells you ran (``In``). Call it only from those cells: the grader reads a cell of
yours that imports this package as code it cannot verify.
"""

import sys

from .book import BOOK
from .history import RuleBroken
from .history import check_rules as _check_rules
from .tilecheck import check_tiles

__all__ = ["RuleBroken", "check_rules", "check_tiles"]


def check_rules(grade_id):
    """Raise RuleBroken if the code you ran breaks a rule of test cell ``grade_id``."""
    __tracebackhide__ = True
    _check_rules(grade_id, BOOK, sys._getframe(1).f_globals)
'''


def answer_names(assignment: str, release: NotebookNode, root=ROOT) -> dict[str, frozenset]:
    """grade id -> the names the solution's answer cell binds that the release names anywhere
    (a stub such as ``raise NotImplementedError()`` binds none, yet the task names them):
    how the student's runs of that answer cell are told apart from other cells."""
    path = notebook_path(root, "source", assignment)
    if not path.exists():
        return {}
    text = "\n".join(c.source for c in release.cells)
    words = set(re.findall(r"\w+", text))
    return {
        grade_id(c): frozenset(defined_names(c.source) & words)
        for c in nbformat.read(path, as_version=4).cells
        if c.cell_type == "code" and is_answer(c)
    }


def book_of(assignment: str, notebooks) -> Book:
    """The Book of ``assignment`` from its notebooks (the release's; the source's too for the
    instructor, whose test cells run with their hidden part)."""
    checks = verdict.checks_of(assignment)
    public = answer_names(assignment, notebooks[0])
    course, tests, rules, parts, answers = set(), set(), {}, {}, {}
    answer_cells = []
    for nb in notebooks:
        labels = cell_parts(nb)
        stubs = []
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            gid = grade_id(cell)
            if is_test_cell(cell):
                tests.add(digest(cell.source))
                declared = getattr(checks.get(gid), "rules", ())
                if declared:
                    rules[gid] = tuple(declared)
                # the import rule holds at every test cell, for the answer cell above it
                parts[gid] = labels[gid].part if gid in labels else gid
                answers[gid] = len(stubs) - 1 if stubs else None
            elif is_answer(cell):
                stubs.append(defined_names(cell.source) | public.get(gid, frozenset()))
            else:
                course.add(digest(cell.source))
        answer_cells = answer_cells or stubs
    return Book(
        assignment,
        frozenset(course),
        frozenset(tests),
        tuple(answer_cells),
        rules,
        parts,
        answers,
    )


def _relative(text: str) -> str:
    """A judge module's text as a module of the shipped package."""
    text = text.replace("from attncourse.judge.checks import", "from .failure import")
    text = text.replace("from attncourse.judge import", "from . import")
    text = re.sub(r"from attncourse\.judge\.(\w+) import", r"from .\1 import", text)
    text = re.sub(r"from attncourse\.(\w+) import", r"from .\1 import", text)  # BESIDE, cells
    text = text.replace("attncourse.judge.", f"{PACKAGE}.").replace("attncourse", PACKAGE)
    return HEADER + text


def _book_source(book: Book) -> str:
    def names(values):
        return "frozenset(" + repr(tuple(sorted(values))) + ")"

    lines = [
        HEADER + '"""The rules of each rule test cell of this notebook, and its own cells."""',
        "",
        "from .history import Book",
        "from .rulebook import Rule",
        "",
        "BOOK = Book(",
        f"    assignment={book.assignment!r},",
        f"    course_cells={names(book.course_cells)},",
        f"    test_cells={names(book.test_cells)},",
        "    answer_cells=(" + "".join(f"{names(s)}, " for s in book.answer_cells) + "),",
        "    rules={",
        *(f"        {gid!r}: {rules!r}," for gid, rules in sorted(book.rules.items())),
        "    },",
        f"    parts={dict(sorted(book.parts.items()))!r},",
        f"    answers={dict(sorted(book.answers.items()))!r},",
        ")",
        "",
    ]
    return "\n".join(lines)


def prover_files(assignment: str, root=ROOT) -> dict[str, str]:
    """file name -> text of the ``coursecheck`` package for ``assignment``'s release."""
    judge = Path(verdict.__file__).parent
    files = {f"{name}.py": _relative((judge / f"{name}.py").read_text()) for name in SHIPPED}
    files["failure.py"] = (
        f'{HEADER}"""What a broken rule raises, as the judge raises it."""\n\n\n'
        + inspect.getsource(GradingError)
        + "\n\n"
        + inspect.getsource(fail)
    )
    package = Path(pointing.__file__).parent
    files |= {f"{name}.py": _relative((package / f"{name}.py").read_text()) for name in BESIDE}
    files["agent.py"] = (
        f'{HEADER}"""The kernel agent\'s footprint recorder, as the grader records."""\n\n'
        "import numpy\nimport torch\nfrom torch.utils._python_dispatch import TorchDispatchMode\n\n"
        f"MAX_OPS = {agent.MAX_OPS}\nMAX_NAMES = {agent.MAX_NAMES}\n\n\n"
        + inspect.getsource(agent.Recorder)
        + "\n\n"
        + inspect.getsource(agent._shapes)
    )
    files["cells.py"] = (
        f'{HEADER}"""A code cell as the rules read it."""\n\nfrom dataclasses import dataclass\n\n\n'
        + inspect.getsource(CodeCell)
    )
    release = nbformat.read(notebook_path(root, "release", assignment), as_version=4)
    files["book.py"] = _book_source(book_of(assignment, [release]))
    files["__init__.py"] = HEADER + INIT
    leaked = [name for name, text in files.items() if "attncourse" in text]
    if leaked:
        raise RuntimeError(f"the shipped prover names the instructor's package: {leaked}")
    return files


def has_rules(assignment: str) -> bool:
    """True when ``assignment`` has test cells (it then ships a prover): each judges at least
    the import rule, and the rule test cells their own rules too."""
    return bool(verdict.checks_of(assignment))


def write_prover(assignment: str, course=ROOT) -> Path | None:
    """Write ``release/<assignment>/coursecheck/`` afresh (none for an assignment without
    rule test cells); its path."""
    folder = notebook_path(course, "release", assignment).parent / PACKAGE
    if folder.exists():
        shutil.rmtree(folder)
    if not has_rules(assignment):
        return None
    folder.mkdir(parents=True)
    for name, text in prover_files(assignment, course).items():
        (folder / name).write_text(text)
    return folder


@functools.cache
def _course_book(assignment: str, root: Path) -> Book:
    notebooks = [
        nbformat.read(path, as_version=4)
        for path in (notebook_path(root, f, assignment) for f in ("release", "source"))
        if path.exists()
    ]
    return book_of(assignment, notebooks)


def check_rules_of_course(test_id: str, namespace, root=ROOT) -> None:
    """``coursecheck.check_rules`` in the instructor's source notebook (attncourse installed)."""
    __tracebackhide__ = True
    for assignment in assignments(root):
        book = _course_book(assignment, Path(root))
        if test_id in book.parts:
            check_rules(test_id, book, namespace)
            return
    raise KeyError(f"no test cell {test_id!r} in the course")
