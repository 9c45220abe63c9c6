"""Before anything starts: can the course's accounts reach the course's environment?

Every account's server runs the course's environment (:mod:`classroom.environment` links the
checkout's venv packages into it). A clone inside a folder other accounts cannot enter (a
home, or one ``mktemp -d`` made: mode 700) leaves their servers without nbgrader, and the
hub's own ``nbgrader`` commands fail with ``ModuleNotFoundError``. :func:`check_reach` names
the folder that blocks them, and what to do, before an account or a server is made.
"""

import sys
from pathlib import Path

VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"


class Unreachable(PermissionError):
    """The course's accounts cannot reach its environment (a folder on the way is closed)."""


def closed_folder(path: Path) -> Path | None:
    """The first folder on the way to ``path`` (resolved, ``path`` itself included) that other
    accounts cannot enter or, for ``path``, read; None when every one lets them."""
    real = Path(path).resolve()
    for folder in [*reversed(real.parents), real]:
        mode = folder.stat().st_mode
        if not mode & 0o001 or (folder == real and not mode & 0o004):
            return folder
    return None


def check_reach(venv: Path, checkout: Path) -> None:
    """Raise :class:`Unreachable` if another account cannot reach ``venv``'s packages
    (nbgrader's among them): the folder that blocks them, and what to do."""
    packages = Path(venv) / "lib" / f"python{VERSION}" / "site-packages"
    for needed in (packages, packages / "nbgrader"):
        folder = closed_folder(needed)
        if folder is not None:
            mode = folder.stat().st_mode & 0o777
            raise Unreachable(
                f"the course's accounts cannot reach its environment {venv}: {folder} (mode "
                f"{mode:o}) lets no other account in, so their servers and the hub's nbgrader "
                "commands would run without nbgrader. Clone the course where every account can "
                f"enter (under /srv or /opt, not in a home or a mktemp -d folder: {checkout} is "
                f"in it), make the environment there (make venv), and run make classroom again; "
                f"or open the folder to them: chmod o+rx {folder}"
            )
