"""Pointers people can follow: every message names the part, the answer's function or class and
the line inside the cell as the student sees it, never a cell's index in the notebook.

Each case edits the course's own notebook (attention_variants: Part 5 is ``MyMHA``), the way a
student would, and reads the message the judge, the integrity scan, the repairs or a run's
fault record gives; its control is the same notebook without the mistake.
"""

from types import SimpleNamespace

import nbformat
import pytest
import toy_course

from attncourse.course import ROOT, notebook_path
from attncourse.integrity.coursenotebook import CourseNotebook
from attncourse.integrity.findings import scan_notebook
from attncourse.judge import rules
from attncourse.judge.checks import GradingError
from attncourse.judge.program import Program
from attncourse.judge.resolve import reach
from attncourse.pointers import cell_places, located_cells
from attncourse.pointing import Place, located, pointer
from attncourse.preprocessors.repairgradecells import RepairGradeCells
from attncourse.preprocessors.resilientexecute import ResilientExecute
from attncourse.runrecord import RunRecord
from devtools.submissions import solution_answers, solution_submission

ASSIGNMENT = "attention_variants"
MHA = solution_answers(nbformat.read(notebook_path(ROOT, "source", ASSIGNMENT), as_version=4))[
    "p5_mha"
]
SOFTMAX = "        alpha = logits.softmax(dim=-1)"
LOOPY = "        alpha = torch.stack([r.softmax(dim=-1) for r in logits.unbind(1)], 1)"
HELPER = "def rows(t):\n    out = []\n    for r in t.unbind(1):\n        out.append(r.softmax(-1))\n    return torch.stack(out, 1)\n"


def line_of(source, text):
    """The 1-based line of ``text`` in ``source``, as the student's editor numbers it."""
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def index_of(nb, gid):
    return next(
        i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == gid
    )


def judged(nb):
    return SimpleNamespace(program=Program(located_cells(nb)))


def loop_message(nb):
    with pytest.raises(GradingError) as raised:
        rules.assert_no_loops("MyMHA", judged(nb), "Part 5")
    return str(raised.value)


def test_a_rule_finding_names_the_part_the_method_and_the_line_of_the_answer_cell():
    answer = MHA.replace(SOFTMAX, LOOPY)
    nb = solution_submission(ROOT, ASSIGNMENT, {"p5_mha": answer})
    line = line_of(answer, LOOPY.strip())
    message = loop_message(nb)
    assert (
        f"got:      Part 5: a list comprehension in `MyMHA.forward`, line {line} of the answer cell"
        in message
    )
    assert "cell 2" not in message and f"cell {index_of(nb, 'p5_mha') + 1}" not in message
    (finding,) = reach(Program(located_cells(nb)), "MyMHA").of("loop")
    assert (finding.part, finding.function, finding.line, finding.place) == (
        "Part 5",
        "MyMHA.forward",
        line,
        "the answer cell",
    )
    rules.assert_no_loops("MyMHA", judged(solution_submission(ROOT, ASSIGNMENT)), "Part 5")


def test_a_finding_in_a_cell_the_student_added_names_that_cell_by_what_it_is():
    nb = solution_submission(
        ROOT, ASSIGNMENT, {"p5_mha": MHA.replace(SOFTMAX, "        alpha = rows(logits)")}
    )
    after = index_of(nb, "p5_mha_no_loops_test") + 1
    nb.cells.insert(after, nbformat.v4.new_code_cell(HELPER))
    message = loop_message(nb)
    assert "got:      a for loop in `rows`, line 3 of a cell you added after Part 5" in message
    control = HELPER.replace(
        "    out = []\n    for r in t.unbind(1):\n        out.append(r.softmax(-1))\n    return torch.stack(out, 1)",
        "    return t.softmax(-1)",
    )
    nb.cells[after].source = control
    rules.assert_no_loops("MyMHA", judged(nb), "Part 5")


def test_lines_count_from_the_cells_own_first_line_past_blank_lines_and_cell_magics():
    answer = "\n\n%%time\n" + MHA.replace(SOFTMAX, LOOPY)
    nb = solution_submission(ROOT, ASSIGNMENT, {"p5_mha": answer})
    assert f"`MyMHA.forward`, line {line_of(answer, LOOPY.strip())} of" in loop_message(nb)


def test_an_integrity_finding_names_the_part_the_method_and_the_line():
    release = nbformat.read(notebook_path(ROOT, "release", ASSIGNMENT), as_version=4)
    course = CourseNotebook.from_notebook(release)
    bad = "        torch.allclose = lambda *a, **k: True"
    answer = MHA.replace(SOFTMAX, bad + "\n" + SOFTMAX)
    (finding,) = scan_notebook(solution_submission(ROOT, ASSIGNMENT, {"p5_mha": answer}), course)
    line = line_of(answer, bad.strip())
    assert (finding.label, finding.function, finding.line, finding.place) == (
        "Part 5",
        "MyMHA.forward",
        line,
        "the answer cell",
    )
    assert finding.describe().endswith(f"[Part 5: `MyMHA.forward`, line {line} of the answer cell]")
    assert scan_notebook(solution_submission(ROOT, ASSIGNMENT), course) == []


