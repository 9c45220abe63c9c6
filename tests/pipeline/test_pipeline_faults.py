"""The fault corpus: one class of hostile and damaged submissions, autograded in one run.

Every fault sits in the answer cell of Part 4 (``p4_output_shapes``), before
the instructor's solution: when the fault stops the cell, the function is
never defined and exactly Part 4's test loses its points; when it does not
(a warning, a flood of output), nothing is lost. Damaged notebooks (duplicated,
deleted, stripped cells) are otherwise perfect. So each student's expected
score is the full autograded score minus the cells listed below, and any other
difference means a fault leaked into other cells or other students.

The class is graded by ``attncourse grade`` with 2 workers, and again by plain
``nbgrader autograde`` under the same course config: the scores must agree.
"""

import copy
import hashlib
import json
import re
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest
from snoop import SNOOP, Listener, snoop_report

from attncourse.cells import grade_id
from attncourse.course import ROOT, nbgrader, notebook_path
from attncourse.gradebook import cell_scores
from attncourse.pipeline import grade
from attncourse.preprocessors.resilientexecute import ResilientExecute
from devtools.autograde import prepare
from devtools.submissions import solution_answers, solution_submission, write_submission

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("faults")]

ASSIGNMENT = "attention_variants"
PART = "p4_output_shapes"
PART_TEST = "p4_output_shapes_test"
# Three students hang on purpose in Part 4's answer cell, each until its limit, in both
# gradings: that one cell gets a short limit, HANG_LIMIT. Every other cell keeps the course's own
# limit (ResilientExecute.timeout, 120 s), which the honest cells are graded under in a term.
# A short limit for every cell failed CI (stop 45's tree: 20 s): the heaviest honest cell,
# Part 13's experiment (1.6-2.3 s on an idle core), ran past 20 s there while both gradings
# and another xdist group shared two cores, and an honest student lost Part 13 to a timeout.
HANG_LIMIT = 20
COURSE_LIMIT = ResilientExecute.class_traits()["timeout"].default_value
HANG_CONFIG = f"""
# tests/pipeline/test_pipeline_faults.py: a short limit for the one cell the hung students hang in.
c.ResilientExecute.timeout_func = lambda cell: (
    {HANG_LIMIT} if cell.metadata.get("nbgrader", {{}}).get("grade_id") == "{PART}" else {COURSE_LIMIT}
)
"""

SOLUTION = solution_answers(nbformat.read(notebook_path(ROOT, "source", ASSIGNMENT), as_version=4))[
    PART
]

MEMORY_BOMB = "hog = []\nwhile True:\n    hog.append(bytearray(10**8))\n"
FORK_BOMB = "import os\n\nwhile True:\n    os.fork()\n"
INFINITE_LOOP = "while True:\n    pass\n"
IGNORES_INTERRUPT = (
    "import signal\n\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass\n"
)
EXIT = "import os\n\nos._exit(1)\n"
SEGFAULT = "import ctypes\n\nctypes.string_at(0)\n"
SELF_SIGSEGV = "import os\n\nos.kill(os.getpid(), 11)\n"
BIG_PRINT = "print('x' * 100_000_000)\n"
# numpy's RuntimeWarning goes to stderr each time the test calls output_shapes.
WARNS = SOLUTION.replace("    return (\n", "    np.log(np.zeros(1))\n    return (\n", 1)
WRONG = SOLUTION.replace("(H * D_v,),  # o_l1", "(D_v,),  # o_l1")


# student -> (override of the Part 4 answer or a damage function, cells that must score 0, status)
LOSES_PART_4 = {PART_TEST}
# The tests that judge a source rule: code that reaches the interpreter's state (ctypes, signal
# handlers) anywhere in the notebook makes every rule unverifiable, so these lose too.
RULE_BOUND = {
    "p5_mha_values_test",
    "p5_mha_no_loops_test",
    "p7_gqa_interleaved_heads_test",
    "p7_gqa_no_loops_test",
    "p10_gqa_2_mla_rules_test",
    "p13_reduced_matrices_rules_test",
}
IMPORTS = "import math\n\n" + SOLUTION.replace(
    "    return (\n", "    math.sqrt(4)\n    return (\n", 1
)
FORGED_RECORD = {
    "protections": {"uid": 0, "fs": True, "net": True},
    "refused_files": ["forged.txt: a forged refusal"],
    "repairs": ["forged repair"],
    "faults": [{"cell": "p1_head_shapes", "fault": "forged"}],
}


