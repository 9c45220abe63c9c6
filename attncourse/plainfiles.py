"""Submissions are files, not links: symlinks, FIFOs, sockets and devices are refused, never followed.

Every tool that copies a submission follows a symlink and copies what it points
to: ``shutil.copytree`` in ``nbgrader collect``, ``shutil.copy`` when
``nbgrader autograde`` copies ``submitted/<student>/<assignment>/`` into
``autograded/``, and the kernel's working copy of that folder. A student's
``data.txt -> ../../source/<a>/<a>.ipynb`` would hand the kernel the solutions
(or the gradebook); a FIFO aborts the copy, a link to ``/dev/zero`` never ends
it. Here only regular files and folders pass:

- :func:`copy_plain_tree` copies a folder the student controls (the exchange's
  inbound copy, see :mod:`attncourse.exchange`) opening every entry relative to
  its folder with ``O_NOFOLLOW``, so a link swapped in mid-copy is refused too;
- :func:`refuse_submission` removes from a submission folder every entry that is
  not a regular file or folder (the link itself, never its target) and says
  why; ``attncourse grade`` calls it before grading (what it refused travels in the
  job's run record), and nbgrader calls it through :class:`Refusals`, the pre-convert
  hook, before autograde copies the folder. A symlinked notebook is thereby missing,
  never read;
- :class:`~attncourse.preprocessors.refusespecialfiles.RefuseSpecialFiles`, the first
  sanitize preprocessor, checks the folder once more and records every refusal in the
  notebook's metadata.
"""

import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from traitlets.log import get_logger

WHY = "a submission may hold only regular files and folders"
KINDS = {
    stat.S_IFLNK: "symlink",
    stat.S_IFIFO: "FIFO",
    stat.S_IFSOCK: "socket",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
}
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC  # a FIFO must not block the open


class RefusedFolder(OSError):
    """The folder to copy is itself a symlink or special file."""


def kind_of(mode: int) -> str | None:
    """None for a regular file or a folder, else what the entry is (``"symlink"``, ``"FIFO"``, ...)."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return KINDS.get(stat.S_IFMT(mode), "special file")


def describe(path: str | Path, mode: int, dir_fd: int | None = None) -> str:
    """What the entry at ``path`` is, with a symlink's target (read, never followed)."""
    what = kind_of(mode) or "regular file"
    if stat.S_ISLNK(mode):
        try:
            what += f" to {os.readlink(path, dir_fd=dir_fd)!r}"
        except OSError:
            pass
    return what


def refusal(path: str | os.PathLike, dir_fd: int | None = None) -> str | None:
    """Why a collector refuses the entry at ``path`` (read, never followed): what it is, a
    symlink with its target, a FIFO, a socket, a device; None for a regular file or a folder.
    Every collector of files asks this function (or :func:`kind_of`, for an archive's member,
    which has a mode but no path). Raises FileNotFoundError when nothing is there."""
    mode = os.stat(path, dir_fd=dir_fd, follow_symlinks=False).st_mode
    return describe(os.fspath(path), mode, dir_fd) if kind_of(mode) else None


def special_entries(folder: str | os.PathLike) -> list[tuple[str, Path, str]]:
    """(relative path, path, what it is) of every entry under ``folder`` that is not a regular
    file or folder; never descends into or through one."""
    folder = Path(folder)
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):  # os.walk never follows a link
        for name in sorted(dirnames + filenames):
            path = Path(dirpath, name)
            try:
                why = refusal(path)
            except FileNotFoundError:
                continue
            if why:
                found.append((path.relative_to(folder).as_posix(), path, why))
                if name in dirnames:
                    dirnames.remove(name)
    return found


def refuse_submission(folder: str | os.PathLike) -> list[str]:
    """Remove every symlink and special file of the submission ``folder``, never following one.

    The student's folder and ``folder`` itself are checked too: if either is a link
    it is removed (the link, not its target) and nothing else is looked at. Returns
    ``"<relative path>: <what it was>"`` for each removed entry.
    """
    folder = Path(folder)
    refused = []
    for level in (folder.parent, folder):
        try:
            what = refusal(level)
        except FileNotFoundError:
            return []
        if what:
            os.unlink(level)
            refused = [f"{level.name}/: {what} (the submission folder itself)"]
            break
    else:
        for rel, path, what in special_entries(folder):
            os.unlink(path)
            refused.append(f"{rel}: {what}")
    return refused


