"""The rules a student can check: the prover shipped in ``release/<a>/coursecheck`` agrees
with the judge.

The student's side reads the kernel's input history (``In``: the cells as run, a Restart &
Run All of the notebook here) and runs the shipped copy; the judge proves the same rules on
the notebook's cells with their roles (:mod:`attncourse.judge.rulebook`), in this process.
On every case of the case tables in a group with a rule test cell, and on every attack of
``attacks.py`` (the kernel attacks and the rule attacks, with their controls), the verdict
of every rule test cell must be the same on both sides. No kernel starts.
"""

import functools
import importlib.util
import re
import shutil
import sys
import time

import nbformat
import pytest
from attacks import ATTACKS, CONTROLS, RULE_ATTACKS
from casetable import load
from IPython.core.inputtransformer2 import TransformerManager

from attncourse.cells import code_cells
from attncourse.course import ROOT, assignments
from attncourse.judge import rules, verdict
from attncourse.judge.checks import GradingError
from attncourse.judge.program import Program
from attncourse.judge.rulebook import prove
from attncourse.prover import PACKAGE, has_rules, prover_files
from devtools.submissions import solution_submission

RULED = [a for a in assignments() if has_rules(a)]
# IPython's transform of a cell's text (the kernel's ``In``), once per text: the cases share
# most of their cells with the solution.
_transform = functools.cache(TransformerManager().transform_cell)


