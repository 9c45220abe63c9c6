"""``nbgrader submit`` for the students of a hub: ``c.ExchangeFactory.submit =
"attncourse_submit.PrivateSubmit"``.

One file with nothing of the course in it (it imports only nbgrader), so that it can be copied
into the students' environment; the classroom puts it on their ``PYTHONPATH``.
"""

import os

from nbgrader.exchange.default import ExchangeSubmit


class PrivateSubmit(ExchangeSubmit):
    """Stock ``nbgrader submit``, then the submission folder made 750: only its student and the
    inbound's group (the instructor's: the inbound is set-group-id) may enter it. Stock nbgrader
    leaves it world-writable, hidden only by its random name."""

    def copy_files(self) -> None:
        super().copy_files()
        os.chmod(os.path.join(self.inbound_path, self.assignment_filename), 0o750)
