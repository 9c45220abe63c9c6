"""A student who edits the shipped prover gains nothing: the judge proves the rules itself.

Autograded by nbgrader (slow): the submitted folder holds ``coursecheck/`` beside the
notebook, edited so that ``check_rules`` always passes and, imported, rebinds
``torch.softmax``. Beside each attack its honest control: the same answers with the prover
as shipped. The attack may score no point above its control on any test cell.
"""

import shutil
from pathlib import Path

import nbformat
import pytest
from attacks import _MHA_LOOP_CONTROL

from attncourse.course import ROOT, nbgrader, notebook_path
from attncourse.gradebook import cell_scores
from attncourse.prover import PACKAGE
from devtools.autograde import prepare
from devtools.submissions import solution_submission, write_submission

pytestmark = [pytest.mark.slow, pytest.mark.kernel, pytest.mark.xdist_group("rulecheck_tamper")]

ASSIGNMENT = "attention_variants"
RULE_CELLS = ("p5_mha_values_test", "p5_mha_no_loops_test")
ALWAYS_PASSES = '''"""Edited by the student: every rule holds."""
import torch

torch.softmax = lambda x, dim=-1: x  # and, imported, a patch


def check_rules(grade_id):
    """Never fails."""
'''
IMPORTS_IT = "import coursecheck  # the edited copy, run in the kernel\n"


def _submit(course, student, nb, edited):
    path = write_submission(course, student, ASSIGNMENT, nb)
    shutil.copytree(ROOT / "release" / ASSIGNMENT / PACKAGE, path.parent / PACKAGE)
    if edited:
        (path.parent / PACKAGE / "__init__.py").write_text(ALWAYS_PASSES)


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    course = prepare(Path(tmp_path_factory.mktemp("tamper")) / "course", [ASSIGNMENT])
    loop = solution_submission(ROOT, ASSIGNMENT, _MHA_LOOP_CONTROL)
    solution = solution_submission(ROOT, ASSIGNMENT)
    importing = solution_submission(ROOT, ASSIGNMENT)
    importing.cells.insert(1, nbformat.v4.new_code_cell(IMPORTS_IT))
    for student, nb, edited in (
        ("loop_edited", loop, True),
        ("loop_control", loop, False),
        ("solution_edited", solution, True),
        ("imports_edited", importing, True),
        ("imports_control", importing, False),
    ):
        _submit(course, student, nb, edited)
    nbgrader("autograde", ASSIGNMENT, "--force", cwd=course, check=False, quiet=True)
    assert notebook_path(course, "autograded", ASSIGNMENT, "loop_edited").exists()
    return cell_scores(course, ASSIGNMENT)


@pytest.mark.parametrize("attack", ["loop_edited", "imports_edited"])
def test_an_edited_prover_gains_nothing_over_its_control(scores, attack):
    got, control = scores[attack], scores[attack.replace("edited", "control")]
    gains = {g: (got[g][0], control[g][0]) for g in got if got[g][0] > control[g][0]}
    assert not gains, f"{attack} scored above its control (got, control): {gains}"


def test_the_loop_loses_the_rule_points_with_or_without_the_edit(scores):
    for student in ("loop_edited", "loop_control"):
        assert scores[student]["p5_mha_no_loops_test"][0] == 0, student


def test_an_answer_that_imports_the_edited_copy_loses_every_rule_point(scores):
    """The import runs code the judge cannot read: every rule-bound part is unverifiable."""
    for gid in RULE_CELLS:
        assert scores["imports_edited"][gid][0] == 0, gid


def test_an_edited_copy_the_answers_never_import_costs_nothing(scores):
    got = scores["solution_edited"]
    lost = {g: s for g, s in got.items() if not s[2] and s[0] < s[1]}  # autograded cells
    assert not lost, lost
    assert all(got[g][0] == got[g][1] > 0 for g in RULE_CELLS), got
