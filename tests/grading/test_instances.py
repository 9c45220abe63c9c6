"""Each student's own worksheet numbers: drawn from the id, equally hard, graded against the
graded id's instance only (attncourse.grading.attention_worksheet.references)."""

import ast
import html
import json

import nbformat
import numpy as np
import pytest
from nbgrader.api import Gradebook

from attncourse.cells import grade_id
from attncourse.cli import main
from attncourse.constants import AUTOGRADED, EXAMPLE_STUDENT, FEEDBACK, GRADEBOOK
from attncourse.course import ROOT, nbgrader, notebook_path
from attncourse.gradebook import cell_scores
from attncourse.grading import attention_worksheet as aw
from attncourse.grading.attention_worksheet import references as instance
from attncourse.grading.attention_worksheet.references import projection_mistakes
from attncourse.judge import verdict
from attncourse.judge.channel import LocalChannel
from attncourse.judge.remote import Session, StudentNamespace
from attncourse.preprocessors.pininstance import INSTANCE_CELL, PinInstance
from attncourse.report.page import build_report
from devtools.autograde import prepare
from devtools.submissions import solution_submission, write_submission

IDS = [f"s{i:05d}" for i in range(1000)]
HAND_TESTS = ("q3a_toy_qkv", "q3b_toy_output", "q5a_head_splits", "q5b_concat_output")


def cells(kind):
    """grade_id (or "" for a cell without one) -> source of the worksheet's ``kind`` notebook."""
    nb = nbformat.read(notebook_path(ROOT, kind, "attention_worksheet"), as_version=4)
    return {grade_id(c) or "": c.source for c in nb.cells if c.cell_type == "code"}


def judged(names, student):
    """The verdict of each hand-computed test for ``names`` graded as ``student`` (None: passed)."""
    ns = StudentNamespace(Session(LocalChannel({"__name__": "__main__", **names})), (), student)
    return {test: verdict.run_check(aw.CHECKS[test], ns, "secret") for test in HAND_TESTS}


def notebook_names(student, kind="source", answers=("q3a", "q3b", "q5a", "q5b")):
    """The worksheet's globals after its provided cells and ``answers`` ran for a hub login."""
    code = cells(kind)
    names = {"__name__": "__main__"}
    exec(code["setup_imports"], names)
    exec(code[""], names)  # STUDENT_ID = ""
    provided = code[INSTANCE_CELL].replace('os.environ.get("JUPYTERHUB_USER")', repr(student), 1)
    exec(provided, names)
    for part in ("q3_given", "q3a_answer", "q3b_answer", "q5_given", "q5a_answer", "q5b_answer"):
        if part.endswith("given") or part.split("_")[0] in answers:
            exec(code[part], names)
    return names


def test_an_instance_is_stable_for_an_id_and_differs_between_ids():
    first = {k: v.tolist() for k, v in instance.worksheet_instance("alice").items()}
    again = {k: v.tolist() for k, v in instance.worksheet_instance("alice").items()}
    assert first == again
    drawn = {
        json.dumps({k: v.tolist() for k, v in instance.worksheet_instance(i).items()})
        for i in IDS[:200]
    }
    assert len(drawn) == 200


def test_the_released_cell_draws_what_the_judge_draws():
    """The provided cell's function is instance.worksheet_instance, word for word."""
    released = ast.parse(cells("release")[INSTANCE_CELL])
    judge = ast.parse(open(instance.__file__).read())

    def function(tree):
        return next(
            ast.dump(n)
            for n in tree.body
            if isinstance(n, ast.FunctionDef) and n.name == "worksheet_instance"
        )

    assert function(released) == function(judge)
    names = notebook_names("bob", kind="release", answers=())
    assert names["student"] == "bob"
    for key, value in instance.instance_of("bob").items():
        assert np.array_equal(names["mine"][key], value), key


