# Generated from the course's judge by the release build: do not edit.
"""The student's side of the source rules: the judge's proof, run on the kernel's input history.

A rule test cell's visible part calls ``check_rules(grade_id)`` (shipped with the release as
``coursecheck``, see :mod:`coursecheck.prover`). It reads ``In`` (IPython's input history: every
cell source run so far, several versions of a cell included) from the caller's namespace,
builds the program the judge would read from it (:func:`student_program`) and proves the
cell's :class:`~coursecheck.rulebook.Rule` list and the import rule with the judge's own
code. The grader proves again on the notebook as handed in; nothing here decides a grade.
"""

import ast
import functools
import hashlib
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from .cells import CodeCell
from . import rules
from .failure import GradingError
from .program import Finding, Program, python_source
from .rulebook import prove

AGAIN = (
    "this check reads the cells as you last ran them; the grader proves the rule again on the "
    "notebook as you hand it in: Restart & Run All, then check again"
)


@dataclass(frozen=True)
class Book:
    """What one notebook's visible rule checks need, and nothing of its grading."""

    assignment: str
    course_cells: frozenset  # digests of the course's own cells (tests included), as run
    test_cells: frozenset  # digests of its test cells (never part of the student's code)
    answer_cells: tuple  # the names each answer cell's stub defines, in notebook order
    rules: dict  # grade_id -> the Rules its check proves
    parts: dict  # grade_id -> its part ("Part 5", "Lab 1")
    answers: dict  # grade_id -> the index in answer_cells of the answer cell above it


class RuleBroken(AssertionError):
    """A rule of this part is broken by the code as run (the message names it and where)."""


@functools.lru_cache(maxsize=1024)
def digest(source: str) -> str:
    """A cell's source as the kernel's history holds it (magics turned into calls), hashed."""
    tree = python_source(source)
    text = ast.unparse(tree) if tree is not None else source.strip()
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=1024)
def defined_names(source: str) -> frozenset:
    """Names a cell binds at its top level: its functions and classes, and the plain names it
    assigns (an answer such as ``SLOTS = {...}`` is known by them)."""
    tree = python_source(source)
    names = set()
    for s in tree.body if tree is not None else []:
        if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(s.name)
        elif isinstance(s, ast.Assign | ast.AnnAssign):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            for target in targets:
                elts = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
                names |= {t.id for t in elts if isinstance(t, ast.Name)}
    return frozenset(names)


def _identity(source, book):
    """Which cell an entry of the history is a version of: an answer cell (by the names its
    stub defines), else the set of names it defines, else its own text."""
    names = defined_names(source)
    for index, stub in enumerate(book.answer_cells):
        if names & stub:
            return ("answer", index)
    return ("defines", names) if names else ("source", source)


class HistoryProgram(Program):
    """A :class:`Program` whose cells are entries of ``In``, numbered as the student sees them."""

    def finding(self, kind: str, what: str, node: ast.AST, path: str = "") -> Finding:
        cell, line = self.where(node)
        where = f"the cell run as In [{cell + 1}]"
        return Finding(kind, what, cell, line, path, "", self.owner_of.get(node, ""), where)


def student_program(history: Sequence[object], book: Book, grade_id: str) -> HistoryProgram:
    """The program the judge would read, from the history: the course's cells as run, and of
    the student's cells the last version of each (a later run of a cell replaces the earlier).

    The answer cell above ``grade_id`` is marked as the answer and a test cell placed after
    it, so the import rule finds it as the judge does.
    """
    entries = [(i, s) for i, s in enumerate(history) if i and isinstance(s, str) and s.strip()]
    course = {i for i, s in entries if digest(s) in book.course_cells | book.test_cells}
    latest: dict[tuple, tuple[int, str]] = {}
    for i, source in entries:
        if i not in course:
            latest[_identity(source, book)] = (i, source)
    answer = latest.get(("answer", book.answers.get(grade_id)))
    cells = [
        CodeCell(i - 1, s, student=False, test=digest(s) in book.test_cells)
        for i, s in entries
        if i in course
    ]
    cells += [CodeCell(i - 1, s, answer=(i, s) == answer) for i, s in latest.values()]
    cells.sort(key=lambda c: c.index)
    label = book.parts.get(grade_id, grade_id)
    last = len(history) + 1
    cells.append(CodeCell(last, f'"""{label}: the rules"""', grade_id, False, False, True))
    return HistoryProgram(cells)


@dataclass(frozen=True)
class _Notebook:
    """What the rules read a notebook's program from (as from the judge's StudentNamespace)."""

    program: Program


def input_history(namespace: dict | None) -> list | None:
    """``In`` of the caller's namespace, else of the running IPython shell, else None."""
    history = (namespace or {}).get("In")
    if history is None and "IPython" in sys.modules:
        shell = sys.modules["IPython"].get_ipython()
        history = shell.user_ns.get("In") if shell is not None else None
    return history


def check_rules(grade_id: str, book: Book, namespace: dict | None = None) -> None:
    """Prove the rules of test cell ``grade_id`` on the code run so far; raise
    :class:`RuleBroken` naming the rule, the construct and where it is."""
    __tracebackhide__ = True
    label = book.parts.get(grade_id, grade_id)
    history = input_history(namespace)
    if history is None:
        print(f"{label}: no input history here (not a Jupyter kernel): the rules are not checked")
        return
    program = student_program(history, book, grade_id)
    notebook = _Notebook(program)
    try:
        rules.assert_imports_in_first_cell(notebook, program.cells[-1].index)
        prove(book.rules.get(grade_id, ()), notebook)
    except GradingError as error:
        message = re.sub(r"\bof cell (\d+)", r"of the cell run as In [\1]", str(error))
        message = re.sub(r"\(cell (\d+)\)", r"(the cell run as In [\1])", message)
        for judged in {rule.part for rule in book.rules.get(grade_id, ())}:
            message = message.replace(f"{judged}: ", f"{label}: ", 1)
        if not message.startswith(label):
            message = f"{label}: {message}"
        raise RuleBroken(f"{message}\n  note: {AGAIN}") from None
    print(f"{label}: its rules hold on the cells as you ran them (the grader proves them again)")
