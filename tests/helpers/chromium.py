"""Debian's Chromium for the browser tests (Playwright drives it; nothing is downloaded by a
test tool): installed with apt-get when missing and we are root, else the test is skipped."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def ensure_chromium():
    """Debian's Chromium at /usr/bin/chromium, installed with apt-get when missing (as root)."""
    if CHROMIUM.exists():
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip(
            f"{CHROMIUM} is missing and cannot be installed here (needs root and apt-get); "
            "install it with `apt-get install chromium`"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    wait = ["-o", "DPkg::Lock::Timeout=600"]
    for cmd in (
        ["apt-get", *wait, "update", "-q"],
        ["apt-get", *wait, "install", "-y", "-q", "chromium"],
    ):
        result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
        if result.returncode:
            pytest.skip(
                f"`{' '.join(cmd)}` failed, Chromium cannot be installed: {result.stderr[-800:]}"
            )
