"""``attncourse scan ASSIGNMENT``: the integrity findings of every submitted notebook, printed.

It reads the course's gradebook, so the assignment must have been released; nothing runs.
"""

import os
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory

from attncourse.integrity.coursenotebook import course_notebook
from attncourse.integrity.findings import Finding, scan_notebook


def scan_submissions(
    course_dir: str | os.PathLike, assignment: str, students: list[str] | None = None
) -> dict[str, dict[str, list[Finding]]]:
    """student -> notebook -> findings for the submitted notebooks of ``assignment`` (for the CLI).

    Uses the course's gradebook, so the assignment must have been released.
    """
    coursedir = CourseDirectory(root=str(Path(course_dir).resolve()))
    submitted = Path(coursedir.root) / coursedir.submitted_directory
    out = {}
    with Gradebook(coursedir.db_url) as gb:
        for path in sorted(submitted.glob(f"*/{assignment}/*.ipynb")):
            student = path.parent.parent.name
            if students and student not in students:
                continue
            info = {"assignment": assignment, "notebook": path.stem}
            try:
                course = course_notebook(coursedir, gb, info)
            except MissingEntry:
                continue
            try:
                nb = nbformat.read(path, as_version=4)
            except Exception as err:
                out.setdefault(student, {})[path.stem] = [
                    Finding(0, None, None, "unreadable", None, f"{type(err).__name__}: {err}")
                ]
                continue
            out.setdefault(student, {})[path.stem] = scan_notebook(nb, course)
    return out


def print_findings(results: dict[str, dict[str, list[Finding]]]) -> int:
    """Print ``scan_submissions``'s result; return the number of findings."""
    count = 0
    for student, notebooks in results.items():
        for notebook, findings in notebooks.items():
            for finding in findings:
                print(f"{student}/{notebook}: {finding.describe()}")
                count += 1
    print(f"{count} integrity findings in {len(results)} submissions")
    return count
