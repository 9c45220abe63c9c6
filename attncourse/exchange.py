"""The nbgrader exchange: publish releases, collect submissions, return feedback.

The exchange is a directory that instructors and students both reach
(``c.Exchange.root`` in ``nbgrader_config.py``: ``<course>/exchange`` by default,
a shared directory such as ``/srv/nbgrader/exchange`` on a JupyterHub).
Students use the stock commands, or the Assignments tab of JupyterLab:
``nbgrader fetch_assignment``, ``nbgrader submit``, ``nbgrader fetch_feedback``.

Students write their inbound folder themselves, symlinks included, and name it
``<student>+<assignment>+<time>``; ``nbgrader collect`` is therefore
:class:`PlainFilesCollect` (``c.ExchangeFactory.collect``), which copies regular
files and folders only, never follows a link, and refuses a student id that
formgrader could not show as plain text (its page writes the id into HTML unescaped).

On a hub, where student ids are the students' Unix accounts, anyone can write a
folder named for another student into the inbound: ``owner_must_match`` collects
a submission only from a folder that student's account owns.
"""

import os
import pwd
import re
import subprocess
from logging import Logger

from nbgrader.exchange.default import ExchangeCollect
from nbgrader.utils import ignore_patterns
from traitlets import Bool

from attncourse.course import ROOT, nbgrader
from attncourse.plainfiles import WHY, RefusedFolder, copy_plain_tree
from attncourse.upstream import CollectRecords

# Student ids as hubs and LMSs make them; anything else (<, >, quotes, spaces) is refused.
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]*")


class PlainFilesCollect(CollectRecords, ExchangeCollect):
    """``nbgrader collect`` that copies a submission's regular files and folders and refuses,
    with the reason in the log, every symlink, FIFO, socket or device in it (never followed).

    A submission folder that is itself a symlink is not collected at all, nor one whose
    student id is not a plain id (:data:`STUDENT_ID`), nor, with ``owner_must_match``,
    one that the student's Unix account does not own.
    """

    owner_must_match = Bool(
        False,
        help="Collect a submission only from a folder owned by the Unix account named like its "
        "student (a hub's students are its accounts): another student's forgery is refused and "
        "the student's own newest submission collected instead.",
    ).tag(config=True)

    def record_of(self, path: str, record: dict) -> dict:
        record["forged"] = self.owner_must_match and not owned_by(path, record["username"])
        if record["forged"]:
            self.log.error(
                "Refused the whole submission %s: its folder belongs to %s, not to student %r's "
                "account (a submission made under another student's name); not collected",
                record["filename"],
                owner_name(path),
                record["username"],
            )
        return record

    def newest_first(self, records: list[dict]) -> list[dict]:
        """Newest first, the student's own submissions before any forged one."""
        return sorted(records, key=lambda r: (not r["forged"], r["timestamp"]), reverse=True)

    def init_src(self) -> None:
        super().init_src()
        kept = []
        for record in self.src_records:
            if record["forged"]:
                continue
            if STUDENT_ID.fullmatch(record["username"]):
                kept.append(record)
            else:
                self.log.error(
                    "Refused the whole submission %s: student id %r is not a plain id "
                    "(letters, digits, . _ @ + -); formgrader would write it into its pages as HTML",
                    record["filename"],
                    record["username"],
                )
        self.src_records = kept

    def do_copy(self, src: str, dest: str, log: Logger | None = None) -> None:
        size = self.get_size(src)  # nbgrader's check: links are not counted, nothing is read
        if size > 1000 * self.coursedir.max_dir_size:
            raise RuntimeError(
                f"Directory size is too big. Size is {size}, maximum size is "
                f"{1000 * self.coursedir.max_dir_size}"
            )
        ignore = ignore_patterns(
            exclude=self.coursedir.ignore,
            include=self.coursedir.include,
            max_file_size=self.coursedir.max_file_size,
            log=self.log,
        )
        try:
            refused = copy_plain_tree(src, dest, ignore=ignore)
        except RefusedFolder as e:
            self.log.error("Refused the whole submission %s: %s; not collected", src, e.strerror)
            return
        for entry in refused:
            self.log.warning("Refused %s/%s: %s; not collected, never followed", src, entry, WHY)
        if self.coursedir.groupshared:
            self._share(dest)

    def _share(self, dest):
        """What nbgrader's copy does under ``groupshared``: folders ug+rwx, files ug+rw."""
        for dirname, _, filenames in os.walk(dest):
            paths = [(dirname, 0o2770, 0o2777)]
            paths += [(os.path.join(dirname, name), 0o660, 0o777) for name in filenames]
            for path, add, mask in paths:
                try:
                    os.chmod(path, (os.lstat(path).st_mode | add) & mask)
                except PermissionError:
                    self.log.warning("Could not make %s groupshared", path)


def owned_by(path: str, user: str) -> bool:
    """True when ``path`` (not followed if a link) belongs to the Unix account ``user``."""
    try:
        return os.lstat(path).st_uid == pwd.getpwnam(user).pw_uid
    except (KeyError, OSError):
        return False


def owner_name(path: str) -> str:
    """The name of the account that owns ``path``, or its uid."""
    uid = os.lstat(path).st_uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def publish(assignment: str, course: str | os.PathLike = ROOT) -> subprocess.CompletedProcess:
    """Copy ``release/<assignment>`` to the exchange, replacing an earlier release of it."""
    return nbgrader("release_assignment", assignment, "--force", cwd=course)


def collect(assignment: str, course: str | os.PathLike = ROOT) -> subprocess.CompletedProcess:
    """Copy every student's newest submission from the exchange into ``submitted/``."""
    return nbgrader("collect", assignment, "--update", cwd=course)


def return_feedback(
    assignment: str, course: str | os.PathLike = ROOT
) -> subprocess.CompletedProcess:
    """Put the generated HTML feedback of ``assignment`` where students fetch it."""
    return nbgrader("release_feedback", assignment, cwd=course)
