"""Formgrader's list of a notebook's submissions (attncourse.gradebookview) against nbgrader's own.

The gradebook holds every kind of cell and grade the list sums (code and Markdown grade cells,
a Markdown task cell, a grade cell of no maximum), grades automatic, manual, both, neither and
with extra credit, flagged notebooks, a second notebook and a second assignment whose grades
must not count, and a submission with no grade cell at all. Each list must equal nbgrader's,
key for key; a list with one sum wrong (the mistake the comparison must reject) does not.
The PostgreSQL run is in ``make soak`` (its formgrader timings at 1,000 students) and in
``test_gradebook_view_matches_nbgrader_on_postgres`` below.
"""

import itertools
import subprocess
import sys

import pytest
from nbgrader.api import Gradebook

from attncourse.gradebookview import _load_jupyter_server_extension, notebook_submission_dicts
from attncourse.upstream import REPLACED

# one worker: the module's gradebook is built once
pytestmark = pytest.mark.xdist_group("gradebook_view")
NBGRADER_OWN = Gradebook.notebook_submission_dicts
SCORES = [None, 0.0, 0.5, 1.0, 2.0]


def fill(gb):
    """An assignment ``a1`` (notebooks ``n1``, ``n2``) and ``a2`` (``n1``), 12 students."""
    for assignment, notebooks in (("a1", ("n1", "n2")), ("a2", ("n1",))):
        gb.add_assignment(assignment)
        for nb in notebooks:
            gb.add_notebook(nb, assignment)
            gb.add_grade_cell("c1", nb, assignment, max_score=2.0, cell_type="code")
            gb.add_grade_cell("c2", nb, assignment, max_score=1.0, cell_type="code")
            gb.add_grade_cell("w1", nb, assignment, max_score=4.0, cell_type="markdown")
            gb.add_task_cell("t1", nb, assignment, max_score=3.0, cell_type="markdown")
    combos = itertools.cycle(itertools.product(SCORES, SCORES[:3], [None, 0.5], [False, True]))
    for k in range(12):
        student = f"s{k:02d}"
        gb.add_student(student, first_name=f"F{k}", last_name=None if k % 3 else f"L{k}")
        for assignment in ("a1", "a2"):
            if k == 11 and assignment == "a2":
                continue
            gb.add_submission(assignment, student)
            for nb in ("n1", "n2") if assignment == "a1" else ("n1",):
                for cell in ("c1", "c2", "w1", "t1"):
                    auto, manual, extra, needs = next(combos)
                    if k % 5 == 0 and cell.startswith("c"):  # every test passed
                        auto = {"c1": 2.0, "c2": 1.0}[cell]
                    needs = needs and k % 3 != 0  # nothing to grade by hand
                    grade = gb.find_grade(cell, nb, assignment, student)
                    grade.auto_score, grade.manual_score = auto, manual
                    grade.extra_credit, grade.needs_manual_grade = extra, needs
                notebook = gb.find_submission_notebook(nb, assignment, student)
                notebook.flagged = k % 4 == 0
    gb.db.commit()


def compare(gb):
    """(notebook, assignment) -> (nbgrader's list, ours), each keyed by submission id."""
    lists = {}
    for nb, assignment in (("n1", "a1"), ("n2", "a1"), ("n1", "a2"), ("n9", "a1")):
        theirs = {d["id"]: d for d in NBGRADER_OWN(gb, nb, assignment)}
        ours = {d["id"]: d for d in notebook_submission_dicts(gb, nb, assignment)}
        lists[nb, assignment] = theirs, ours
    return lists


def assert_same(lists):
    for (nb, assignment), (theirs, ours) in lists.items():
        assert ours.keys() == theirs.keys(), (nb, assignment)
        for sid, row in theirs.items():
            assert list(ours[sid]) == list(row)  # the keys, in nbgrader's order
            assert ours[sid] == row, (nb, assignment, sid, ours[sid], row)


@pytest.fixture(scope="module")
def sqlite_gradebook(tmp_path_factory):
    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    with Gradebook(f"sqlite:///{path}") as gb:
        fill(gb)
    return f"sqlite:///{path}"


def test_the_list_equals_nbgraders_on_every_kind_of_grade(sqlite_gradebook):
    with Gradebook(sqlite_gradebook) as gb:
        lists = compare(gb)
        assert_same(lists)
    theirs, _ = lists["n1", "a1"]
    assert len(theirs) == 12 and len(lists["n1", "a2"][0]) == 11 and lists["n9", "a1"][0] == {}
    rows = list(theirs.values())  # the data reaches every branch the sums have
    assert {bool(r["failed_tests"]) for r in rows} == {False, True}
    assert {bool(r["needs_manual_grade"]) for r in rows} == {False, True}
    assert {bool(r["flagged"]) for r in rows} == {False, True}


def test_a_wrong_sum_is_told_apart(sqlite_gradebook):
    """The control the comparison must reject: one score counted twice."""
    with Gradebook(sqlite_gradebook) as gb:
        lists = compare(gb)
    theirs, ours = lists["n1", "a1"]
    sid = next(iter(ours))
    ours[sid] = dict(ours[sid], score=ours[sid]["score"] + ours[sid]["task_score"] + 1.0)
    with pytest.raises(AssertionError):
        assert_same({("n1", "a1"): (theirs, ours)})


def test_the_server_extension_puts_the_list_in_place_of_nbgraders(monkeypatch):
    """Loaded by formgrader's Jupyter server, the extension replaces nbgrader's method (and
    only in that process: this test restores it)."""

    class Log:
        lines: list[str] = []

        def info(self, text):
            self.lines.append(text)

    app = type("App", (), {"log": Log()})()
    monkeypatch.setattr(Gradebook, "notebook_submission_dicts", NBGRADER_OWN)
    _load_jupyter_server_extension(app)
    assert Gradebook.notebook_submission_dicts is not NBGRADER_OWN
    assert Gradebook.notebook_submission_dicts.__module__ == "attncourse.gradebookview"
    assert Log.lines
    assert [r.name for r in REPLACED if r.owner == "nbgrader.api.Gradebook"] == [
        "notebook_submission_dicts"
    ]


def test_formgraders_server_is_started_with_the_extension():
    from attncourse.formgrader import lab_command

    assert "--ServerApp.jpserver_extensions=attncourse.gradebookview=True" in lab_command(
        ".", 8888, "t"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import attncourse.gradebookview as m; print(m._jupyter_server_extension_points())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "attncourse.gradebookview" in out.stdout


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.xdist_group("postgres")
def test_gradebook_view_matches_nbgrader_on_postgres():
    from devtools import pgserver

    if pgserver.binaries() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    server = pgserver.PostgresServer().start()
    try:
        with Gradebook(server.url) as gb:
            fill(gb)
            assert_same(compare(gb))
    finally:
        server.stop()
