"""What a student sees before handing in: the release's visible checks run on a submission.

:func:`visible_verdicts` fills the release notebook (whose test cells hold only the visible
checks) with the instructor's answers, then with ``answers``, and runs it as a student runs it:
every code cell in order in one fresh namespace of this process (``exec`` through
:func:`cellrun.run_cell`), the namespace holding IPython's ``In`` (``In[0] == ""``, then each
cell's source as it runs, with the newline IPython's input transformer appends), matplotlib on
the Agg backend. A test cell passes (None) or fails with its exception's type and text; an
error in any other cell is the student's to see and the run goes on, as in Jupyter. As in the
case tables' in-process runs (:mod:`casetable`), the table's ``DISPLAY_ONLY`` cells (they only
draw; no check reads them) do not run, and answers pass through ``FOR_STUDENT`` with the id of
the example instance, the numbers a notebook draws when no student id is set.

The shortcut, and why it is faithful. The solution runs once per assignment in one namespace
dict, the random generators (Python's, numpy's, torch's) seeded first, and before each answer
cell the namespace's values (deep copies), the generators' states and the attributes of the
classes and functions defined so far are kept. A submission replaces answer cells; every cell
above its first replaced one is the solution's, so runs the same code on the same state as in
a full run. The run therefore starts there: the same dict is refilled with fresh copies of the
kept values, the generators and the definitions restored (a later cell of an earlier run may
have patched a class), and every cell from that answer cell to the end runs again, the
solution's cells after it included, so a later cell that reads an earlier answer sees the
submission's. Functions defined above keep that same dict as their globals, so they see the
submission's names as they would in a full run. Objects deep copies cannot copy (modules,
generators) are shared, and the torch defaults a cell can switch (dtype, grad mode) are reset.
``shortcut=False`` runs every cell from a fresh namespace under the same seed;
``tests/grading/test_visible_checks.py`` checks both give the same verdicts.

For a case table's rows: :func:`case_verdicts` (a case's visible verdicts, its table's
in-process stubs applied), :func:`missed_parts` (where its mistake is made and no visible check
fails), :func:`rule_case` (every hidden failure a rule's). A table may set ``VISIBLE_EXCEPTIONS``
(case id -> why no visible check of its part can catch it) and ``VISIBLE_MESSAGES`` (case id ->
(visible test cell, words its failure message must contain)).
"""

import contextlib
import copy
import functools
import io
import random
import re
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from casetable import load, table_module  # noqa: E402
from cellrun import run_cell  # noqa: E402

from attncourse.cells import grade_id, is_answer, is_test_cell  # noqa: E402
from attncourse.constants import EXAMPLE_STUDENT  # noqa: E402
from attncourse.course import ROOT, notebook_path  # noqa: E402
from attncourse.parts import cell_parts  # noqa: E402
from devtools.submissions import solution_submission  # noqa: E402

SEED = 0
ASSIGNMENTS = (
    "attention_worksheet",
    "attention_theory",
    "attention_variants",
    "mla_inference",
    "attention_at_scale",
)
RULE_CELL = re.compile(r"(_rules|_no_loops)(_test)?$")
_FIXED = {"__dict__", "__weakref__"}


@dataclass(frozen=True)
class _Cell:
    grade_id: str | None
    source: str
    test: bool
    answer: bool


@dataclass
class _Snapshot:
    values: dict
    rng: tuple
    definitions: dict  # class or function -> its attributes


@dataclass
class _SolutionRun:
    cells: list
    namespace: dict  # the one dict every run of this assignment executes in
    snapshots: dict  # index of an answer cell -> the state just before it
    verdicts: dict  # the solution's own verdicts


def _rng_state():
    return random.getstate(), np.random.get_state(), torch.get_rng_state()


def _set_rng(state):
    random.setstate(state[0])
    np.random.set_state(state[1])
    torch.set_rng_state(state[2])


def _seed():
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)


def _copy(values):
    """Deep copies of ``values`` (one memo: aliases stay aliases); what cannot be copied, shared."""
    memo, out = {}, {}
    for name, value in values.items():
        try:
            out[name] = copy.deepcopy(value, memo)
        except Exception:
            out[name] = value
    return out


def _definitions(namespace):
    """The notebook's classes and functions with their attributes as they are now."""
    found = {}
    for value in namespace.values():
        if isinstance(value, type) and value.__module__ == "__main__":
            found[value] = {k: v for k, v in vars(value).items() if k not in _FIXED}
        elif callable(value) and getattr(value, "__globals__", None) is namespace:
            found[value] = dict(vars(value), __code__=value.__code__)
            found[value]["__defaults__"] = value.__defaults__
    return found


def _restore_definitions(definitions):
    for obj, attributes in definitions.items():
        extra = set(vars(obj)) - set(attributes) - _FIXED - {"__code__", "__defaults__"}
        for name in extra:
            delattr(obj, name)
        for name, value in attributes.items():
            if getattr(obj, name, None) is not value:
                setattr(obj, name, value)


def _failure(error):
    return f"{type(error).__name__}: {error}"


def _run(cells, namespace, start, answers, stop=None):
    """Run ``cells[start:stop]`` in ``namespace``; {test cell: None or its failure}."""
    verdicts = {}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for cell in cells[start:stop]:
            source = answers.get(cell.grade_id, cell.source)
            namespace["In"].append(source if source.endswith("\n") else source + "\n")
            try:
                run_cell(source, namespace)
            except (Exception, SystemExit) as error:
                if cell.test:
                    verdicts[cell.grade_id] = _failure(error)
            else:
                if cell.test:
                    verdicts[cell.grade_id] = None
    plt.close("all")
    return verdicts