def test_the_places_of_a_notebook_follow_its_parts():
    nb = solution_submission(ROOT, ASSIGNMENT)
    nb.cells.insert(index_of(nb, "p5_mha_no_loops_test") + 1, nbformat.v4.new_code_cell("x = 1"))
    places = cell_places(nb)
    assert places[index_of(nb, "p5_mha")] == Place("Part 5", "the answer cell")
    assert places[index_of(nb, "p5_mha_values_test")].name == "the test cell of Part 5"
    assert places[index_of(nb, "p6_reasoning")] == Place("Part 6", "the written answer")
    assert places[index_of(nb, "p5_mha_no_loops_test") + 1].name == "a cell you added after Part 5"
    assert places[0].name == "the course's cell before Part 1"


def test_pointer_words():
    answer = Place("Part 5", "the answer cell")
    added = Place("", "a cell you added after Part 5")
    assert pointer(answer, "MyMHA.forward", 12) == "`MyMHA.forward`, line 12 of the answer cell"
    assert pointer(answer, "f", [3, 5]) == "`f`, lines 3 and 5 of the answer cell"
    assert pointer(answer, "f") == "`f` in the answer cell"
    assert pointer(added, "", 3) == "line 3 of a cell you added after Part 5"
    assert (
        located("a list comprehension", answer, "MyMHA.forward", 12)
        == "Part 5: a list comprehension in `MyMHA.forward`, line 12 of the answer cell"
    )
    assert located("`exec`", added, "", 3) == "`exec` on line 3 of a cell you added after Part 5"


def test_a_repair_names_the_part_of_the_cell_it_put_back(tmp_path):
    course = toy_course.make_course(tmp_path / "course")
    nb = toy_course.submission(course)
    del nb.cells[index_of(nb, "scale_test")].metadata["nbgrader"]
    resources = {
        "nbgrader": {
            "assignment": toy_course.ASSIGNMENT,
            "notebook": toy_course.ASSIGNMENT,
            "student": "s",
            "db_url": f"sqlite:///{course}/gradebook.db",
        }
    }
    repair = RepairGradeCells()
    repair.config.CourseDirectory.root = str(course)
    nb, _ = repair.preprocess(nb, resources)
    assert RunRecord.of(nb).repairs == [
        "restored the nbgrader metadata of the test cell of Part 1 (`scale_test`)"
    ]
    control, _ = repair.preprocess(toy_course.submission(course), resources)
    assert RunRecord.of(control).repairs == []


def test_a_runtime_fault_names_the_cell_it_happened_in():
    nb = solution_submission(ROOT, ASSIGNMENT)
    added = index_of(nb, "p5_mha_no_loops_test") + 1
    nb.cells.insert(added, nbformat.v4.new_code_cell("while True:\n    pass"))
    execute = ResilientExecute()
    execute._places, execute._record = cell_places(nb), RunRecord()
    execute._fault(
        nb.cells[index_of(nb, "p4_output_shapes")], index_of(nb, "p4_output_shapes"), "kernel died"
    )
    execute._fault(nb.cells[added], added, "hung")
    assert execute._record.faults == [
        {
            "cell": "p4_output_shapes",
            "where": "the answer cell of Part 4 (`p4_output_shapes`)",
            "fault": "kernel died",
        },
        {"cell": "", "where": "a cell you added after Part 5", "fault": "hung"},
    ]


def test_the_one_statement_rule_points_at_the_lines_of_the_answer():
    answer = solution_answers(
        nbformat.read(notebook_path(ROOT, "source", ASSIGNMENT), as_version=4)
    )["p13_reduced_matrices"]
    twice = answer.replace(
        "    W_V_MLA_hat = W_DKV  # (r, D)\n",
        "    W_V_MLA_hat = W_DKV  # (r, D)\n    W_V_MLA_hat = W_V_MLA_hat * 1.0\n",
    )
    nb = solution_submission(ROOT, ASSIGNMENT, {"p13_reduced_matrices": twice})
    first = line_of(twice, "W_V_MLA_hat = W_DKV")
    with pytest.raises(GradingError) as raised:
        rules.assert_one_statement_per_output(
            "reduced_matrices", judged(nb), "Part 13", rules_outputs(), size_params=("H",)
        )
    assert (
        f"got:      assigned in `reduced_matrices`, lines {first} and {first + 1} of the answer cell"
        in str(raised.value)
    )
    control = solution_submission(ROOT, ASSIGNMENT)
    rules.assert_one_statement_per_output(
        "reduced_matrices", judged(control), "Part 13", rules_outputs(), size_params=("H",)
    )


def rules_outputs():
    return ("W_K_MLA_hat", "W_V_MLA_hat", "W_Q_MLA_hat", "W_O_MLA_hat")


def test_the_integrity_scan_counts_lines_as_the_student_sees_them():
    release = nbformat.read(notebook_path(ROOT, "release", ASSIGNMENT), as_version=4)
    course = CourseNotebook.from_notebook(release)
    bad = "        torch.allclose = lambda *a, **k: True"
    answer = "\n\n" + MHA.replace(SOFTMAX, bad + "\n" + SOFTMAX)
    (finding,) = scan_notebook(solution_submission(ROOT, ASSIGNMENT, {"p5_mha": answer}), course)
    assert (finding.function, finding.line) == ("MyMHA.forward", line_of(answer, bad.strip()))
    timed = "%%time\n" + MHA.replace(SOFTMAX, bad + "\n" + SOFTMAX)  # scanned in the magic
    (finding,) = scan_notebook(solution_submission(ROOT, ASSIGNMENT, {"p5_mha": timed}), course)
    assert finding.line == line_of(timed, bad.strip())
