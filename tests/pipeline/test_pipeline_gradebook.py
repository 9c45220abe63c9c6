"""The client is the only writer of the gradebook: what a worker's scratch gradebook starts
with, and how one student's autograde results are carried into the course's gradebook."""

import datetime
import sqlite3
from contextlib import closing
from types import SimpleNamespace

import nbformat
import pytest
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from nbgrader.api import Gradebook
from nbgrader.dbutil import ALEMBIC_DIR
from nbgrader.preprocessors import AssignLatePenalties
from sqlalchemy import create_engine
from traitlets.config import Config

from attncourse.gradebook import (
    autograde_results,
    bounded_penalty,
    save_autograde_results,
    write_assignment_definition,
)
from attncourse.gradingsummary import protections_of
from attncourse.handoffs import StudentResult
from attncourse.pipeline import status_of
from attncourse.runrecord import RunRecord
from attncourse.worker.files import read_tree, write_tree

DUE = datetime.datetime(2030, 1, 1)
IDS = "nb", "a1"


def _course_gradebook(url):
    """A gradebook with assignment a1 (one notebook: two tests, an answer, a written answer)."""
    with Gradebook(url, "attention") as gb:
        gb.add_assignment("a1", duedate=DUE)
        gb.add_assignment("other")
        gb.add_notebook("nb", "a1")
        gb.add_grade_cell("t1", *IDS, max_score=2, cell_type="code")
        gb.add_grade_cell("t2", *IDS, max_score=1, cell_type="code")
        gb.add_grade_cell("why", *IDS, max_score=2, cell_type="markdown")
        gb.add_solution_cell("answer", *IDS)
        gb.add_solution_cell("why", *IDS)
        gb.add_source_cell("t1", *IDS, cell_type="code", source="assert f(1) == 2")
        gb.add_student("early")
        gb.add_submission("a1", "early")


def _results(t1=2.0, when=None, comment=None):
    return {
        "timestamp": when,
        "notebooks": {
            "nb": {
                "grades": {"t1": (t1, False), "t2": (1.0, True), "why": (None, True)},
                "comments": {"answer": comment, "why": None},
            }
        },
    }


def _late_penalty(method="none"):
    config = Config()
    config.LateSubmissionPlugin.penalty_method = method
    late = AssignLatePenalties(config=config)
    late.init_plugin()
    return late


def test_workers_gradebook_holds_the_assignment_and_the_roster_but_no_submission(tmp_path):
    """The roster (the gradebook's students and those who handed in) travels for the checks of
    per-student numbers; no submission or grade does."""
    url = f"sqlite:///{tmp_path / 'course.db'}"
    _course_gradebook(url)
    write_assignment_definition(url, "attention", "a1", tmp_path / "scratch.db", ["new", "early"])
    db = sqlite3.connect(tmp_path / "scratch.db")
    count = {
        t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
        for t in (
            "assignment",
            "notebook",
            "grade_cells",
            "solution_cells",
            "source_cell",
            "student",
            "submitted_assignment",
            "grade",
        )
    }
    assert count == {
        "assignment": 1,
        "notebook": 1,
        "grade_cells": 3,
        "solution_cells": 2,
        "source_cell": 1,
        "student": 2,
        "submitted_assignment": 0,
        "grade": 0,
    }
    engine = create_engine(f"sqlite:///{tmp_path / 'scratch.db'}")
    with engine.connect() as scratch:  # stamped with the course's migration, nbgrader's head
        version = MigrationContext.configure(scratch).get_current_revision()
    engine.dispose()
    assert version == ScriptDirectory(ALEMBIC_DIR).get_current_head()
    with closing(Gradebook(f"sqlite:///{tmp_path / 'scratch.db'}", "attention")) as gb:
        assert gb.find_source_cell("t1", *IDS).source == "assert f(1) == 2"
        assert gb.find_assignment("a1").duedate == DUE
        assert sorted(s.id for s in gb.students) == ["early", "new"]
        gb.add_student("s1")
        gb.add_submission("a1", "s1")  # what autograde does in it
        assert autograde_results(gb.db.bind.url.render_as_string(), "a1", "s1")["notebooks"]


@pytest.mark.parametrize(("penalty", "score"), [(-1.0, 3.0), (0.0, 3.0), (1.5, 3.0), (5.0, 3.0)])
def test_late_penalty_is_bounded_as_nbgrader_bounds_it(penalty, score):
    """Fails loudly when nbgrader's AssignLatePenalties changes how it bounds a penalty (it
    does so in a private method, which the course does not call)."""
    notebook = SimpleNamespace(score=score)
    assert bounded_penalty(penalty, score) == _late_penalty()._check_late_penalty(notebook, penalty)


def test_saving_keeps_manual_scores_and_comments(tmp_path):
    url = f"sqlite:///{tmp_path / 'course.db'}"
    _course_gradebook(url)
    with Gradebook(url) as gb:
        save_autograde_results(gb, "a1", "early", _results(t1=0.0), _late_penalty())
        gb.find_grade("t1", *IDS, "early").manual_score = 1.5  # a grader's override
        gb.find_grade("why", *IDS, "early").manual_score = 2.0
        gb.find_comment("why", *IDS, "early").manual_comment = "Both points."
        gb.db.commit()
        save_autograde_results(gb, "a1", "early", _results(comment="flagged"), _late_penalty())
        t1, t2, why = (gb.find_grade(g, *IDS, "early") for g in ("t1", "t2", "why"))
        assert (t1.auto_score, t1.manual_score, t1.score, t1.needs_manual_grade) == (
            2.0,
            1.5,
            1.5,
            True,
        )
        assert (t2.score, t2.needs_manual_grade) == (1.0, True)  # flagged by the worker
        assert (why.score, why.needs_manual_grade) == (2.0, True)
        assert gb.find_comment("why", *IDS, "early").manual_comment == "Both points."
        assert gb.find_comment("answer", *IDS, "early").auto_comment == "flagged"
        assert len(gb.find_assignment("a1").submissions) == 1


