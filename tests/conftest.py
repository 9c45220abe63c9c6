"""Shared pytest set-up: run nbgrader's helpers (alembic) from this venv."""

import os

from attncourse.course import venv_path

os.environ["PATH"] = venv_path()