def _cell(nb, gid):
    return next(i for i, c in enumerate(nb.cells) if grade_id(c) == gid)


def _duplicate_test(nb):
    i = _cell(nb, "p5_mha_values_test")
    nb.cells.insert(i + 1, copy.deepcopy(nb.cells[i]))
    nb.cells[i + 1].id = "dupl1cat"
    return nb


def _delete_test(nb):
    del nb.cells[_cell(nb, "p3_softmax_argument_values_test")]
    return nb


def _test_cell_as_solution(nb):
    nb.cells[_cell(nb, "p5_mha_values_test")].metadata["nbgrader"]["solution"] = True
    return nb


def _forged_record(nb):
    nb.metadata["attncourse"] = copy.deepcopy(FORGED_RECORD)
    return nb


def _strip_metadata(nb):
    for gid in ("p2_projections", "p2_projections_test"):
        del nb.cells[_cell(nb, gid)].metadata["nbgrader"]
    return nb


def corpus(course, listener, outside):
    """student -> (submission or raw text or None, grade_ids that must score 0, status)."""
    gradebook = str(course / "gradebook.db")
    reads = [
        str(notebook_path(course, "source", ASSIGNMENT)),
        gradebook,
        str(notebook_path(course, "submitted", ASSIGNMENT, "correct")),
        str(course / "nbgrader_config.py"),
    ]
    writes = [
        gradebook,
        str(course / "source" / ASSIGNMENT / "pwned.txt"),
        str(course / "submitted" / "correct" / ASSIGNMENT / "pwned.txt"),
        str(outside / "escaped.txt"),
    ]
    snoop = SNOOP.format(reads=reads, writes=writes, gradebook=gradebook, port=listener.port)

    def answer(code):
        return solution_submission(course, ASSIGNMENT, {PART: code})

    return {
        "correct": (solution_submission(course, ASSIGNMENT), set(), "ok"),
        "wrong": (answer(WRONG), LOSES_PART_4, "ok"),
        "memory_bomb": (answer(MEMORY_BOMB + SOLUTION), LOSES_PART_4, "faults"),
        "fork_bomb": (answer(FORK_BOMB + SOLUTION), LOSES_PART_4, "faults"),
        "infinite_loop": (answer(INFINITE_LOOP + SOLUTION), LOSES_PART_4, "faults"),
        "ignores_interrupt": (
            answer(IGNORES_INTERRUPT + SOLUTION),
            LOSES_PART_4 | RULE_BOUND,
            "faults",
        ),
        "exits": (answer(EXIT + SOLUTION), LOSES_PART_4, "faults"),
        "segfault": (answer(SEGFAULT + SOLUTION), LOSES_PART_4 | RULE_BOUND, "faults"),
        "imports_beyond_first_cell": (answer(IMPORTS), LOSES_PART_4, "ok"),
        "test_cell_marked_solution": (
            _test_cell_as_solution(solution_submission(course, ASSIGNMENT)),
            set(),
            "repaired",
        ),
        "forged_record": (_forged_record(solution_submission(course, ASSIGNMENT)), set(), "ok"),
        "self_sigsegv": (answer(SELF_SIGSEGV + SOLUTION), LOSES_PART_4, "faults"),
        "big_print": (answer(BIG_PRINT + SOLUTION), set(), "faults"),
        "warns": (answer(WARNS), set(), "ok"),
        "snoop": (answer(snoop + SOLUTION), LOSES_PART_4, "ok"),
        "duplicated_test": (
            _duplicate_test(solution_submission(course, ASSIGNMENT)),
            set(),
            "repaired",
        ),
        "deleted_test": (_delete_test(solution_submission(course, ASSIGNMENT)), set(), "repaired"),
        "stripped_metadata": (
            _strip_metadata(solution_submission(course, ASSIGNMENT)),
            set(),
            "repaired",
        ),
        "malformed_json": (
            nbformat.writes(solution_submission(course, ASSIGNMENT))[:3000],
            "all",
            "unreadable",
        ),
        "missing_notebook": (None, None, "missing"),
    }