def test_saving_creates_the_student_and_applies_the_late_penalty_to_the_whole_score(tmp_path):
    url = f"sqlite:///{tmp_path / 'course.db'}"
    _course_gradebook(url)
    late = DUE + datetime.timedelta(hours=1)
    with Gradebook(url) as gb:
        save_autograde_results(gb, "a1", "new", _results(when=late), _late_penalty("zero"))
        submission = gb.find_submission("a1", "new")
        assert submission.timestamp == late and submission.total_seconds_late == 3600
        nb = gb.find_submission_notebook(*IDS, "new")
        assert nb.score == 3.0 and nb.late_submission_penalty == 3.0
        on_time = _results(when=DUE - datetime.timedelta(hours=1))
        save_autograde_results(gb, "a1", "new", on_time, _late_penalty("zero"))
        assert gb.find_submission_notebook(*IDS, "new").late_submission_penalty is None


def test_files_travel_as_plain_files_and_stay_inside_their_folder(tmp_path):
    src = tmp_path / "src"
    (src / "data").mkdir(parents=True)
    (src / "a.ipynb").write_text("{}")
    (src / "data" / "x.npy").write_bytes(b"\x93NUMPY")
    (src / "link").symlink_to(src / "a.ipynb")
    files = read_tree(src)
    assert set(files) == {"a.ipynb", "data/x.npy"}
    write_tree(tmp_path / "dest", files)
    assert (tmp_path / "dest" / "data" / "x.npy").read_bytes() == b"\x93NUMPY"
    for rel in ("../escaped", "/etc/passwd", "data/../../escaped"):
        with pytest.raises(ValueError):
            write_tree(tmp_path / "dest", {rel: (b"", 0o644)})
    assert not (tmp_path / "escaped").exists()


def test_status_names_the_worst_thing_that_happened():
    assert status_of(StudentResult("s", missing="no a.ipynb submitted")) == (
        "missing",
        "no a.ipynb submitted",
    )
    assert status_of(StudentResult("s", error="boom"))[0] == "error"
    assert (
        status_of(StudentResult("s", record=RunRecord(unreadable="NotJSONError")))[0]
        == "unreadable"
    )
    faults = RunRecord(faults=[{"cell": "p4", "fault": "kernel died"}], repairs=["x"])
    assert status_of(StudentResult("s", record=faults)) == ("faults", "kernel died in p4")
    assert (
        status_of(StudentResult("s", record=RunRecord(repairs=["restored deleted cell t"])))[0]
        == "repaired"
    )
    assert status_of(StudentResult("s", record=RunRecord())) == ("ok", "")


def test_protections_are_listed_by_short_name():
    record = RunRecord(
        protections={
            "mount_namespace": True,
            "network_namespace": True,
            "pid_namespace": False,
            "uid": 200123,
            "rlimits": {"as": 1, "cpu": 2},
        }
    )
    assert protections_of(record) == "fs,net,uid,as,cpu"
    assert protections_of(RunRecord()) == "none"


def test_the_run_record_round_trips_through_the_notebook():
    """What is filled in is stored and read back; the integrity findings travel untouched."""
    nb = nbformat.v4.new_notebook()
    assert RunRecord.of(nb) == RunRecord()
    record = RunRecord(faults=[{"cell": "p1", "fault": "timeout"}], timing={"execute_s": 1.5})
    record.store(nb)
    assert nb.metadata["attncourse"] == {
        "faults": [{"cell": "p1", "fault": "timeout"}],
        "timing": {"execute_s": 1.5},
    }
    nb.metadata["attncourse"]["integrity"] = [{"kind": "x"}]
    again = RunRecord.of(nb)
    again.repairs.append("restored deleted cell t")
    again.store(nb)
    assert RunRecord.of(nb) == RunRecord(
        repairs=["restored deleted cell t"],
        faults=[{"cell": "p1", "fault": "timeout"}],
        timing={"execute_s": 1.5},
        integrity=[{"kind": "x"}],
    )


def test_a_gradebook_write_cut_by_a_database_restart_is_written_again(monkeypatch):
    from types import SimpleNamespace

    from sqlalchemy.exc import IntegrityError, OperationalError

    from attncourse import pipeline

    monkeypatch.setattr(pipeline.time, "sleep", lambda s: None)
    rollbacks = []
    gb = SimpleNamespace(db=SimpleNamespace(rollback=lambda: rollbacks.append(1)))
    calls = []

    def write():
        calls.append(1)
        if len(calls) < 3:  # the server restarting: its connections cut, then refused
            raise OperationalError("INSERT", {}, Exception("server closed the connection"))
        return "written"

    assert pipeline.reconnecting(gb, write) == "written"
    assert len(calls) == 3 and len(rollbacks) == 2

    def clash():  # the data's own error is no reason to write again
        raise IntegrityError("INSERT", {}, Exception("duplicate key"))

    with pytest.raises(IntegrityError):
        pipeline.reconnecting(gb, clash)
