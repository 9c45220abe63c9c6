"""``attncourse feedback ASSIGNMENT``: nbgrader's feedback for every graded submission.

What the feedback shows, and what it never shows (hidden tests, tracebacks, mark schemes),
is decided by :mod:`attncourse.preprocessors.hidehiddentests`, registered in
``nbgrader_config.py``.
"""

import os
from pathlib import Path

from attncourse.constants import FEEDBACK
from attncourse.course import nbgrader


def generate_feedback(course_dir: str | os.PathLike, assignment: str, quiet: bool = False) -> int:
    """``nbgrader generate_feedback`` for every graded submission; print where the files are."""
    result = nbgrader(
        "generate_feedback", assignment, "--force", cwd=course_dir, check=False, quiet=quiet
    )
    folder = Path(course_dir) / FEEDBACK
    files = sorted(folder.glob(f"*/{assignment}/*.html"))
    print(f"{len(files)} feedback files in {folder}/<student>/{assignment}/")
    return result.returncode
