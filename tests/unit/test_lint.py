"""ruff keeps the Python files and the notebooks clean and formatted."""

import subprocess
import sys
from pathlib import Path

from attncourse.course import ROOT

RUFF = str(Path(sys.executable).with_name("ruff"))


def test_ruff_check_passes_on_code_and_notebooks():
    done = subprocess.run([RUFF, "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, f"ruff check found problems (run `make format`):\n{done.stdout}"


def test_ruff_format_leaves_everything_unchanged():
    done = subprocess.run(
        [RUFF, "format", "--check", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, f"files need formatting (run `make format`):\n{done.stdout}"
