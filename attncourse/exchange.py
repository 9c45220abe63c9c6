"""The nbgrader exchange: publish releases, collect submissions, return feedback.

The exchange is a directory that instructors and students both reach
(``c.Exchange.root`` in ``nbgrader_config.py``: ``<course>/exchange`` by default,
a shared directory such as ``/srv/nbgrader/exchange`` on a JupyterHub).
Students use the stock commands, or the Assignments tab of JupyterLab:
``nbgrader fetch_assignment``, ``nbgrader submit``, ``nbgrader fetch_feedback``.
"""

from attncourse.course import ROOT, nbgrader


def publish(assignment, course=ROOT):
    """Copy ``release/<assignment>`` to the exchange, replacing an earlier release of it."""
    return nbgrader("release_assignment", assignment, "--force", cwd=course)


def collect(assignment, course=ROOT):
    """Copy every student's newest submission from the exchange into ``submitted/``."""
    return nbgrader("collect", assignment, "--update", cwd=course)


def return_feedback(assignment, course=ROOT):
    """Put the generated HTML feedback of ``assignment`` where students fetch it."""
    return nbgrader("release_feedback", assignment, cwd=course)
