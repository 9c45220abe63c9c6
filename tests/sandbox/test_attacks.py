"""Every attack in ``attacks.py``, graded for real, gains nothing over its honest control.

One run of ``nbgrader autograde`` (the course's config, sandboxed kernels, the
judge) grades each attack as a student of its own beside the two controls: the
blank release and the same wrong answers without the trick. Then feedback is
generated. For each attack: no test cell scores more than in its control,
nothing of the hidden tests (a line of the grading package) appears in its
autograded notebook or its feedback, no active content survives in its outputs,
and no file it tried to write outside the sandbox exists.
"""

import functools
from pathlib import Path

import nbformat
import pytest
from attacks import ATTACKS, CONTROLS, OUTSIDE

from attncourse.course import ROOT, nbgrader, notebook_path
from attncourse.gradebook import cell_scores
from devtools.autograde import prepare
from devtools.submissions import fill, write_submission

ASSIGNMENT = "attention_variants"
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("attacks")]

# Small limits for this run: a hanging call costs 5 s, so does the wait for a cell's last
# output, a notebook 30 s in all (a control's whole notebook, judge included, runs in 0.8-1.1 s
# on an idle machine; at 10 s and 60 s the suite took 212 s alone, 143 s at 5 and 30 with the
# output's wait left at 30: builtins_rebound waited it out). Each student's kernel
# is started while the one before runs, as `attncourse grade` grades a class: an attack then
# runs beside the next student's kernel.
LIMITS = """
c.Execute.timeout = 5
c.ResilientExecute.iopub_timeout = 5
c.ResilientExecute.notebook_budget = 30
c.ResilientExecute.prewarm = True
"""
ACTIVE = ("text/html", "application/javascript", "text/javascript", "image/svg+xml")


def release():
    return nbformat.read(notebook_path(ROOT, "release", ASSIGNMENT), as_version=4)


def submission(attack):
    nb = fill(release(), attack.answers)
    if attack.code:
        nb.cells.insert(1, nbformat.v4.new_code_cell(attack.cell()))
    return nb


def hidden_lines():
    """Lines of the grading package that no student file contains (what must never leak)."""
    public = notebook_path(ROOT, "release", ASSIGNMENT).read_text()
    lines = set()
    package = sorted((ROOT / "attncourse" / "grading" / ASSIGNMENT).glob("*.py"))
    for module in (*package, ROOT / "attncourse" / "judge" / "checks.py"):
        for line in module.read_text().splitlines():
            line = line.strip()
            if len(line) >= 30 and line not in public and not line.startswith(("#", '"""')):
                lines.add(line)
    return lines


def said(course, attack):
    """What nbgrader logged of ``attack``'s student, its errors and their tracebacks."""
    keep, in_traceback = [], False
    for line in (course / "nbgrader.log").read_text().splitlines():
        if line.startswith("Traceback"):
            in_traceback = True
        elif in_traceback and not line.startswith(" "):
            keep.append(line)  # the exception's own line ends the traceback
            in_traceback = False
        if in_traceback or "ERROR" in line or attack.name in line:
            keep.append(line)
    return "\n".join(line for line in keep if "Integrity finding" not in line)[-8000:]


@functools.cache
def graded(base):
    course = prepare(Path(base) / "attacks", [ASSIGNMENT])
    with open(course / "nbgrader_config.py", "a") as config:
        config.write(LIMITS)
    for control, answers in CONTROLS.items():
        write_submission(course, f"control_{control}", ASSIGNMENT, fill(release(), answers))
    for attack in ATTACKS:
        write_submission(course, attack.name, ASSIGNMENT, submission(attack))
    log = course / "nbgrader.log"  # what a failure below quotes
    nbgrader("autograde", ASSIGNMENT, "--force", cwd=course, check=False, log=log)
    nbgrader("generate_feedback", ASSIGNMENT, "--force", cwd=course, check=False, log=log)
    return course, cell_scores(course, ASSIGNMENT)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return graded(str(tmp_path_factory.getbasetemp()))


def test_controls_score_what_they_should(run):
    _, scores = run
    assert sum(s for s, _, _ in scores["control_blank"].values()) == 0
    wrong = scores["control_wrong"]
    for gid in ("p1_head_shapes_test", "p3_softmax_argument_values_test", "p6_tilde_rank_test"):
        assert wrong[gid][0] == 0, (gid, wrong[gid])
    assert wrong["p3_softmax_argument_shape_test"][0] == wrong["p3_softmax_argument_shape_test"][1]
    zeros = scores["control_mha_zeros"]  # right attributes, no loops, outputs all zero
    assert zeros["p5_mha_attributes_test"][0] == zeros["p5_mha_attributes_test"][1]
    assert zeros["p5_mha_values_test"][0] == 0


def test_there_are_at_least_25_attacks():
    assert len({a.name for a in ATTACKS}) == len(ATTACKS) >= 25


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_attack_gains_nothing_leaks_nothing_writes_nothing(run, attack):
    course, scores = run
    got, control = scores[attack.name], scores[f"control_{attack.control}"]
    gains = {g: (got[g][0], control[g][0]) for g in got if got[g][0] > control[g][0]}
    assert not gains, f"{attack.name} scored above its control (got, control): {gains}"

    autograded = notebook_path(course, "autograded", ASSIGNMENT, attack.name)
    feedback = course / "feedback" / attack.name / ASSIGNMENT / f"{ASSIGNMENT}.html"
    assert feedback.exists(), f"{attack.name}: no feedback was generated\n" + said(course, attack)
    texts = [autograded.read_text(), feedback.read_text()]
    leaked = [line for line in hidden_lines() if any(line in t for t in texts)]
    assert not leaked, f"{attack.name} leaked hidden-test lines: {leaked[:5]}"

    nb = nbformat.read(autograded, as_version=4)
    active = [
        (i, mime)
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for out in cell.outputs
        for mime in out.get("data", {})
        if mime in ACTIVE
    ]
    assert not active, f"{attack.name}: active content kept in outputs {active}"

    written = [p.format(name=attack.name) for p in OUTSIDE]
    assert not [p for p in written if Path(p).exists()], f"{attack.name} wrote outside"