def test_every_instance_is_equally_hard():
    """Over 1000 ids: the same shapes and ranges, one tie and one decided row of weights, every
    named mistake another matrix (those of Q3(b) 1 or more off in some entry, 50x the typed
    tolerance), the rounded weights' Y within 3e-3 max|Y| of the exact one."""
    for student in IDS:
        d = instance.instance_of(student)
        X = d["X"]
        assert abs(np.linalg.det(X)) >= 1 and (X != X.T).any(), student
        for W in (d["W_q"], d["W_k"], d["W_v"], d["W_o"]):
            assert W.shape == (2, 2) and np.abs(W).max() <= 3, student
        S = (X @ d["W_q"]) @ (X @ d["W_k"]).T
        gaps = sorted(abs(S[:, 0] - S[:, 1]))
        assert gaps[0] == 0 and gaps[1] >= 8, (student, S)
        assert sorted(d["A_approx"].ravel().tolist()) == [0.0, 0.5, 0.5, 1.0], student
        for W in (d["W_q"], d["W_k"], d["W_v"]):
            for wrong in projection_mistakes(*map(_t, (X, W))).values():
                assert not np.array_equal(wrong.numpy(), X @ W), student
        A = np.exp(S / np.sqrt(2))
        A /= A.sum(axis=1, keepdims=True)
        V, W_o, A_r = X @ d["W_v"], d["W_o"], d["A_approx"]
        Y, Y_exact = A_r @ V @ W_o, A @ V @ W_o
        assert np.abs(Y_exact - Y).max() <= 3e-3 * np.abs(Y).max(), student
        columns = np.exp(S / np.sqrt(2))
        for wrong in (A_r @ V, A_r.T @ V @ W_o, W_o @ A_r @ V, A_r @ X @ W_o):
            assert min(np.abs(wrong - Y).max(), np.abs(wrong - Y_exact).max()) >= 1, student
        wrong = columns / columns.sum(axis=0) @ V @ W_o  # softmax over the wrong axis
        assert min(np.abs(wrong - Y).max(), np.abs(wrong - Y_exact).max()) >= 1, student
        for M in (d["Q_mha"], d["K_mha"], d["V_mha"]):
            assert len(set(M.ravel().tolist())) == 8 and M.max() <= 9, student
        assert (d["W_o_mha"].sum(axis=0) == 2).all() and (d["W_o_mha"].sum(axis=1) == 2).all()
        assert not np.array_equal(d["H_0"], d["H_1"]), student


def _t(array):
    import torch

    return torch.tensor(array, dtype=torch.float64)


@pytest.mark.parametrize("student", ["alice", "s0042", "ünïcode id", EXAMPLE_STUDENT])
def test_the_solution_passes_for_any_id(student):
    assert judged(notebook_names(student), student) == dict.fromkeys(HAND_TESTS)


def test_answers_of_the_example_instance_fail_saying_so():
    """A notebook left on the example numbers, graded as alice: every hand part fails."""
    verdicts = judged(notebook_names(EXAMPLE_STUDENT), "alice")
    for test, message in verdicts.items():
        assert message and "answers match the example instance" in message, (test, message)
        assert "graded as 'alice'" in message


def test_a_copied_instance_fails_naming_whose_it_is():
    """Bob's numbers typed into a notebook graded as carol, whose STUDENT_ID says bob."""
    answers = instance.instance_json("bob")["answers"]
    names = {name: answers[name] for name in answers} | {"STUDENT_ID": "bob"}
    verdicts = judged(names, "carol")
    for test, message in verdicts.items():
        assert message and "answers match student 'bob'" in message, (test, message)
    assert judged({**instance.instance_json("carol")["answers"], "STUDENT_ID": "bob"}, "carol") == (
        dict.fromkeys(HAND_TESTS)
    )


def test_the_grader_pins_the_provided_cell_to_the_graded_id():
    nb = nbformat.read(notebook_path(ROOT, "release", "attention_worksheet"), as_version=4)
    nb, _ = PinInstance().preprocess(nb, {"nbgrader": {"student": 'dan "the" man'}})
    source = next(c.source for c in nb.cells if grade_id(c) == INSTANCE_CELL)
    names = {"STUDENT_ID": "someone else", "np": np}
    exec(source, names)
    assert names["student"] == 'dan "the" man'


def test_instance_command_prints_the_same_json_every_time(capsys):
    printed = []
    for _ in range(2):
        with pytest.raises(SystemExit) as done:
            main(["instance", "attention_worksheet", "--student", "alice"])
        assert done.value.code == 0
        printed.append(capsys.readouterr().out)
    assert printed[0] == printed[1]
    shown = json.loads(printed[0])
    assert shown["student"] == "alice"
    assert judged(shown["answers"], "alice") == dict.fromkeys(HAND_TESTS)
    with pytest.raises(SystemExit) as done:
        main(["instance", "attention_variants", "--student", "alice"])
    assert done.value.code == 2


