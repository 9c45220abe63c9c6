"""The case tables of every assignment, found by convention, and the one toolkit that runs them.

An assignment's table is ``tests/grading/<assignment>/cases_<assignment>.py``. It holds ``CASES`` (:class:`Case`
rows) and ``GROUPS`` ({group: (answer cells, test cells)}), and may set (defaults in
:class:`Table`):

* ``DISPLAY_ONLY``: cells that only draw or print for the student; no check reads them, and
  they do not run in process;
* ``DEPENDS``: test cell -> the answer cells it reads beyond its own group's;
* ``QUESTION_OF``: group -> its question: every answer cell needs 4 correct and 8 wrong
  cases, counted over the whole question where it joins several groups (worksheet: Q1(a)-(d)
  are one question); one question per group by default;
* ``EVERY_TEST_IN_PROCESS``: True to judge each case on every test in process, not only on
  those reading its cells (a case then fails exactly its fails anywhere in the notebook,
  which also checks ``DEPENDS``): the tests reading its cells in the fast layer, the others
  in the slow one (:meth:`Table.in_process`, ``every``);
* ``IN_PROCESS_STUBS``: answer cell -> (stub, the tests that read it): in process the stub
  replaces the cell where the case neither replaces it nor must lose one of those tests,
  and those tests are then not judged (the autograded run judges them for every case);
* ``FIXED_INPUTS``: checks with no random input (the same requests under every secret);
* ``MESSAGES``: case id -> (test, the words that test's failure message must contain);
* ``FOR_STUDENT``: (answer source, student id) -> the source that student hands in, where
  typed numbers are each student's own (in process the id is ``EXAMPLE_STUDENT``).

A case replaces answer cells of the instructor's solution and names the test cells that
must then fail (none for a correct alternative). It runs either in this process through
the notebook's own test cells (:func:`run_in_process`, fast), or packed with cases that
cannot change its verdicts (:meth:`Table.pack`) into submissions autograded by the real
``nbgrader autograde`` (:func:`autograde_table`, slow). Cases that tamper with the kernel
(``alone``) would tamper with this process: they run only autograded, each in a
submission of its own.
"""

import contextlib
import functools
import hashlib
import importlib
import io
import pkgutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from cellrun import run_cell

from attncourse.cells import grade_id, is_answer, is_test_cell, student_sources
from attncourse.course import ROOT, notebook_path
from attncourse.judge import verdict
from attncourse.judge.channel import LocalChannel
from attncourse.judge.remote import Session, StudentNamespace
from attncourse.pointers import located_cells
from devtools.autograde import autograde_submissions
from devtools.submissions import solution_submission


def _unchanged(source, student):
    """An answer that is the same for every student."""
    return source


@dataclass(frozen=True)
class Case:
    """One submission variant: ``answers`` override cells of the solution; ``fails`` must fail."""

    group: str
    name: str
    answers: dict
    fails: tuple = field(default=())
    note: str = ""
    alone: bool = False  # tampers with the kernel: autograded in a submission of its own

    @property
    def correct(self):
        return not self.fails

    @property
    def id(self):
        return f"{self.group}:{self.name}"


def cases_table(groups, rows):
    """Build Cases from rows (group, name, source or {cell: source}, fails: True = whole group)."""
    out = []
    for group, name, answers, fails in rows:
        answer_cells, tests = groups[group]
        if isinstance(answers, str):
            answers = {answer_cells[0]: answers}
        if fails is True:
            fails = tests
        out.append(Case(group, name, answers, tuple(fails)))
    return out


def source_notebook(assignment):
    return nbformat.read(notebook_path(ROOT, "source", assignment), as_version=4)


def release_stubs(assignment):
    """grade_id -> source of every code answer cell of the release (what a student receives)."""
    nb = nbformat.read(notebook_path(ROOT, "release", assignment), as_version=4)
    return {grade_id(c): c.source for c in nb.cells if c.cell_type == "code" and is_answer(c)}


def _one_question_per_group(group):
    return group