class Refusals:
    """What was refused of each submission folder before autograde read it, by folder, until
    :class:`~attncourse.preprocessors.refusespecialfiles.RefuseSpecialFiles` writes it into
    that student's run record.

    Called, it is nbgrader's ``pre_convert_hook`` for autograde: :func:`refuse_submission` on
    the student's folder before nbgrader copies it (a refused notebook leaves ``notebooks``,
    so nbgrader scores it as not submitted instead of reading it). ``nbgrader_config.py``
    makes one per nbgrader command and gives it to both the hook and the plugin; a grading
    process makes one per student, holding what the client refused (``before``: folder ->
    entries, from the job's run record).
    """

    def __init__(self, before: Mapping[str, Sequence[str]] | None = None) -> None:
        self._by_folder = {os.path.abspath(k): list(v) for k, v in (before or {}).items()}

    def __deepcopy__(self, memo: dict) -> "Refusals":
        return self  # the hook's and the plugin's: traitlets copies config values, this is shared

    def __call__(
        self,
        assignment: str | None = None,
        student: str | None = None,
        notebooks: list[str] | None = None,
        **_: Any,
    ) -> None:
        log = get_logger()
        if not notebooks:
            return
        folder = Path(notebooks[0]).parent
        for entry in self.refuse(folder):
            log.warning("Refused %s/%s: %s; removed, never followed", folder, entry, WHY)
        gone = [nb for nb in notebooks if not Path(nb).is_file()]
        for nb in gone:
            notebooks.remove(nb)

    def refuse(self, folder: str | os.PathLike) -> list[str]:
        """:func:`refuse_submission` of ``folder``, kept for its notebook's record."""
        refused = refuse_submission(folder)
        self._by_folder.setdefault(os.path.abspath(folder), []).extend(refused)
        return refused

    def of(self, folder: str | os.PathLike) -> list[str]:
        """What was refused of ``folder`` before autograde read its notebook."""
        return list(self._by_folder.get(os.path.abspath(folder), []))


def copy_plain_tree(
    src: str | Path,
    dest: str | Path,
    ignore: Callable[[str, list[str]], Iterable[str]] | None = None,
) -> list[str]:
    """Copy the regular files and folders under ``src`` to ``dest``; never follow a link.

    ``ignore(directory, names)`` works as for ``shutil.copytree`` (it only sees regular
    files and folders). Modes and modification times are kept. Returns
    ``"<relative path>: <what it is>"`` for every entry left out because it is not a
    regular file or folder; raises :class:`RefusedFolder` when ``src`` itself is not a
    folder (a symlink to one included).
    """
    try:
        root = os.open(src, _DIR)
    except OSError as e:
        what = refusal(src) or "regular file"
        raise RefusedFolder(e.errno, f"{what}: {WHY}", str(src)) from e
    refused: list[str] = []
    stack = [(root, Path(dest), "")]
    dirs = [(Path(dest), os.fstat(root))]  # (copy, stat) to stamp once their contents are written
    try:
        while stack:
            fd, target, rel = stack.pop()
            try:
                target.mkdir(parents=True, exist_ok=False)
                names, stats = [], {}
                for name in sorted(os.listdir(fd)):
                    why = refusal(name, fd)
                    if why:
                        refused.append(f"{rel}{name}: {why}")
                    else:
                        names.append(name)
                        stats[name] = os.stat(name, dir_fd=fd, follow_symlinks=False)
                skip = set(ignore(os.path.join(src, rel), names)) if ignore else set()
                for name in names:
                    if name in skip:
                        continue
                    if stat.S_ISDIR(stats[name].st_mode):
                        try:
                            sub = os.open(name, _DIR, dir_fd=fd)
                        except OSError:
                            refused.append(f"{rel}{name}: replaced by a link while being copied")
                            continue
                        stack.append((sub, target / name, f"{rel}{name}/"))
                        dirs.append((target / name, stats[name]))
                    else:
                        why = _copy_file(fd, name, target / name)
                        if why:
                            refused.append(f"{rel}{name}: {why}")
            finally:
                os.close(fd)
    finally:
        for fd, _, _ in stack:
            os.close(fd)
    for path, st in reversed(dirs):
        os.chmod(path, stat.S_IMODE(st.st_mode) | stat.S_IRWXU)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    return refused


def _copy_file(dir_fd: int, name: str, dest: Path) -> str | None:
    """Copy regular file ``name`` of folder ``dir_fd`` to ``dest``; else what it turned into."""
    try:
        fd = os.open(name, _FILE, dir_fd=dir_fd)
    except OSError:
        return "replaced by a link while being copied"
    with os.fdopen(fd, "rb") as fin:
        st = os.fstat(fin.fileno())
        if not stat.S_ISREG(st.st_mode):
            return f"{kind_of(st.st_mode)} (replaced while being copied)"
        out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC, 0o600)
        with os.fdopen(out, "wb") as fout:
            while chunk := fin.read(1 << 20):
                fout.write(chunk)
    os.chmod(dest, stat.S_IMODE(st.st_mode))
    os.utime(dest, ns=(st.st_atime_ns, st.st_mtime_ns))
    return None
