"""Autograde a set of submissions in a scratch course directory and return their scores.

This is how the test suite and the demo run the real ``nbgrader autograde``
on many submissions at once: copy the course, release the assignment (which
records its cells in a fresh gradebook), write the submissions, autograde.
"""

from collections.abc import Iterable
from pathlib import Path

from nbformat import NotebookNode

from attncourse.course import ROOT, nbgrader, scratch_course
from attncourse.gradebook import cell_scores
from devtools.generated import generate
from devtools.submissions import write_submission


def prepare(course_dir: Path, assignments: Iterable[str], root: Path = ROOT) -> Path:
    """A scratch course at ``course_dir`` (the config and ``source/`` of the course at
    ``root``) with ``assignments`` released into its gradebook."""
    course = scratch_course(course_dir, root)
    generate(course, list(assignments))
    return course


def autograde_submissions(
    course_dir: Path,
    assignment: str,
    submissions: dict[str, NotebookNode | str],
    nbgrader_args: tuple[str, ...] = (),
) -> dict[str, dict[str, tuple]]:
    """Autograde ``{student: notebook}`` for ``assignment``; return student -> grade_id -> score.

    Each value of the result maps a grade_id to ``(score, max_score, needs_manual_grade)``;
    ``nbgrader_args`` go to ``nbgrader autograde`` (``--ResilientExecute.timeout=45``).
    """
    course = prepare(course_dir, [assignment])
    for student, nb in submissions.items():
        write_submission(course, student, assignment, nb)
    nbgrader(
        "autograde", assignment, "--force", *nbgrader_args, cwd=course, check=False, quiet=True
    )
    return cell_scores(course, assignment)
