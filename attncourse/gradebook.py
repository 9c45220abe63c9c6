"""Read scores out of an nbgrader gradebook."""

from contextlib import closing
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry


def db_url(course):
    """The default SQLite gradebook URL of a course directory."""
    return f"sqlite:///{Path(course).resolve() / 'gradebook.db'}"


def cell_scores(course, assignment, url=None, course_id="attention"):
    """student -> grade_id -> (score, max_score, needs_manual_grade) for one assignment.

    ``score`` is the manual score when one was given, else the automatic one.
    """
    out = {}
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


def total_scores(course, assignment, url=None, course_id="attention"):
    """student -> (score, max_score) for one assignment."""
    out = {}
    for student, grades in cell_scores(course, assignment, url, course_id).items():
        out[student] = (sum(g[0] for g in grades.values()), sum(g[1] for g in grades.values()))
    return out