@functools.cache
def shipped(assignment):
    """The committed ``release/<assignment>/coursecheck``, imported under a name of its own."""
    name = f"{PACKAGE}_{assignment}"
    init = ROOT / "release" / assignment / PACKAGE / "__init__.py"
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[str(init.parent)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.dont_write_bytecode, before = True, sys.dont_write_bytecode  # release/ stays as built
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = before
    return module


def notebook(assignment, answers, code=""):
    nb = solution_submission(ROOT, assignment, answers)
    if code:
        nb.cells.insert(1, nbformat.v4.new_code_cell(code))  # a cell of the student's own
    return nb


def history(nb):
    """``In`` after Restart & Run All: every code cell's source as the kernel records it."""
    return ["", *(_transform(c.source) for c in nb.cells if c.cell_type == "code")]


class _Notebook:
    def __init__(self, program):
        self.program = program


def judge_verdicts(assignment, nb, tests):
    """{test: None or the failure} of the judge's own rule proofs on ``nb`` (with roles)."""
    checks = verdict.checks_of(assignment)
    cells = code_cells(nb)
    ns = _Notebook(Program(cells))
    index = {c.grade_id: c.index for c in cells if c.test}
    out = {}
    for test in tests:
        try:
            rules.assert_imports_in_first_cell(ns, index[test])
            prove(getattr(checks[test], "rules", ()), ns)
            out[test] = None
        except GradingError as error:
            out[test] = str(error)
    return out


def student_verdicts(assignment, nb, tests):
    """{test: None or the failure} of the shipped prover on the history of ``nb``."""
    package = shipped(assignment)
    In = history(nb)
    out = {}
    for test in tests:
        try:
            package.history.check_rules(test, package.BOOK, {"In": In})
            out[test] = None
        except AssertionError as error:
            out[test] = str(error)
    return out


def rule_cases(assignment):
    """(case, its group's test cells) for every case: each test cell judges the import rule,
    a rule test cell its own rules too."""
    table = load(assignment)
    ruled = set(shipped(assignment).BOOK.parts)
    out = []
    for case in table.cases:
        tests = sorted(ruled & set(table.groups[case.group][1]))
        if tests:
            out.append((case, tests))
    return out


def attack_rows():
    """(name, answers, code) of every attack and control of attacks.py (attention_variants)."""
    rows = []
    for attack in RULE_ATTACKS:
        rows.append((f"{attack.name}", attack.answers, attack.code))
        rows.append((f"{attack.name}/control", attack.control, attack.code))
    for attack in ATTACKS:
        rows.append((f"kernel:{attack.name}", {**CONTROLS[attack.control], **attack.answers}, ""))
    return rows


def _disagreements(assignment, nb, tests):
    judge = judge_verdicts(assignment, nb, tests)
    student = student_verdicts(assignment, nb, tests)
    return {
        t: (judge[t], student[t]) for t in tests if (judge[t] is None) != (student[t] is None)
    }, judge


@pytest.mark.slow  # every test cell of every case (minutes of CPU): make test, not make test-fast
@pytest.mark.parametrize("assignment", RULED)
def test_student_side_agrees_with_the_judge_on_every_rule_case(assignment):
    compared = agreed = failed = 0
    wrong = {}
    for case, tests in rule_cases(assignment):
        nb = notebook(assignment, case.answers)
        off, judge = _disagreements(assignment, nb, tests)
        compared += len(tests)
        agreed += len(tests) - len(off)
        failed += sum(judge[t] is not None for t in tests)
        if off:
            wrong[case.id] = off
        if case.correct:
            assert all(judge[t] is None for t in tests), (case.id, judge)
    print(f"{assignment}: {compared} rule verdicts compared, {agreed} agree ({failed} fail)")
    assert not wrong, wrong
    assert failed, "no case breaks a rule: the agreement proves nothing"


@pytest.mark.slow
def test_student_side_agrees_with_the_judge_on_every_attack():
    assignment = "attention_variants"
    tests = sorted(shipped(assignment).BOOK.rules)
    wrong, compared, failed = {}, 0, 0
    for name, answers, code in attack_rows():
        off, judge = _disagreements(assignment, notebook(assignment, answers, code), tests)
        compared += len(tests)
        failed += sum(v is not None for v in judge.values())
        if off:
            wrong[name] = off
    agreed = compared - sum(map(len, wrong.values()))
    print(f"attacks: {compared} rule verdicts compared, {agreed} agree ({failed} fail)")
    assert not wrong, wrong
    assert failed


LOOP = """class MyMHA(nn.Module):
    def __init__(self, D_1, D_2, D_qk, D_v, H):
        super().__init__()
        self.H = H

    def forward(self, x, y):
        heads = []
        for h in range(self.H):
            heads.append(x)
        return torch.cat(heads, -1)
"""


def _solution_history_with(*versions):
    nb = notebook("attention_variants", {})
    In = history(nb)
    return In + list(versions)


def test_a_loop_is_named_with_its_function_line_and_cell():
    package = shipped("attention_variants")
    In = _solution_history_with(LOOP)
    with pytest.raises(AssertionError) as failure:
        package.history.check_rules("p5_mha_no_loops_test", package.BOOK, {"In": In})
    message = str(failure.value)
    assert message.startswith("Part 5: the task forbids loops"), message
    assert f"a for loop in `MyMHA.forward`, line 8 of the cell run as In [{len(In) - 1}]" in (
        message
    )
    assert "Restart & Run All" in message


def test_the_last_run_of_a_cell_is_what_counts():
    package = shipped("attention_variants")
    solution = _solution_history_with()
    fixed = [
        *solution,
        LOOP,
        solution[[i for i, s in enumerate(solution) if "class MyMHA" in s][0]],
    ]
    package.history.check_rules("p5_mha_no_loops_test", package.BOOK, {"In": fixed})
    broken = [*solution, LOOP]
    with pytest.raises(AssertionError):
        package.history.check_rules("p5_mha_no_loops_test", package.BOOK, {"In": broken})


def test_the_source_notebook_line_works_with_attncourse_installed():
    """``from coursecheck import check_rules`` in source/: the installed one, through the judge."""
    import coursecheck

    In = _solution_history_with(LOOP)
    namespace = {"In": In, "check_rules": coursecheck.check_rules}
    with pytest.raises(AssertionError, match="forbids loops"):
        exec('check_rules("p5_mha_no_loops_test")', namespace)
    namespace["In"] = _solution_history_with()
    exec('check_rules("p5_mha_no_loops_test")', namespace)


@pytest.mark.parametrize("assignment", RULED)
def test_the_committed_prover_is_a_fresh_build(assignment):
    folder = ROOT / "release" / assignment / PACKAGE
    committed = {p.name: p.read_text() for p in folder.glob("*.py")}
    assert committed == prover_files(assignment), "run `make release` and commit release/"


# A grading module, a reference, a tolerance, or what draws the run's secret inputs.
SECRET_WORDS = re.compile(
    r"grading\.\w|\breferences\b|\btolerances\b|secret_scope|seed_for|rng_for|_TOL\b|token_hex"
)


@pytest.mark.parametrize("assignment", RULED)
def test_the_shipped_prover_holds_no_grading_code_reference_tolerance_or_secret(assignment):
    files = prover_files(assignment)
    assert set(files) == {
        "__init__.py",
        "agent.py",
        "book.py",
        "callgraph.py",
        "calls.py",
        "cells.py",
        "dangerous.py",
        "failure.py",
        "footprint.py",
        "history.py",
        "ipythoncode.py",
        "libraries.py",
        "pointing.py",
        "program.py",
        "reachstate.py",
        "recordable.py",
        "resolve.py",
        "rules.py",
        "rulebook.py",
        "scopes.py",
        "tampering.py",
        "values.py",
        "walk.py",
        "tilecheck.py",
        "tiling.py",
    }
    for name, text in files.items():
        assert "attncourse" not in text, name
        assert not SECRET_WORDS.search(text), (name, SECRET_WORDS.search(text))
        imported = re.findall(r"^\s*(?:from|import) (\S+)", text, re.MULTILINE)
        assert all(m.startswith(".") or m.split(".")[0] in ALLOWED_IMPORTS for m in imported), (
            name,
            imported,
        )


ALLOWED_IMPORTS = {
    "ast",
    "inspect",
    "math",
    "random",
    "builtins",
    "collections",  # collections.abc and typing: the type hints of the judge's modules
    "typing",
    "dataclasses",
    "functools",
    "hashlib",
    "importlib",
    "re",
    "sys",
    "threading",  # the lock of program.py's memo of parsed cells
    "__future__",
    "IPython",
    "numpy",
    "torch",
}


def test_the_visible_check_is_cheap():
    """Per call on the solution's history, after a first call (torch's method names read)."""
    package = shipped("attention_variants")
    In = _solution_history_with()
    package.history.check_rules("p5_mha_no_loops_test", package.BOOK, {"In": In})
    start = time.perf_counter()
    for test in package.BOOK.rules:
        package.history.check_rules(test, package.BOOK, {"In": In})
    per_call = (time.perf_counter() - start) / len(package.BOOK.rules)
    print(f"visible rule check: {per_call * 1000:.0f} ms per call")
    assert per_call < 1.0


BLOCK_INSTRUCTOR = """
import json, sys
sys.modules["attncourse"] = None  # not installed: an LMS download on a student's laptop
from coursecheck import check_rules
In = json.load(open(sys.argv[1]))
for test in sys.argv[2:]:
    try:
        check_rules(test)
        print(test, "passed")
    except AssertionError as error:
        print(test, "failed:", str(error).splitlines()[0])
"""


def test_the_release_folder_alone_checks_the_rules(tmp_path):
    """Only the release folder's files: no attncourse, the folder's own coursecheck."""
    import json
    import subprocess

    folder = ROOT / "release" / "attention_variants"
    In = _solution_history_with(LOOP)
    (tmp_path / "In.json").write_text(json.dumps(In))
    tests = ["p5_mha_no_loops_test", "p7_gqa_no_loops_test"]
    out = subprocess.run(
        [sys.executable, "-B", "-c", BLOCK_INSTRUCTOR, str(tmp_path / "In.json"), *tests],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "p5_mha_no_loops_test failed: Part 5: the task forbids loops" in out, out
    assert "p7_gqa_no_loops_test passed" in out, out


@pytest.mark.kernel
def test_in_a_kernel_the_rule_cell_names_the_rule_and_the_cell_run(tmp_path):
    """A real kernel in a copy of the release folder, the notebook run top to bottom (as a
    student's Run All): only the broken rule's cell fails, with the In [n] the student sees,
    and the kernel never imports attncourse."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    folder = tmp_path / "mla_inference"
    shutil.copytree(ROOT / "release" / "mla_inference", folder)
    case = next(c for c in load("mla_inference").cases if c.id == "decode:decode_rebuilds_the_keys")
    nb = notebook("mla_inference", case.answers)
    nb.cells.append(nbformat.v4.new_code_cell('import sys\nprint("attncourse" in sys.modules)'))
    client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True)
    client.resources = {"metadata": {"path": str(folder)}}
    try:
        client.execute()
    except CellExecutionError as error:  # allow_errors keeps going; nothing should raise here
        pytest.fail(str(error))
    failed = {
        c.metadata.get("nbgrader", {}).get("grade_id"): o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "error"
    }
    assert set(failed) == {"p3_decode_rules"}, {k: v.evalue[:200] for k, v in failed.items()}
    error = failed["p3_decode_rules"]
    assert error.ename == "RuleBroken" and "W_UK" in error.evalue, error.evalue
    assert nb.cells[-1].outputs[0].text.strip() == "False"


@pytest.mark.parametrize("assignment", assignments())
def test_every_rule_a_check_proves_is_declared_and_shipped(assignment):
    """No check proves a rule outside its declaration (``@proves``), so the shipped book holds
    every rule-bound cell, and each declared check proves what it declares."""
    import inspect

    for path in (ROOT / "attncourse" / "grading" / assignment).glob("*.py"):
        assert "rules.assert_" not in path.read_text(), f"{path.name} proves an undeclared rule"
    for grade_id, check in verdict.checks_of(assignment).items():
        declared = getattr(check, "rules", ())
        body = inspect.getsource(inspect.unwrap(getattr(check, "func", check)))  # partials too
        assert bool(declared) == ("prove(" in body), grade_id
        if declared:
            assert grade_id in shipped(assignment).BOOK.rules
            assert shipped(assignment).BOOK.rules[grade_id] == tuple(
                shipped(assignment).rulebook.Rule(**vars(r)) for r in declared
            )
