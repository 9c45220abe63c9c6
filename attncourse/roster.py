"""The class roster, read from nbgrader's gradebook through its public API, once per notebook.

The checks of per-student numbers search it when a notebook's answers are not its own
instance's (``attncourse.grading.attention_worksheet.references_classmates.find_classmate``):
opening a gradebook runs alembic, so it is read only then, and at most once per graded notebook.
"""

import functools
import logging

from nbgrader.api import Gradebook

log = logging.getLogger(__name__)


def roster_reader(db_url: str | None):
    """A function returning the ids of the gradebook's students (() without a gradebook)."""

    @functools.cache
    def roster() -> tuple[str, ...]:
        if not db_url:
            return ()
        try:
            with Gradebook(db_url) as gb:
                return tuple(sorted(student.id for student in gb.students))
        except Exception as error:  # noqa: BLE001 - no roster only costs the classmates' names
            log.warning("the class roster could not be read from %s: %r", db_url, error)
            return ()

    return roster