@dataclass(frozen=True)
class Table:
    """An assignment's case table and its settings (see the module docstring)."""

    assignment: str
    cases: tuple
    groups: dict
    display_only: frozenset = frozenset()
    depends: dict = field(default_factory=dict)
    question_of: Callable[[str], str] = _one_question_per_group
    every_test_in_process: bool = False
    in_process_stubs: dict = field(default_factory=dict)
    fixed_inputs: frozenset = frozenset()
    messages: dict = field(default_factory=dict)
    for_student: Callable[[str, str], str] = _unchanged

    @functools.cached_property
    def group_of(self):
        """answer cell or test cell -> its group."""
        return {cell: g for g, (answers, tests) in self.groups.items() for cell in answers + tests}

    @property
    def tests(self):
        return [t for _, tests in self.groups.values() for t in tests]

    @property
    def answer_cells(self):
        return [a for answers, _ in self.groups.values() for a in answers]

    def dependencies(self, test):
        """The answer cells ``test`` reads: its group's and those DEPENDS names."""
        return set(self.groups[self.group_of[test]][0]) | set(self.depends.get(test, ()))

    def judged(self, case):
        """The tests a case is judged on: those reading its answer cells (the tests of their
        groups and those DEPENDS names), and its fails."""
        cells = set(case.answers)
        return {t for t in self.tests if self.dependencies(t) & cells} | set(case.fails)

    def conflict(self, a, b):
        """True when one case could hide the other's verdict in a shared submission.

        They may not replace the same cell, nor share a test cell that reads both cases'
        answers unless both expect that test to keep its points (a full score then vouches
        for both answers; a loss would show as a failure, never as a wrong answer passing).
        """
        if set(a.answers) & set(b.answers):
            return True
        for x, y in ((a, b), (b, a)):  # a wrong answer another group's test reads (DEPENDS)
            if not y.correct and any(
                set(self.depends.get(test, ())) & set(y.answers) for test in self.judged(x)
            ):
                return True
        for x, y in ((a, b), (b, a)):
            for test in self.judged(x):
                if self.dependencies(test) & set(y.answers) and (
                    test in x.fails or test in y.fails
                ):
                    return True
        return False

    @functools.cached_property
    def packs(self):
        """:meth:`pack`, once (each case's parameters ask for its run)."""
        return self.pack()

    def runs(self):
        """The packs' indices in autograde runs of at most ``RUN_PACKS`` packs, as even as can
        be: each run is an xdist group of its own, so a large table is graded side by side."""
        n = len(self.packs)
        k = -(-n // RUN_PACKS)
        return [list(range(n * i // k, n * (i + 1) // k)) for i in range(k)]

    def run_of(self, case):
        """The autograde run whose submissions hold ``case``."""
        index = next(i for i, pack in enumerate(self.packs) if case in pack)
        return next(r for r, indices in enumerate(self.runs()) if index in indices)

    def pack(self):
        """The cases grouped into submissions so that no case can change another's verdicts."""
        packs = []
        for case in self.cases:
            if not case.alone:
                for members in packs:
                    if not members[0].alone and not any(self.conflict(case, o) for o in members):
                        members.append(case)
                        break
                else:
                    packs.append([case])
            else:
                packs.append([case])
        return packs

    def in_process(self, case, tests=None, every=None):
        """(answers, tests) to judge ``case`` on in process: by default its judged tests (every
        test with EVERY_TEST_IN_PROCESS, or where ``every`` is True; ``every=False``: only the
        judged ones, whatever the table says).

        A stub of IN_PROCESS_STUBS replaces its cell where the case does not replace the cell
        and none of the tests reading it is asked for (by default: none is one it must lose);
        those tests are then left out.
        """
        answers = dict(case.answers)
        asked = set(case.fails) if tests is None else set(tests)
        if tests is None:
            every = self.every_test_in_process if every is None else every
            tests = self.tests if every else self.judged(case)
        tests = set(tests)
        for cell, (stub, readers) in self.in_process_stubs.items():
            if cell not in case.answers and not set(readers) & asked:
                answers[cell] = stub
                tests -= set(readers)
        return answers, tests

    def runs_stubbed_cell(self, case):
        """True when ``case`` in process runs a cell IN_PROCESS_STUBS would stub (its own
        answer there, or a test that reads it among those it must lose): the costly runs."""
        answers, _ = self.in_process(case)
        return any(answers.get(cell) != stub for cell, (stub, _) in self.in_process_stubs.items())

    def judge(self, case, tests=None, secret=None, every=None):
        """{test: None or the failure message} of ``case`` judged in this process."""
        answers, tests = self.in_process(case, tests, every)
        return run_in_process(self.assignment, answers, tests, secret)

    def judge_the_rest(self, case):
        """(verdicts, tests): ``case`` judged on the tests EVERY_TEST_IN_PROCESS adds to its
        judged ones (none of which it may fail), with the same answers in its cells."""
        answers, every = self.in_process(case, every=True)
        rest = every - self.in_process(case, every=False)[1]
        return run_in_process(self.assignment, answers, rest), rest

    def judge_secrets(self, case, secrets, tests=None):
        """{test: [None or the failure message, one per secret]}: the notebook runs once."""
        answers, tests = self.in_process(case, tests)
        return run_under_secrets(self.assignment, answers, tests, secrets)


GRADING = Path(__file__).resolve().parents[1] / "grading"


def table_module(assignment):
    """The module ``cases_<assignment>`` of ``tests/grading/<assignment>/``."""
    folder = str(GRADING / assignment)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(f"cases_{assignment}")


@functools.cache
def load(assignment):
    """The case table of ``assignment``: module ``cases_<assignment>`` with its settings."""
    module = table_module(assignment)
    settings = {
        "display_only": frozenset(getattr(module, "DISPLAY_ONLY", ())),
        "depends": getattr(module, "DEPENDS", {}),
        "every_test_in_process": getattr(module, "EVERY_TEST_IN_PROCESS", False),
        "in_process_stubs": getattr(module, "IN_PROCESS_STUBS", {}),
        "fixed_inputs": frozenset(getattr(module, "FIXED_INPUTS", ())),
        "messages": getattr(module, "MESSAGES", {}),
    }
    if hasattr(module, "FOR_STUDENT"):
        settings["for_student"] = module.FOR_STUDENT
    if hasattr(module, "QUESTION_OF"):
        settings["question_of"] = module.QUESTION_OF
    return Table(assignment, tuple(module.CASES), module.GROUPS, **settings)


def _code_cells(nb, table, tests=()):
    """(grade_id, cell) of the code cells that run in process, with the test cells in ``tests``."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        gid = grade_id(cell)
        if (gid in tests) if is_test_cell(cell) else gid not in table.display_only:
            yield gid, cell


def run_in_process(assignment, answers, tests, secret=None, inserted=""):
    """Run the solution with ``answers`` in this process; return {test: None or the failure}.

    The code cells run in order in one namespace (errors in non-test cells are ignored, as
    when autograding), except the table's display-only cells; at each test cell named in
    ``tests`` the judge runs its check, reaching the namespace through the same
    request/reply encoding a kernel uses (:class:`~attncourse.judge.channel.LocalChannel`).
    The slow tests grade the same cases through nbgrader and sandboxed kernels.
    """
    secret = secret or verdict.new_secret()
    verdicts = run_under_secrets(assignment, answers, tests, [secret], inserted)
    return {test: results[0] for test, results in verdicts.items()}


def run_under_secrets(assignment, answers, tests, secrets, inserted=""):
    """:func:`run_in_process` with every check of ``tests`` run once per secret, at its place
    in the notebook: {test: [None or the failure, one per secret]}."""
    nb = solution_submission(ROOT, assignment, answers)
    if inserted:  # a cell of the student's own, right after the course's first cell
        nb.cells.insert(1, nbformat.v4.new_code_cell(inserted))
    registry = verdict.checks_of(assignment)
    ns = {"__name__": "__main__"}
    student = StudentNamespace(Session(LocalChannel(ns)), located_cells(nb))
    place = {id(cell): index for index, cell in enumerate(nb.cells)}
    results = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for gid, cell in _code_cells(nb, load(assignment), tests):
            if gid in tests:
                results[gid] = [
                    verdict.run_check(registry[gid], student, s, test_index=place[id(cell)])
                    for s in secrets
                ]
            else:
                with contextlib.suppress(Exception):
                    run_cell(cell.source, ns)
    return results


def solution_namespace(assignment, answers=None):
    """(globals, the student's sources) of the solution with ``answers``, its cells run here.

    Every code cell but the test cells and the display-only cells runs in order; errors are
    ignored, as when autograding.
    """
    nb = solution_submission(ROOT, assignment, answers or {})
    ns = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for _, cell in _code_cells(nb, load(assignment)):
            with contextlib.suppress(Exception):
                run_cell(cell.source, ns)
    return ns, student_sources(nb)


def kernel_requests(check, ns, sources, secret):
    """The requests ``check`` sends the kernel (namespace ``ns``) under ``secret``; it must pass."""
    channel = LocalChannel(ns)
    sent = []
    serve = channel.send

    def send(text, arrays=()):
        sent.append(text + "".join(hashlib.sha256(a.tobytes()).hexdigest() for a in arrays))
        return serve(text, arrays)

    channel.send = send
    student = StudentNamespace(Session(channel), sources)
    with contextlib.redirect_stdout(io.StringIO()):
        assert verdict.run_check(check, student, secret) is None
    return sent


def calls(requests):
    """True when the requests call something in the kernel (not only look-ups)."""
    return any('"op": "call"' in text for text in requests)


def assert_verdicts(case, verdicts, tests):
    """``verdicts`` covers ``tests``: the case's fails failed, every other test passed."""
    assert set(verdicts) == set(tests), f"test cells did not run: {set(tests) - set(verdicts)}"
    for test, error in sorted(verdicts.items()):
        if test in case.fails:
            assert error is not None, f"{case.id}: {test} passed a wrong answer"
        else:
            assert error is None, f"{case.id}: {test} rejected a correct answer:\n{error}"


def assert_no_point_lost(table, case, secrets, tests):
    """``case`` (a correct alternative) keeps every point of ``tests`` under every secret."""
    verdicts = table.judge_secrets(case, secrets, tests)
    assert set(verdicts) == set(tests)
    lost = {
        test: (sum(message is not None for message in messages), next(filter(None, messages)))
        for test, messages in verdicts.items()
        if any(messages)
    }
    assert not lost, f"{case.id} lost points under some of {len(secrets)} secrets: {lost}"


def assert_table_size(table, min_right=4, min_wrong=8):
    """Every answer cell has ``min_right`` correct and ``min_wrong`` wrong cases in its question.

    A question is one group's answer cells, counted one by one, or the answer cells of all
    groups that QUESTION_OF maps to it, counted together.
    """
    small = {}
    for cell in table.answer_cells:
        question = table.question_of(table.group_of[cell])
        merged = {g for g in table.groups if table.question_of(g) == question}
        cells = {cell} if len(merged) == 1 else {a for g in merged for a in table.groups[g][0]}
        cases = [c for c in table.cases if cells & set(c.answers)]
        right = sum(c.correct for c in cases)
        if right < min_right or len(cases) - right < min_wrong:
            small[cell] = (right, len(cases) - right)
    assert not small, (
        f"answer cells with fewer than {min_right} right / {min_wrong} wrong cases: {small}"
    )


# A cell or a judge's call may run 45 s here, not the course's 120: a tampering case that hangs
# the kernel (variants' builtins.isinstance rebound) then costs 45 s instead of 120 (the
# variants table's run: that student 179 s -> 79 s under 30 s). The longest honest cell, Part
# 13's experiment, took at most 12 s on the 2 shared cores under a load of 7, 22 s under 13; a
# cell cut short scores 0, so a shorter limit can fail a right answer, never pass a wrong one.
# And each next student's kernel starts while this one's notebook runs, as a grading worker's
# do (attncourse grade): the worksheet's table 97 s -> 78 s on the loaded machine, same CPU.
TABLE_ARGS = ("--ResilientExecute.timeout=45", "--ResilientExecute.prewarm=True")
# Packs per autograde run. A run pays its own start (a scratch course, nbgrader, the fork
# server: about 10 s of CPU); past 30 packs a table is split in runs graded side by side
# (attention_variants: 54 packs, 443 s in one run under make test, the suite's longest).
RUN_PACKS = 30


def autograde_table(course_dir, table, run=0):
    """Run ``run`` of :meth:`Table.runs` autograded by nbgrader: its packed cases, and in run 0
    the solution and the release too (``TABLE_ARGS``: a cell's limit, kernels started ahead).

    Returns (scores, {student: the cases in its submission}).
    """
    submissions = {}
    if run == 0:
        release = nbformat.read(notebook_path(ROOT, "release", table.assignment), as_version=4)
        submissions = {"solution": solution_submission(ROOT, table.assignment), "release": release}
    members = {}
    for index in table.runs()[run]:
        pack = table.packs[index]
        student = f"cases{index:03d}"
        answers = {
            cell: table.for_student(source, student)
            for case in pack
            for cell, source in case.answers.items()
        }
        submissions[student] = solution_submission(ROOT, table.assignment, answers)
        members[student] = pack
    scores = autograde_submissions(course_dir, table.assignment, submissions, TABLE_ARGS)
    return scores, members


def rebind(package, name, value):
    """Bind ``name`` to ``value`` in every module of a grading ``package`` that defines or
    imports it (the margins scripts record what the checks compare); returns the original."""
    modules = [package] + [
        importlib.import_module(f"{package.__name__}.{info.name}")
        for info in pkgutil.iter_modules(package.__path__)
    ]
    holders = [m for m in modules if name in vars(m)]
    original = getattr(holders[0], name)
    for module in holders:
        setattr(module, name, value)
    return original
