"""``nbgrader export`` for this course: nbgrader's grades.csv plus a Canvas gradebook import file.

Registered as ``c.ExportApp.plugin_class`` in ``nbgrader_config.py``, so the
stock ``nbgrader export`` writes both:

- ``grades.csv`` (or ``--to``): nbgrader's own CSV, one row per student and
  assignment, unchanged;
- ``canvas_grades.csv`` (``--CourseExport.canvas_to``): Canvas's gradebook
  import format — columns ``Student, ID, SIS User ID, SIS Login ID, Section``,
  then one column per graded assignment named ``<name> (<canvas id>)``, a
  ``Points Possible`` row under the header, one row per student with the score
  after late penalty (a student with no submission gets 0, as in grades.csv).

Canvas ids come from a roster, the gradebook CSV Canvas itself exports
(Grades → Export): ``--CourseExport.roster=canvas_export.csv``. Its
``SIS Login ID`` column (``--CourseExport.roster_key``) holds the nbgrader
student id; its ``Student, ID, SIS User ID, SIS Login ID, Section`` are
copied; an assignment column of the roster whose name before `` (id)`` is
the nbgrader assignment id (or is named by ``--CourseExport.canvas_columns``)
gives the Canvas column. Without a roster, rows carry the nbgrader id as SIS
Login ID and assignments are named by their nbgrader id without a Canvas id,
which Canvas imports as new assignments. Students missing from the roster are
listed in the log; Canvas cannot match them.
"""

import csv
import os
import re
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import CsvExportPlugin
from traitlets import Dict, Unicode

from attncourse.course import nbgrader

CANVAS_ID_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
POINTS_POSSIBLE = "    Points Possible"
_COLUMN = re.compile(r"^(?P<name>.*?)\s*\((?P<id>\d+)\)$")


def read_roster(path, key="SIS Login ID"):
    """student id -> the roster's Canvas columns, and the roster's assignment columns."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh))
    columns = list(rows[0]) if rows else []
    students = {}
    for row in rows:
        student = (row.get(key) or "").strip()
        if student and not row.get("Student", "").strip().endswith("Points Possible"):
            students[student] = {col: row.get(col, "") for col in CANVAS_ID_COLUMNS}
    assignment_columns = [col for col in columns if _COLUMN.match(col)]
    return students, assignment_columns


def canvas_column(assignment, assignment_columns, explicit):
    """The Canvas column of an nbgrader assignment: explicit, matched by name, else the bare id."""
    if assignment in explicit:
        return explicit[assignment]
    wanted = assignment.replace("_", " ").casefold()
    for column in assignment_columns:
        name = _COLUMN.match(column).group("name")
        if name.replace("_", " ").casefold() == wanted:
            return column
    return assignment


def canvas_rows(gradebook, assignments, roster, assignment_columns, explicit, only=()):
    """Header, Points Possible row and one row per student (or per ``only``), Canvas's format."""
    header = CANVAS_ID_COLUMNS + [
        canvas_column(a.name, assignment_columns, explicit) for a in assignments
    ]
    rows = [header, [POINTS_POSSIBLE, "", "", "", ""] + [f"{a.max_score:g}" for a in assignments]]
    students = {s.id: s for s in gradebook.students}
    unmatched = []
    for sid in sorted(set(students) | set(roster)):
        if only and sid not in only:
            continue
        ids = roster.get(sid)
        if ids is None:
            unmatched.append(sid)
            student = students[sid]
            name = ", ".join(n for n in (student.last_name, student.first_name) if n) or sid
            ids = {"Student": name, "ID": "", "SIS User ID": "", "SIS Login ID": sid, "Section": ""}
        row = [ids[col] for col in CANVAS_ID_COLUMNS]
        for assignment in assignments:
            try:
                submission = gradebook.find_submission(assignment.name, sid)
            except MissingEntry:
                row.append("0")
                continue
            score = max(0.0, submission.score - (submission.late_submission_penalty or 0.0))
            row.append(f"{score:g}")
        rows.append(row)
    return rows, unmatched


class CourseExport(CsvExportPlugin):
    """nbgrader's CSV export, plus the same grades as a Canvas gradebook import file."""

    canvas_to = Unicode("canvas_grades.csv", help="Canvas import file to write").tag(config=True)
    roster = Unicode("", help="Canvas gradebook export CSV giving Canvas ids").tag(config=True)
    roster_key = Unicode("SIS Login ID", help="roster column holding the nbgrader id").tag(
        config=True
    )
    canvas_columns = Dict(
        {}, help="nbgrader assignment id -> Canvas column, e.g. 'Attention variants (1234)'"
    ).tag(config=True)

    def export(self, gradebook: Gradebook) -> None:
        super().export(gradebook)
        roster, columns = read_roster(self.roster, self.roster_key) if self.roster else ({}, [])
        wanted = {str(a) for a in self.assignment}
        assignments = [
            a
            for a in gradebook.assignments
            if (not wanted or a.name in wanted) and a.num_submissions > 0
        ]
        only = {str(s) for s in self.student}
        rows, unmatched = canvas_rows(
            gradebook, assignments, roster, columns, self.canvas_columns, only
        )
        with open(Path(self.canvas_to), "w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows(rows)
        self.log.info("Exported Canvas gradebook import file %s", self.canvas_to)
        if self.roster and unmatched:
            self.log.warning(
                "Not in the roster %s (Canvas cannot match them): %s", self.roster, unmatched
            )


def export_grades(course_dir: str | os.PathLike, roster: str | None = None) -> int:
    """``nbgrader export`` (this plugin) in ``course_dir``; print the files written."""
    args = [f"--CourseExport.roster={Path(roster).resolve()}"] if roster else []
    result = nbgrader("export", *args, cwd=course_dir, check=False)
    if result.returncode == 0:
        print(
            f"wrote {Path(course_dir) / 'grades.csv'} and {Path(course_dir) / 'canvas_grades.csv'}"
        )
    return result.returncode