@pytest.mark.slow
def test_autograding_grades_each_id_against_its_own_numbers_and_reports_copies(tmp_path):
    """A class of three on nbgrader's autograde, its roster in the gradebook. alice hands in
    the solution; bob types alice's Q3(a) numbers and writes her id; carol types alice's
    Q3(a) and Q5(b) numbers under her own id. alice's autograded notebook prints her own
    numbers and keeps every point; bob's Q3(a) fails naming alice (he wrote her id); carol's
    two parts fail saying only "another student's instance", and the report names alice.
    alice's feedback shows her own numbers above her answers."""
    answers = instance.instance_json("alice")["answers"]
    typed = "".join(f"{m} = {answers[m]}\n" for m in "QKV")
    q5b = "".join(f"{m} = {answers[m]}\n" for m in ("H_concat", "Y_mha"))
    submissions = {
        "alice": solution_submission(ROOT, "attention_worksheet"),
        "bob": solution_submission(
            ROOT, "attention_worksheet", {"q3a_answer": 'STUDENT_ID = "alice"\n' + typed}
        ),
        "carol": solution_submission(
            ROOT, "attention_worksheet", {"q3a_answer": typed, "q5b_answer": q5b}
        ),
    }
    course = prepare(tmp_path / "course", ["attention_worksheet"])
    with Gradebook(f"sqlite:///{course / GRADEBOOK}") as gb:
        for student in submissions:  # the roster, as `nbgrader db student import` adds it
            gb.update_or_create_student(student)
    for student, nb in submissions.items():
        write_submission(course, student, "attention_worksheet", nb)
    nbgrader("autograde", "attention_worksheet", "--force", cwd=course, quiet=True)
    scores = cell_scores(course, "attention_worksheet")
    assert all(scores["alice"][t][0] == scores["alice"][t][1] for t in HAND_TESTS)
    assert scores["bob"]["q3a_toy_qkv"][0] == 0
    assert [scores["carol"][t][0] for t in HAND_TESTS] == [
        0,
        scores["carol"]["q3b_toy_output"][1],
        scores["carol"]["q5a_head_splits"][1],
        0,
    ]
    graded = {
        student: {
            grade_id(c): "".join(o.get("text", "") or o.get("evalue", "") for o in c.outputs)
            for c in nbformat.read(
                notebook_path(course, AUTOGRADED, "attention_worksheet", student), as_version=4
            ).cells
            if c.cell_type == "code"
        }
        for student in submissions
    }
    assert "student 'alice'" in graded["alice"][INSTANCE_CELL]
    assert f"X =\n{instance.instance_of('alice')['X']}" in graded["alice"]["q3_given"]
    assert "answers match student 'alice'" in graded["bob"]["q3a_toy_qkv"]
    for test in ("q3a_toy_qkv", "q5b_concat_output"):
        assert "answers match another student's instance" in graded["carol"][test]
        assert "alice" not in graded["carol"][test]
    nbgrader("generate_feedback", "attention_worksheet", "--force", cwd=course, quiet=True)
    feedback = notebook_path(course, FEEDBACK, "attention_worksheet", "alice").with_suffix(".html")
    shown = html.unescape(feedback.read_text())  # her numbers above her answers
    assert f"X =\n{instance.instance_of('alice')['X']}" in shown
    page = build_report(course).read_text()
    assert "answers of carol match student alice&#x27;s instance" in page
    assert "answers of bob match student alice&#x27;s instance" in page


CLASS = ("alice", "bob", "carol")


def judged_in_class(names, student):
    """:func:`judged` with the class roster the grader reads from the gradebook; also the
    classmates whose instance the answers matched, as the run record keeps them."""
    channel = LocalChannel({"__name__": "__main__", **names})
    ns = StudentNamespace(Session(channel), (), student, roster=lambda: CLASS)
    verdicts = {test: verdict.run_check(aw.CHECKS[test], ns, "secret") for test in HAND_TESTS}
    return verdicts, ns.instance_matches


def test_a_classmates_numbers_under_ones_own_id_fail_without_naming_the_classmate():
    """alice writes her own id but types bob's numbers: every hand part fails saying "another
    student's instance" (never bob's id); the record names bob for the report. bob's own
    answers and carol's honest ones keep every point and record nothing."""
    bobs = instance.instance_json("bob")["answers"]
    verdicts, matches = judged_in_class({**bobs, "STUDENT_ID": "alice"}, "alice")
    for test, message in verdicts.items():
        assert message and "answers match another student's instance" in message, (test, message)
        assert "bob" not in message and "graded as 'alice'" in message
    assert matches == [{"part": p, "student": "bob"} for p in ("Q3(a)", "Q3(b)", "Q5(a)", "Q5(b)")]
    for student in ("bob", "carol"):
        own = instance.instance_json(student)["answers"]
        assert judged_in_class(own, student) == (dict.fromkeys(HAND_TESTS), [])


def test_a_wrong_answer_is_no_copy_however_small_the_matrices():
    """A named mistake, or one typo among otherwise own answers, records no classmate."""
    own = instance.instance_json("carol")["answers"]
    typo = {**own, "K": (np.array(own["K"]) + np.eye(2)).tolist()}
    no_w_o = {
        **own,
        "Y": (np.array(own["Y"]) @ np.linalg.inv(instance.instance_of("carol")["W_o"])).tolist(),
    }
    for names in (typo, no_w_o):
        verdicts, matches = judged_in_class(names, "carol")
        assert matches == [] and any(verdicts.values())
        assert not any("another student" in (m or "") for m in verdicts.values())
