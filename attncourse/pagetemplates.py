"""Formgrader and feedback pages load nothing from outside the machine.

nbgrader's ``formgrade`` and ``feedback`` templates call nbconvert's ``mathjax()``
macro without an address, so both pages load MathJax from a CDN. This package's
``templates/`` holds a ``mathjax.html.j2`` for each of the two (nbconvert looks in
every Jupyter data path, JUPYTER_PATH first, before its own ``base``): formgrader
loads MathJax from the Jupyter server (``jupyter-server-mathjax``), and the
feedback loads none, its math being MathML already (:mod:`attncourse.safemarkdown`).
As the macro is called in each page's ``<head>``, it also sets the page's
Content-Security-Policy: formgrader's images only inline, its scripts, fonts and
requests only from the server; the feedback no script at all.
``nbgrader_config.py`` calls :func:`use_offline_templates`, so plain nbgrader and
the formgrader server both find them.

The feedback page itself is the course's ``feedback/contents.html.j2``, which extends
nbgrader's: its contents list names the parts and a written answer not graded yet reads
"awaiting grading" (:mod:`attncourse.preprocessors.partcontents`). nbgrader renders feedback
with ``GenerateFeedback.exporter_class``:
:class:`attncourse.feedbackexporter.FeedbackExporter` in the course's config.
"""

import os
from pathlib import Path

TEMPLATES = Path(__file__).with_name("templates")


def use_offline_templates(environ=os.environ) -> None:
    """Put this package's templates first on ``JUPYTER_PATH`` (once)."""
    paths = [p for p in environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    if str(TEMPLATES) not in paths:
        environ["JUPYTER_PATH"] = os.pathsep.join([str(TEMPLATES), *paths])
