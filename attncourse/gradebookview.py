"""Formgrader's list of one notebook's submissions, in time linear in the class.

Formgrader's gradebook view of a notebook (``/formgrader/gradebook/<assignment>/<notebook>``)
fills its table from nbgrader's ``Gradebook.notebook_submission_dicts``. In nbgrader 0.9.6 that
query's "failed tests" subquery filters the grades by a column property made of three
correlated subqueries, which PostgreSQL cannot estimate (46 rows expected, 25,000 found at
1,000 students), so it joins every submitted notebook to every failed grade in a nested loop:
25 million comparisons, 1.9 to 3.4 s at 1,000 students (``make soak``), growing with the
square of the class.

:func:`notebook_submission_dicts` returns the same dictionaries from one query with plain
joins (each grade with its cell) and sums them in Python, the way nbgrader's column properties
define them: a grade's score is its manual score if set, else its automatic score, plus any
extra credit (0 when neither is set); the code, written and task scores are the sums over the
notebook's code grade cells, Markdown grade cells and Markdown task cells, with their maximum
scores; a notebook needs manual grading when one of its grades does, and has failed tests when
an automatic score of a code grade cell is below its maximum. A notebook with none of those
cells is not listed, as in nbgrader. ``tests/pipeline/test_gradebook_view.py`` compares the two
on gradebooks of every kind of cell and grade, on SQLite and PostgreSQL.

The formgrader's Jupyter server loads this module as a server extension
(``jpserver_extensions``: ``make formgrader``, the classroom's instructor servers), which puts
the function in place of nbgrader's method (recorded in :data:`attncourse.upstream.REPLACED`,
whose test fails when nbgrader's method changes).
"""

from collections import defaultdict
from typing import Any


def grade_score(manual: float | None, auto: float | None, extra: float | None) -> float:
    """nbgrader's ``Grade.score``: manual over automatic, plus extra credit; 0 if neither."""
    bonus = extra if extra is not None else 0.0
    if manual is not None:
        return manual + bonus
    if auto is not None:
        return auto + bonus
    return 0.0


def notebook_submission_dicts(gb: Any, notebook_id: str, assignment_id: str) -> list[dict]:
    """One dictionary per submitted notebook ``notebook_id`` of ``assignment_id`` in the
    gradebook ``gb``, with the keys and values of nbgrader's own method."""
    from nbgrader.api import (
        Assignment,
        Grade,
        GradeCell,
        Notebook,
        Student,
        SubmittedAssignment,
        SubmittedNotebook,
        TaskCell,
    )
    from sqlalchemy.orm import aliased

    # GradeCell and TaskCell share nbgrader's base_cell table: each joined under its own alias
    graded, task = aliased(GradeCell, flat=True), aliased(TaskCell, flat=True)
    rows = (
        gb.db.query(
            SubmittedNotebook.id,
            Notebook.name,
            Student.id,
            Student.first_name,
            Student.last_name,
            SubmittedNotebook.flagged,
            Grade.manual_score,
            Grade.auto_score,
            Grade.extra_credit,
            Grade.needs_manual_grade,
            graded.cell_type,
            graded.max_score,
            task.cell_type,
            task.max_score,
        )
        .select_from(SubmittedNotebook)
        .join(SubmittedAssignment, SubmittedAssignment.id == SubmittedNotebook.assignment_id)
        .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
        .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id)
        .join(Student, Student.id == SubmittedAssignment.student_id)
        .join(Grade, Grade.notebook_id == SubmittedNotebook.id)
        .outerjoin(graded, graded.id == Grade.cell_id)
        .outerjoin(task, task.id == Grade.cell_id)
        .filter(Notebook.name == notebook_id, Assignment.name == assignment_id)
        .all()
    )
    found: dict[str, dict] = {}
    sums: dict[str, dict[str, float | None]] = defaultdict(dict)
    for row in rows:
        (sid, name, student, first, last, flagged, manual, auto, extra, needs) = row[:10]
        (grade_type, grade_max, task_type, task_max) = row[10:]
        entry = found.setdefault(
            sid,
            {
                "id": sid,
                "name": name,
                "student": student,
                "first_name": first,
                "last_name": last,
                "needs_manual_grade": False,
                "failed_tests": False,
                "flagged": flagged,
            },
        )
        entry["needs_manual_grade"] = entry["needs_manual_grade"] or bool(needs)
        score = grade_score(manual, auto, extra)
        if grade_type in ("code", "markdown"):
            kind = "code" if grade_type == "code" else "written"
            _add(sums[sid], kind, score, grade_max)
            top = grade_max if grade_max is not None else 0.0
            if grade_type == "code" and auto is not None and auto < top:
                entry["failed_tests"] = True
        if task_type == "markdown":
            _add(sums[sid], "task", score, task_max)
    listed = []
    for sid, entry in found.items():
        parts = sums.get(sid, {})
        if not parts:  # no code or Markdown grade cell, no Markdown task cell: not listed
            continue
        for kind in ("code", "written", "task"):
            entry[f"{kind}_score"] = parts.get(f"{kind}_score") or 0.0
            entry[f"max_{kind}_score"] = parts.get(f"max_{kind}_score") or 0.0
        entry["score"] = sum(parts.get(f"{k}_score") or 0.0 for k in ("code", "written", "task"))
        entry["max_score"] = sum(
            parts.get(f"max_{k}_score") or 0.0 for k in ("code", "written", "task")
        )
        listed.append(entry)
    keys = [
        "id",
        "name",
        "student",
        "first_name",
        "last_name",
        "score",
        "max_score",
        "code_score",
        "max_code_score",
        "written_score",
        "max_written_score",
        "task_score",
        "max_task_score",
        "needs_manual_grade",
        "failed_tests",
        "flagged",
    ]
    return [{key: entry[key] for key in keys} for entry in sorted(listed, key=_by_student)]


def _by_student(entry: dict) -> tuple[str, str]:
    return (str(entry["student"]), str(entry["id"]))


def _add(sums: dict[str, float | None], kind: str, score: float, top: float | None) -> None:
    """Add a grade's score and its cell's maximum (SQL's SUM: None values are skipped)."""
    sums[f"{kind}_score"] = (sums.get(f"{kind}_score") or 0.0) + score
    if top is not None:
        sums[f"max_{kind}_score"] = (sums.get(f"max_{kind}_score") or 0.0) + top
    else:
        sums.setdefault(f"max_{kind}_score", None)


def _notebook_submission_dicts(self: Any, notebook_id: str, assignment_id: str) -> list[dict]:
    return notebook_submission_dicts(self, notebook_id, assignment_id)


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": "attncourse.gradebookview"}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    """In the server that runs formgrader: nbgrader's list of a notebook's submissions is
    computed by :func:`notebook_submission_dicts`."""
    from nbgrader.api import Gradebook

    Gradebook.notebook_submission_dicts = _notebook_submission_dicts
    server_app.log.info("attncourse: formgrader lists a notebook's submissions in linear time")
