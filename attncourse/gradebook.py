"""Read scores out of an nbgrader gradebook, and carry one student's autograde results
from a worker's scratch gradebook into the course's."""

import warnings
from contextlib import closing
from pathlib import Path

from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from nbgrader.api import Base, Gradebook, MissingEntry
from nbgrader.dbutil import ALEMBIC_DIR
from sqlalchemy import create_engine, select, true
from sqlalchemy.exc import SAWarning

from attncourse.constants import GRADEBOOK
from attncourse.course import configured_course_id


def db_url(course):
    """The default SQLite gradebook URL of a course directory."""
    return f"sqlite:///{Path(course).resolve() / GRADEBOOK}"


def cell_scores(course, assignment, url=None, course_id=None):
    """student -> grade_id -> (score, max_score, needs_manual_grade) for one assignment.

    ``score`` is the manual score when one was given, else the automatic one. ``course_id``:
    by default the one the course's ``nbgrader_config.py`` gives.
    """
    out = {}
    course_id = course_id or configured_course_id(course)
    with closing(Gradebook(url or db_url(course), course_id)) as gb:
        for student in gb.students:
            try:
                submission = gb.find_submission(assignment, student.id)
            except MissingEntry:
                continue
            grades = {}
            for nb in submission.notebooks:
                for grade in nb.grades:
                    grades[grade.name] = (grade.score, grade.max_score, grade.needs_manual_grade)
            out[student.id] = grades
    return out


def total_scores(course, assignment, url=None, course_id=None):
    """student -> (score, max_score) for one assignment."""
    out = {}
    for student, grades in cell_scores(course, assignment, url, course_id).items():
        out[student] = (sum(g[0] for g in grades.values()), sum(g[1] for g in grades.values()))
    return out


def write_assignment_definition(url, course_id, assignment, dest, students=()):
    """Write a SQLite gradebook at ``dest`` holding only ``assignment``'s definition from ``url``.

    It is the gradebook a worker autogrades one student into: the assignment, its notebooks
    and their grade, solution, task and source cells, and the class roster (the gradebook's
    student rows and the ids in ``students`` it lacks, which the checks of per-student
    numbers search), rows copied as they are (no submission). Raises ``MissingEntry`` when ``url`` has no such assignment.
    """
    t = Base.metadata.tables
    with closing(Gradebook(url, course_id)) as gb:
        gb.find_assignment(assignment)
        (row,) = _rows(gb, t["assignment"], t["assignment"].c.name == assignment)
        rows = {"course": _rows(gb, t["course"], t["course"].c.id == row["course_id"])}
        rows["assignment"] = [row]
        rows["student"] = _rows(gb, t["student"], true())
        known = {r["id"] for r in rows["student"]}
        empty = dict.fromkeys(t["student"].c.keys())
        rows["student"] += [{**empty, "id": s} for s in sorted(set(students) - known)]
        rows["notebook"] = _rows(gb, t["notebook"], t["notebook"].c.assignment_id == row["id"])
        notebooks = [r["id"] for r in rows["notebook"]]
        rows["base_cell"] = _rows(gb, t["base_cell"], t["base_cell"].c.notebook_id.in_(notebooks))
        cells = [r["id"] for r in rows["base_cell"]]
        for name in ("grade_cells", "solution_cells", "task_cells"):
            rows[name] = _rows(gb, t[name], t[name].c.id.in_(cells))
        rows["source_cell"] = _rows(
            gb, t["source_cell"], t["source_cell"].c.notebook_id.in_(notebooks)
        )
        version = MigrationContext.configure(gb.db.connection()).get_current_revision()
    # nbgrader's tables, stamped with the course's migration through alembic's own API (not
    # by Gradebook(), which runs the `alembic` command, often not on the PATH, to learn it).
    engine = create_engine(f"sqlite:///{dest}")
    try:
        Base.metadata.create_all(engine)
        with engine.begin() as db:
            MigrationContext.configure(db).stamp(ScriptDirectory(ALEMBIC_DIR), version)
            for name, table_rows in rows.items():  # parents first
                if table_rows:
                    db.execute(t[name].insert(), table_rows)
    finally:
        engine.dispose()


def _rows(gb, table, where):
    return [dict(r) for r in gb.db.execute(select(table).where(where)).mappings()]


def autograde_results(url, assignment, student):
    """What autograde wrote for one student, as plain data (read from a worker's gradebook).

    ``{"timestamp": datetime or None, "notebooks": {notebook: {"grades": {cell: (auto_score,
    needs_manual_grade)}, "comments": {cell: auto_comment}, "flagged": bool}}}``
    """
    with closing(Gradebook(url)) as gb:
        submission = gb.find_submission(assignment, student)
        notebooks = {
            nb.name: {
                "grades": {g.name: (g.auto_score, g.needs_manual_grade) for g in nb.grades},
                "comments": {c.name: c.auto_comment for c in nb.comments},
                "flagged": bool(nb.flagged),
            }
            for nb in submission.notebooks
        }
        return {"timestamp": submission.timestamp, "notebooks": notebooks}


def save_autograde_results(gb, assignment, student, results, late_penalty):
    """Write ``results`` (:func:`autograde_results`) into the gradebook ``gb``, as autograde
    would have: automatic scores and comments replaced, manual scores and comments kept; a
    notebook autograde flagged (an integrity finding) is flagged, a grader's flag is kept.

    A grade with a manual score still needs review (as nbgrader's ``SaveAutoGrades`` says);
    ``late_penalty`` is nbgrader's ``AssignLatePenalties`` (with its plugin initialised),
    applied per notebook to the score the gradebook now gives, manual scores included.
    """
    gb.update_or_create_student(student)
    when = {"timestamp": results["timestamp"]} if results["timestamp"] else {}
    with warnings.catch_warnings():  # nbgrader's add_submission autoflushes mid-construction
        warnings.simplefilter("ignore", SAWarning)
        submission = gb.update_or_create_submission(assignment, student, **when)
    notebooks = [nb for nb in submission.notebooks if nb.name in results["notebooks"]]
    for nb in notebooks:
        saved = results["notebooks"][nb.name]
        for grade in nb.grades:
            if grade.name in saved["grades"]:
                grade.auto_score, needs_review = saved["grades"][grade.name]
                grade.needs_manual_grade = needs_review or grade.manual_score is not None
        for comment in nb.comments:
            if comment.name in saved["comments"]:
                comment.auto_comment = saved["comments"][comment.name]
        nb.flagged = bool(nb.flagged or saved.get("flagged"))
    gb.db.commit()  # the notebooks' scores below are read afresh, with these grades
    for nb in notebooks:
        nb.late_submission_penalty = None
        late = submission.total_seconds_late
        if late > 0:
            penalty = late_penalty.plugin_inst.late_submission_penalty(student, nb.score, late)
            if penalty is not None:
                nb.late_submission_penalty = bounded_penalty(penalty, nb.score)
    gb.db.commit()


def bounded_penalty(penalty, score):
    """A late penalty kept within [0, score], as nbgrader's ``AssignLatePenalties`` keeps it
    (it has no public function for this; ``tests/pipeline/test_pipeline_gradebook.py`` compares)."""
    return 0 if penalty < 0 else min(penalty, score)
