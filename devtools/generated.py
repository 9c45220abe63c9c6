"""``nbgrader generate_assignment`` once per distinct course, then copied: what a test run's many
scratch courses share.

Every scratch course of the test suite is released by ``nbgrader generate_assignment``: an
nbgrader process (about 2.4 s of CPU to start) and, for a fresh gradebook, nbgrader's
``alembic heads`` in another (about 2.2 s) to learn a constant. The suite made 66 such courses,
most of them the same few. When ``ATTNCOURSE_GENERATED_CACHE`` names a folder (the test suite
sets one per run, see ``tests/conftest.py``), :func:`generate` keeps what generation wrote (each
assignment's ``release/`` folder and the gradebook) under a key of everything it reads (the
config and the assignments' source files, in order), and a later course with the same key gets
copies: the same files, byte for byte, as generating again. Without the variable it is plain
``nbgrader generate_assignment``.
"""

import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from attncourse.course import nbgrader

CACHE = "ATTNCOURSE_GENERATED_CACHE"
GRADEBOOK = "gradebook.db"


def _key(course: Path, assignments: Sequence[str]) -> str:
    """A digest of what generation reads: the course's config, and each assignment's source
    files (names and bytes), in the order they are generated into one gradebook."""
    digest = hashlib.sha256((course / "nbgrader_config.py").read_bytes())
    for assignment in assignments:
        digest.update(b"\0assignment\0" + assignment.encode())
        folder = course / "source" / assignment
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest.update(b"\0" + str(path.relative_to(folder)).encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _copy_out(entry: Path, course: Path, assignments: Sequence[str]) -> None:
    for assignment in assignments:
        shutil.copytree(entry / "release" / assignment, course / "release" / assignment)
    shutil.copy2(entry / GRADEBOOK, course / GRADEBOOK)


def _store(cache: Path, key: str, course: Path, assignments: Sequence[str]) -> None:
    """Keep ``course``'s generated files under ``key``: written aside, then renamed into place,
    so a reader in another process sees a whole entry or none."""
    cache.mkdir(parents=True, exist_ok=True)
    aside = Path(tempfile.mkdtemp(dir=cache, prefix=".new-"))
    for assignment in assignments:
        shutil.copytree(course / "release" / assignment, aside / "release" / assignment)
    shutil.copy2(course / GRADEBOOK, aside / GRADEBOOK)
    try:
        os.rename(aside, cache / key)
    except OSError:  # another process stored the same key first: the same files
        shutil.rmtree(aside, ignore_errors=True)


def generate(course: Path, assignments: Sequence[str]) -> None:
    """``nbgrader generate_assignment`` each of ``assignments`` in ``course`` (which has no
    gradebook and no release yet), or copies of an earlier identical generation."""
    cache = os.environ.get(CACHE)
    key = _key(course, assignments) if cache else ""
    if cache and (Path(cache) / key).is_dir():
        _copy_out(Path(cache) / key, course, assignments)
        return
    for assignment in assignments:
        nbgrader("generate_assignment", assignment, "--force", cwd=course, quiet=True)
    if cache:
        _store(Path(cache), key, course, assignments)