def _fresh(namespace):
    namespace.clear()
    history = [""]
    namespace.update({"__name__": "__main__", "In": history, "_ih": history})
    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)
    _seed()


def _cells(assignment):
    nb = solution_submission(ROOT, assignment)
    display_only = load(assignment).display_only
    return [
        _Cell(grade_id(c), c.source, is_test_cell(c), is_answer(c))
        for c in nb.cells
        if c.cell_type == "code" and grade_id(c) not in display_only
    ]


@functools.cache
def _solution_run(assignment):
    cells = _cells(assignment)
    namespace, snapshots, verdicts = {}, {}, {}
    _fresh(namespace)
    for index, cell in enumerate(cells):
        if cell.answer:
            snapshots[index] = _Snapshot(_copy(namespace), _rng_state(), _definitions(namespace))
        verdicts.update(_run(cells[index : index + 1], namespace, 0, {}))
    return _SolutionRun(cells, namespace, snapshots, verdicts)


def visible_verdicts(
    assignment: str,
    answers: dict[str, str],
    shortcut: bool = True,
    until: frozenset[str] | None = None,
) -> dict[str, str | None]:
    """{visible test cell: None if it passed, else its failure} of the solution with ``answers``;
    with ``until`` (test cells), the run stops after the last of them: the cells below cannot
    change a verdict above them, so only theirs are left out."""
    table = load(assignment)
    answers = {cell: table.for_student(src, EXAMPLE_STUDENT) for cell, src in answers.items()}
    run = _solution_run(assignment)
    starts = [i for i, c in enumerate(run.cells) if c.answer and c.grade_id in answers]
    unknown = set(answers) - {c.grade_id for c in run.cells if c.answer}
    if unknown:
        raise KeyError(f"no answer cell with grade_id {sorted(unknown)} runs in process")
    if not starts:
        return dict(run.verdicts)
    namespace = run.namespace
    if shortcut:
        start = starts[0]
        kept = run.snapshots[start]
        namespace.clear()
        namespace.update(_copy(kept.values))
        _restore_definitions(kept.definitions)
        torch.set_default_dtype(torch.float32)
        torch.set_grad_enabled(True)
        _set_rng(kept.rng)
    else:
        start = 0
        namespace = {}
        _fresh(namespace)
    stop = None
    if until is not None:
        stop = 1 + max((i for i, c in enumerate(run.cells) if c.grade_id in until), default=-1)
    verdicts = {c.grade_id: run.verdicts[c.grade_id] for c in run.cells[:start] if c.test}
    verdicts.update(_run(run.cells, namespace, start, answers, stop))
    return verdicts


def visible_exceptions(assignment: str) -> dict[str, str]:
    """The table's ``VISIBLE_EXCEPTIONS``: case id -> why no visible check of its part catches it."""
    return getattr(table_module(assignment), "VISIBLE_EXCEPTIONS", {})


def visible_messages(assignment: str) -> dict[str, tuple[str, str]]:
    """The table's ``VISIBLE_MESSAGES``: case id -> (visible test cell, words its message holds)."""
    return getattr(table_module(assignment), "VISIBLE_MESSAGES", {})


@functools.cache
def parts(assignment: str) -> dict[str, str]:
    """grade_id -> part label of every graded cell of the release."""
    nb = nbformat.read(notebook_path(ROOT, "release", assignment), as_version=4)
    return {gid: p.part for gid, p in cell_parts(nb).items()}


def deciding_tests(table, case) -> frozenset[str] | None:
    """The visible test cells :func:`missed_parts` reads for a wrong ``case`` (those of the
    parts where its mistake is made, or of the parts it loses); None (every cell) for a
    correct case, which must fail none."""
    if case.correct:
        return None
    label = parts(table.assignment)
    losing = {label[test] for test in case.fails}
    own = {label[cell] for cell in case.answers} & losing
    return frozenset(test for test in table.tests if label[test] in (own or losing))


def case_verdicts(table, case, until=None) -> dict[str, str | None]:
    """{visible test cell: None or its failure} of ``case`` (up to the last cell of ``until``,
    when given); a test cell the table's in-process stubs leave out (it reads a stubbed cell)
    is not reported."""
    answers, _ = table.in_process(case, case.fails)
    stubbed = {
        test
        for cell, (stub, readers) in table.in_process_stubs.items()
        if answers.get(cell) == stub and cell not in case.answers
        for test in readers
    }
    verdicts = visible_verdicts(table.assignment, answers, until=until)
    return {test: error for test, error in verdicts.items() if test not in stubbed}


def missed_parts(table, case, verdicts) -> list[str]:
    """The parts where ``case``'s mistake is made and costs hidden points, none of whose visible
    cells fails (the parts of its failing hidden tests when none is an answer cell's part)."""
    label = parts(table.assignment)
    caught = {label[test] for test, error in verdicts.items() if error is not None}
    losing = {label[test] for test in case.fails}
    own = {label[cell] for cell in case.answers} & losing
    return sorted((own or losing) - caught)


# The judge's rule messages (attncourse.judge.rules): a failure of one of these is a rule's.
RULE_REFUSAL = re.compile(
    r"build the attention by hand|the judge cannot verify the|the task forbids loops|"
    r"must use numpy only|imports are allowed only|must be computed in one statement"
)


@functools.cache
def rule_case(assignment: str, case_id: str) -> bool:
    """True when every hidden failure of the case is a rule's: a rule cell, or a value cell
    the judge refuses for fused attention (judged here in process)."""
    table = load(assignment)
    case = next(c for c in table.cases if c.id == case_id)
    others = [test for test in case.fails if not RULE_CELL.search(test)]
    if not others:
        return True
    verdicts = table.judge(case, tests=others)
    return all(message and RULE_REFUSAL.search(message) for message in verdicts.values())
