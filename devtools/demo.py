"""``make demo``: the whole instructor workflow on bundled demo submissions, in a scratch course.

The demo course lives in ``.demo/`` (git-ignored) with its own SQLite gradebook,
so it never touches a real term's gradebook. Demo students are defined per
assignment in the course's ``demo/<assignment>.py`` as answer overrides on top of the
instructor's solution (``{}`` is a perfect submission, ``"release"`` the
untouched release); ``dan`` additionally hands in a damaged notebook file. Their written
answers are their own words, never the model answer with its mark scheme: each demo file's
``WRITTEN`` gives, per question, a right, a partly right and a wrong answer
(:func:`in_own_words`). The assignments are published to the demo course's exchange, so
formgrader shows them released, as in a real term; the class's names come from
``demo/roster.csv``, imported with ``nbgrader db student import`` as a real roster would be.
"""

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import nbformat

from attncourse.constants import RELEASE
from attncourse.course import ROOT, assignments, nbgrader, notebook_path
from attncourse.gradebook import cell_scores
from attncourse.status import Status
from devtools.autograde import prepare
from devtools.submissions import solution_submission, write_submission

BROKEN_STUDENT = "dan"
ROSTER = "roster.csv"  # in demo/: id, first and last name of every demo student
RIGHT, PARTLY, WRONG = range(3)  # the answers of a demo file's WRITTEN, per question


def in_own_words(written: dict, level: int) -> dict:
    """grade_id -> a demo student's written answer at ``level`` (RIGHT, PARTLY or WRONG)."""
    return {grade_id: answers[level] for grade_id, answers in written.items()}


def demo_module(assignment: str, root: str | os.PathLike = ROOT) -> ModuleType | None:
    """The course's ``demo/<assignment>.py`` (its STUDENTS and WRITTEN), or None."""
    path = Path(root) / "demo" / f"{assignment}.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(f"demo_{assignment}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def demo_students(assignment: str, root: str | os.PathLike = ROOT) -> dict:
    """student -> answer overrides (or "release") for one assignment, from demo/<assignment>.py
    of the course at ``root``."""
    module = demo_module(assignment, root)
    return module.STUDENTS if module else {}


def import_roster(course: Path, root: str | os.PathLike = ROOT) -> None:
    """Put the demo class's names (``demo/roster.csv`` of the course at ``root``) into the
    gradebook of ``course``, with nbgrader's own ``nbgrader db student import``."""
    nbgrader("db", "student", "import", Path(root) / "demo" / ROSTER, cwd=course, quiet=True)


def write_demo_submissions(
    course: Path, assignment: str, root: str | os.PathLike = ROOT
) -> list[str]:
    """Write every demo student's submission of ``assignment`` (the course at ``root`` has
    the demo students and the solutions) into ``course``; return the student ids."""
    students = demo_students(assignment, root)
    for student, answers in students.items():
        if answers == "release":
            nb = nbformat.read(notebook_path(course, RELEASE, assignment), as_version=4)
        else:
            nb = solution_submission(root, assignment, answers)
        write_submission(course, student, assignment, nb)
    # A notebook that was cut off mid-upload: not valid JSON.
    damaged = nbformat.writes(solution_submission(root, assignment))[:2000]
    write_submission(course, BROKEN_STUDENT, assignment, damaged)
    return sorted([*students, BROKEN_STUDENT])


def run_demo(demo_dir: str | os.PathLike, root: str | os.PathLike = ROOT) -> int:
    """Release, autograde in parallel, feedback, export, similarity and report on a demo
    course made in ``demo_dir`` from the course at ``root``."""
    from attncourse.exchange import publish
    from attncourse.feedback import generate_feedback
    from attncourse.pipeline import grade
    from attncourse.report.page import build_report
    from attncourse.similarity.page import similarity_report

    course = prepare(Path(demo_dir), assignments(root), root)
    import_roster(course, root)
    print(f"demo course: {course}")
    for assignment in assignments(root):
        publish(assignment, course)  # released, as in a term: formgrader finds the exchange
    status = 0
    students, results = {}, {}
    for assignment in assignments(root):
        students[assignment] = write_demo_submissions(course, assignment, root)
        print(f"\n== {assignment}: autograding {len(students[assignment])} demo submissions")
        graded, results[assignment] = grade(assignment, course=course)
        status |= graded
        generate_feedback(course, assignment, quiet=True)
    nbgrader("export", cwd=course, quiet=True)
    for assignment in assignments(root):
        similarity_report(course, assignment)
    report = build_report(course)
    print("\ngrades (autograded score / autograded points; points left for grading by hand):")
    for assignment in assignments(root):
        print_grades(course, assignment, students[assignment], results[assignment])
    print("\nresults:")
    print(f"  autograded notebooks:   {course / 'autograded'}")
    print(f"  feedback (HTML):        {course / 'feedback'}")
    print(f"  grades (nbgrader, LMS): {course / 'grades.csv'}, {course / 'canvas_grades.csv'}")
    print(f"  report:                 {report}")
    print(f"  similarity:             {course / 'reports'}/similarity_<assignment>.html")
    print(f"  gradebook:              {course / 'gradebook.db'}")
    print("  grade the written answers by hand: make formgrader COURSE=.demo")
    return status


def print_grades(course: Path, assignment: str, students: list[str], results: dict) -> None:
    """One line per student: autograded score, points awaiting manual grading, or why none
    (``results``: the run's :class:`~attncourse.handoffs.StudentResult` per student)."""
    scores = cell_scores(course, assignment)
    print(f"  {assignment}")
    for student in students:
        grades = scores.get(student)
        outcome = results[student].outcome if student in results else ""
        if not grades or outcome != Status.GRADED:
            print(f"    {student:8s} not graded ({outcome or 'see the run summary above'})")
            continue
        auto = [g for g in grades.values() if not g[2]]
        manual = [g for g in grades.values() if g[2]]
        print(
            f"    {student:8s} {sum(g[0] for g in auto):6.1f} / {sum(g[1] for g in auto):5.1f}"
            f"   by hand: {sum(g[1] for g in manual):5.1f}"
        )