def submit_all(course, students):
    for student, (nb, _, _) in students.items():
        if nb is None:
            (course / "submitted" / student / ASSIGNMENT).mkdir(parents=True)
        else:
            write_submission(course, student, ASSIGNMENT, nb)


def sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The corpus graded by the pipeline (2 workers) and by plain nbgrader autograde."""
    base = tmp_path_factory.mktemp("faults")
    outside = base / "outside"
    outside.mkdir()
    listener = Listener()
    course = prepare(base / "course", [ASSIGNMENT])
    plain = prepare(base / "plain", [ASSIGNMENT])
    for scratch in (course, plain):
        with open(scratch / "nbgrader_config.py", "a") as config:
            config.write(HANG_CONFIG)
    students = corpus(course, listener, outside)
    submit_all(course, students)
    submit_all(plain, corpus(plain, listener, outside))
    source_hash = sha(notebook_path(course, "source", ASSIGNMENT))
    # The plain autograde runs beside the pipeline, not after it: both spend most of their
    # time waiting out the hung students' limits (about 200 s off make test's faults group).
    # Both start each student's kernel while the one before runs (the pipeline does so itself
    # for a class larger than its workers).
    with ThreadPoolExecutor(1) as beside:
        plain_run = beside.submit(
            nbgrader,
            "autograde",
            ASSIGNMENT,
            "--force",
            "--ResilientExecute.prewarm=True",
            cwd=plain,
            check=False,
            quiet=True,
        )
        status, results = grade(ASSIGNMENT, workers=2, course=course)
        plain_run.result()
    listener.close()
    yield {
        "course": course,
        "plain": plain,
        "outside": outside,
        "students": students,
        "status": status,
        "results": results,
        "source_hash": source_hash,
        "connections": listener.connections,
    }


def autograded_cells(course):
    """grade_id -> max points of every autograded (code) grade cell of the assignment."""
    nb = nbformat.read(notebook_path(course, "release", ASSIGNMENT), as_version=4)
    return {
        grade_id(c): c.metadata.nbgrader["points"]
        for c in nb.cells
        if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")
    }


def test_every_student_gets_exactly_the_expected_score(graded):
    scores = cell_scores(graded["course"], ASSIGNMENT)
    cells = autograded_cells(graded["course"])
    for student, (_, zeroed, _) in graded["students"].items():
        if zeroed is None:
            assert student not in scores, f"{student} has no notebook and must have no grades"
            continue
        zeroed = set(cells) if zeroed == "all" else zeroed
        got = {gid: scores[student][gid][0] for gid in cells}
        expected = {gid: 0.0 if gid in zeroed else float(points) for gid, points in cells.items()}
        assert got == expected, f"{student}: {got} != {expected}"


def test_each_student_gets_the_expected_status_and_the_run_succeeds(graded):
    assert graded["status"] == 0
    for student, (_, _, status) in graded["students"].items():
        if status is not None:
            assert graded["results"][student].status == status, graded["results"][student]


def test_faults_are_recorded_against_the_cell_that_caused_them(graded):
    results = graded["results"]
    # The hung cell was stopped at its own short limit, not the course's.
    assert results["infinite_loop"].seconds < COURSE_LIMIT, results["infinite_loop"]
    for student, kinds in [
        ("infinite_loop", {"timeout"}),
        ("ignores_interrupt", {"hung"}),
        ("exits", {"kernel died"}),
        ("segfault", {"kernel died"}),
        ("self_sigsegv", {"kernel died"}),
        ("big_print", {"output truncated"}),
        ("memory_bomb", {"out of memory", "kernel died"}),
        ("fork_bomb", {"left processes behind", "hung", "timeout"}),
    ]:
        faults = results[student].record.faults
        assert {f["fault"] for f in faults if f["cell"] == PART} & kinds, (student, faults)
        assert all(f["cell"] == PART for f in faults), (student, faults)
        assert all(f["where"] == f"the answer cell of Part 4 (`{PART}`)" for f in faults)
        assert f"in the answer cell of Part 4 (`{PART}`)" in results[student].details
    assert "no attention_variants.ipynb" in results["missing_notebook"].details
    malformed = results["malformed_json"]
    assert re.match(r"the file is not valid JSON at line \d+, column \d+ \(", malformed.details)
    assert malformed.outcome == "unreadable" and "re-upload a notebook" in malformed.next_step


def test_an_import_beyond_the_first_cell_costs_its_part_with_the_rule_named(graded):
    nb = nbformat.read(
        notebook_path(graded["course"], "autograded", ASSIGNMENT, "imports_beyond_first_cell"),
        as_version=4,
    )
    cell = nb.cells[_cell(nb, PART_TEST)]
    assert "imports are allowed only in the course's first cell" in cell.outputs[0]["evalue"]


def test_a_test_cell_marked_as_a_solution_is_repaired_and_graded(graded):
    record = graded["results"]["test_cell_marked_solution"].record
    assert any(
        r.startswith(
            "restored the nbgrader flags of the test cell of Part 5 (`p5_mha_values_test`)"
        )
        and "solution" in r
        for r in record.repairs
    ), record


def test_a_forged_record_is_dropped_and_the_graders_own_is_kept(graded):
    record = graded["results"]["forged_record"].record
    assert "forged.txt: a forged refusal" not in record.refused_files
    assert "forged repair" not in record.repairs
    assert all(f["fault"] != "forged" for f in record.faults)
    assert record.protections and "mount_namespace" in record.protections
    assert record.protections.get("uid") != 0
    nb = nbformat.read(
        notebook_path(graded["course"], "autograded", ASSIGNMENT, "forged_record"), as_version=4
    )
    assert "forged" not in json.dumps(nb.metadata.get("attncourse", {}))


def test_crashed_students_keep_their_autograded_notebook(graded):
    for student in ("exits", "segfault", "self_sigsegv", "infinite_loop", "malformed_json"):
        path = notebook_path(graded["course"], "autograded", ASSIGNMENT, student)
        assert path.exists(), f"{student}'s autograded notebook was removed"


def test_plain_nbgrader_autograde_gives_the_same_scores(graded):
    assert cell_scores(graded["plain"], ASSIGNMENT) == cell_scores(graded["course"], ASSIGNMENT)


def test_gradebook_rows_are_complete_and_unique(graded):
    db = sqlite3.connect(graded["course"] / "gradebook.db")
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    graded_students = [s for s, (nb, _, _) in graded["students"].items() if nb is not None]
    n_cells = db.execute("SELECT COUNT(*) FROM grade_cells").fetchone()[0]
    assert db.execute("SELECT COUNT(*) FROM submitted_assignment").fetchone()[0] == len(
        graded_students
    )
    assert db.execute("SELECT COUNT(*) FROM grade").fetchone()[0] == n_cells * len(graded_students)
    duplicates = db.execute(
        "SELECT notebook_id, cell_id FROM grade GROUP BY notebook_id, cell_id HAVING COUNT(*) > 1"
    ).fetchall()
    assert duplicates == []


def test_escape_attempts_took_no_effect(graded):
    course = graded["course"]
    assert not (course / "source" / ASSIGNMENT / "pwned.txt").exists()
    assert not (course / "submitted" / "correct" / ASSIGNMENT / "pwned.txt").exists()
    assert not (graded["outside"] / "escaped.txt").exists()
    assert sha(notebook_path(course, "source", ASSIGNMENT)) == graded["source_hash"]
    assert graded["connections"] == 0
    nb = nbformat.read(notebook_path(course, "autograded", ASSIGNMENT, "snoop"), as_version=4)
    report = snoop_report(nb)
    assert report
    for what, outcome in report.items():
        assert outcome in ("FileNotFoundError", "PermissionError", "OSError"), (what, outcome)
    # What it could not do, it could not see either: the paths do not exist for it.
    assert report[str(course / "gradebook.db")] == "FileNotFoundError"
