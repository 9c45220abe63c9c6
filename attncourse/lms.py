"""Classrooms without a hub: release zips for the LMS, and collection of the LMS's download.

Students download ``dist/<assignment>.zip`` (exactly what ``release/<assignment>/``
holds) and upload their notebook to the LMS. The instructor downloads all
submissions as one zip and ``collect_lms`` hands it to ``nbgrader zip_collect``,
whose collector plugin (:class:`LmsCollector`, registered in ``nbgrader_config.py``)
reads the student from each file name:

- Canvas: ``<lastfirst>_[late_]<user id>_<attachment id>_<uploaded name>``; a file
  uploaded twice under one name becomes ``<name>-1.ipynb``.
- Moodle: ``<Full Name>_<participant id>_assignsubmission_file_/<uploaded name>``
  (a folder per student, Moodle >= 3.1) or the same joined into one flat name (older
  Moodle); a second upload of one name becomes ``<name> (1).ipynb``.

A roster CSV maps LMS ids to the course's student ids. Every file that is not
collected is reported with the reason.

Only regular files are collected. :func:`clean_archive` copies the download into
nbgrader's archive folder without the members nbgrader must not extract
(symlinks and other special entries, absolute names, names with ``..``, and
archives inside it that hold any of those or cannot be extracted), and
:func:`plan` refuses whatever on disk is not a regular file, never following it.
"""

import csv
import io
import os
import re
import shutil
import stat
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from nbgrader.coursedir import CourseDirectory
from nbgrader.plugins import FileNameCollectorPlugin
from nbgrader.utils import find_all_files, find_all_notebooks
from traitlets import Unicode

from attncourse.constants import DIST, RELEASE
from attncourse.course import ROOT, nbgrader
from attncourse.plainfiles import WHY, kind_of, refusal
from attncourse.upstream import collect_path

PATTERNS = {
    "moodle": re.compile(
        r"(?:^|/)(?P<name>[^/]+?)_(?P<lms_id>\d+)_assignsubmission_file_/?(?:[^/]+/)*(?P<filename>[^/]+)$"
    ),
    "canvas": re.compile(
        r"(?:^|/)(?:(?P<name>[^/]*?)_)??(?P<late>late_)?(?P<lms_id>\d+)_(?P<rank>\d+)_(?P<filename>[^/]+)$"
    ),
}
# What an LMS or a browser appends to a file uploaded or downloaded twice under one name.
COPY_SUFFIX = re.compile(r"(?:-(?P<canvas>\d+)| \((?P<moodle>\d+)\))$")
# Moodle's participant ids change from one assignment to the next; only a roster makes them stable.
UNSTABLE_IDS = {"moodle"}
# What nbgrader's zip_collect extracts, nested ones included (ExtractorPlugin.zip_ext).
ARCHIVE_EXTS = (".zip", ".gz")


@dataclass
class Entry:
    """What collection decided for one extracted file; ``reason`` is None when it was collected.

    ``student_id`` is known whenever the file name carries an LMS id the roster (if any) knows;
    ``notebook`` only for collected files.
    """

    path: str
    lms: str | None = None
    lms_id: str | None = None
    student_id: str | None = None
    notebook: str | None = None
    late: bool = False
    rank: tuple = ()
    reason: str | None = None


def load_roster(path, lms_column="lms_id", student_column="student_id"):
    """LMS id -> course student id from a CSV (the digits of the LMS column, so Moodle's
    ``Participant 123`` and Canvas's ``ID`` columns work as exported)."""
    roster = {}
    with open(path, newline="", encoding="utf-8-sig") as fh:
        for row in csv.DictReader(fh):
            digits = re.findall(r"\d+", row.get(lms_column) or "")
            student = (row.get(student_column) or "").strip()
            if digits and student:
                roster[digits[-1]] = student
    if not roster:
        raise ValueError(f"{path}: no rows with both {lms_column!r} and {student_column!r}")
    return roster


def match_lms(relpath):
    """(LMS name, regex match) of the first pattern that matches ``relpath``, else (None, None)."""
    for lms, pattern in PATTERNS.items():
        match = pattern.search(relpath)
        if match:
            return lms, match
    return None, None


def parse(relpath, notebooks, roster=None):
    """An :class:`Entry` for one file of an LMS download (path relative to the extracted root)."""
    entry = Entry(relpath)
    lms, match = match_lms(relpath)
    if match is None:
        entry.reason = "file name matches neither the Canvas nor the Moodle pattern"
        return entry
    entry.lms, entry.lms_id = lms, match["lms_id"]
    entry.student_id = entry.lms_id if roster is None else roster.get(entry.lms_id)
    entry.late = bool(match.groupdict().get("late"))
    stem, ext = os.path.splitext(match["filename"])
    copy = COPY_SUFFIX.search(stem)
    if stem not in notebooks and copy and stem[: copy.start()] in notebooks:
        stem = stem[: copy.start()]
    entry.rank = (int(match.groupdict().get("rank") or 0), int(copy and copy[lms] or 0))
    if ext != ".ipynb":
        entry.reason = f"not a notebook ({ext or 'no extension'})"
    elif stem not in notebooks:
        entry.reason = (
            f"notebook {stem}.ipynb is not one of {sorted(n + '.ipynb' for n in notebooks)}"
        )
    elif roster is not None and entry.lms_id not in roster:
        entry.reason = f"{lms} id {entry.lms_id} is not in the roster"
    else:
        entry.notebook = stem
    return entry


def plan(extracted, notebooks, roster=None):
    """relative path -> :class:`Entry` for every file under ``extracted``.

    Of several files one student handed in for one notebook, the newest (highest
    Canvas attachment id, then highest copy suffix) is collected; the others are
    reported as superseded.
    """
    extracted = Path(extracted)
    entries = {}
    for rel, what in _files(extracted):
        entries[rel] = parse(rel, notebooks, roster)
        if what:
            refuse(entries[rel], f"{what}: not collected, never followed ({WHY})")
    newest = {}
    for entry in entries.values():
        if entry.reason is None:
            key = (entry.student_id, entry.notebook)
            if key not in newest or entry.rank > newest[key].rank:
                newest[key] = entry
    for entry in entries.values():
        if entry.reason is None:
            kept = newest[(entry.student_id, entry.notebook)]
            if kept is not entry:
                entry.reason = f"superseded by the newer {kept.path}"
    return entries


def _files(root):
    """(relative path, None or what it is) for every entry under ``root`` that is not a
    folder, sorted; a symlink to a folder counts as an entry, never entered."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):  # never follows a link
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            why = refusal(path)
            if why or not path.is_dir():
                found.append((path.relative_to(root).as_posix(), why))
    return sorted(found)


def refuse(entry, reason):
    """Mark ``entry`` as not collected because of ``reason``."""
    entry.reason, entry.notebook = reason, None
    return entry


def member_refusal(name, mode, link_target=None):
    """Why an archive member may not be extracted, or None: a symlink or other special entry
    (by its Unix mode bits), an absolute name, or a name that climbs out with ``..``."""
    if name.startswith("/") or "\\" in name or re.match(r"[A-Za-z]:", name):
        return "absolute path (or a backslash in its name)"
    if ".." in name.split("/"):
        return "'..' in its path"
    kind = kind_of(mode) if stat.S_IFMT(mode) else None
    if kind:
        target = f" to {link_target!r}" if link_target is not None else ""
        return f"{kind} entry{target}"
    return None


def _zip_refusal(zf, info):
    mode = info.external_attr >> 16
    target = None
    if stat.S_ISLNK(mode) and info.file_size < 4096:  # a zip stores a link's target as its data
        target = zf.read(info).decode("utf-8", "replace")
    return member_refusal(info.filename, mode, target)


def _is_archive(name):
    return name.lower().endswith(ARCHIVE_EXTS)


def _extracted_name(name):
    """The folder nbgrader extracts archive ``name`` into: its name without the extension
    (and without ``.tar`` before ``.gz``), as ``nbgrader.utils.unzip`` names it."""
    stem, ext = os.path.splitext(Path(name).name)
    inner, inner_ext = os.path.splitext(stem)
    return inner if ext == ".gz" and inner_ext == ".tar" else stem


def archive_refusals(data, name):
    """(member, reason) for everything nbgrader must not extract from archive ``data``,
    archives inside it included; one entry for an archive nbgrader cannot extract."""
    found = []
    if zipfile.is_zipfile(io.BytesIO(data)):
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            for info in zf.infolist():
                why = _zip_refusal(zf, info)
                if why is None and _is_archive(info.filename) and not info.is_dir():
                    inner = archive_refusals(zf.read(info), info.filename)
                    found += [(f"{info.filename}/{m}", w) for m, w in inner]
                elif why:
                    found.append((info.filename, why))
        return found
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tf:
            for member in tf.getmembers():
                kind = None
                if member.issym() or member.islnk():
                    kind = f"{'symlink' if member.issym() else 'hard link'} entry to {member.linkname!r}"
                elif not (member.isfile() or member.isdir()):
                    kind = "special file entry"
                why = member_refusal(member.name, 0) or kind
                if why:
                    found.append((member.name, why))
    except tarfile.TarError:
        found.append(("", f"{name} is neither a zip nor a tar archive, which zip_collect extracts"))
    return found


def clean_archive(src, dest):
    """Copy the LMS download ``src`` to ``dest`` without what nbgrader must not extract.

    A zip is copied member by member, each as a plain file or folder; an archive inside it
    is left out whole when :func:`archive_refusals` finds anything in it. Anything else is
    copied as it is. Returns (path as extracted, reason) for each member left out.
    """
    src, dest = Path(src), Path(dest)
    if not zipfile.is_zipfile(src):
        shutil.copy2(src, dest)
        return []
    prefix = _extracted_name(src.name)
    refused = []
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            why = _zip_refusal(zin, info)
            if why is None and _is_archive(info.filename) and not info.is_dir():
                inner = archive_refusals(zin.read(info), info.filename)
                if inner:
                    why = "archive holding " + "; ".join(
                        f"{member or info.filename}: {w}" for member, w in inner
                    )
            if why:
                name = info.filename.replace("\\", "/").lstrip("/")
                refused.append((f"{prefix}/{name}", f"{why}: not extracted ({WHY})"))
                continue
            out = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            out.external_attr = (0o40755 if info.is_dir() else 0o100644) << 16
            if info.is_dir():
                zout.writestr(out, b"")
                continue
            with zin.open(info) as fin, zout.open(out, "w") as fout:
                shutil.copyfileobj(fin, fout)
    return refused


class LmsCollector(FileNameCollectorPlugin):
    """nbgrader zip_collect plugin: the student and notebook of each Canvas or Moodle file.

    Decides for all extracted files at once (see :func:`plan`), so that of two
    uploads of one notebook only the newest is collected.
    """

    roster = Unicode("", help="CSV mapping LMS ids to student ids; empty: the LMS id is used").tag(
        config=True
    )
    roster_lms_column = Unicode("lms_id", help="Roster column holding the LMS id").tag(config=True)
    roster_student_column = Unicode("student_id", help="Roster column holding the student id").tag(
        config=True
    )

    _entries = None

    def _plan(self):
        app = self.parent
        extracted = collect_path(app, app.extracted_directory)
        release = app.coursedir.format_path(
            app.coursedir.release_directory, ".", app.coursedir.assignment_id
        )
        notebooks = {os.path.splitext(n)[0] for n in find_all_notebooks(release)}
        roster = (
            load_roster(self.roster, self.roster_lms_column, self.roster_student_column)
            if self.roster
            else None
        )
        self._root = Path(extracted)
        return plan(extracted, notebooks, roster)

    def collect(self, submitted_file: str) -> dict | None:
        if self._entries is None:
            self._entries = self._plan()
        entry = self._entries.get(Path(submitted_file).relative_to(self._root).as_posix())
        if entry is None or entry.reason:
            self.log.info("Not collected: %s (%s)", submitted_file, entry and entry.reason)
            return None
        return {"student_id": entry.student_id, "file_id": entry.notebook + ".ipynb"}


def collect_lms(
    zip_path: str | os.PathLike,
    assignment: str,
    course: str | os.PathLike = ROOT,
    roster: str | os.PathLike | None = None,
    roster_columns: list[str] | None = None,
) -> tuple[dict, dict | None]:
    """Collect an LMS download into ``submitted/`` with nbgrader zip_collect; return the plan.

    ``roster_columns`` is ``(lms_column, student_column)`` when the roster CSV does
    not use the default ``lms_id`` and ``student_id`` headers.
    """
    course = Path(course)
    archive = course / "downloaded" / assignment / "archive"
    if archive.exists():
        shutil.rmtree(archive)
    archive.mkdir(parents=True)
    refused = clean_archive(zip_path, archive / Path(zip_path).name)
    args = ["zip_collect", assignment, "--force", "--log-level=ERROR"]
    if roster:
        args.append(f"--LmsCollector.roster={Path(roster).resolve()}")
    if roster_columns:
        args.append(f"--LmsCollector.roster_lms_column={roster_columns[0]}")
        args.append(f"--LmsCollector.roster_student_column={roster_columns[1]}")
    nbgrader(*args, cwd=course)
    notebooks = {p.stem for p in (course / RELEASE / assignment).glob("*.ipynb")}
    table = load_roster(roster, *(roster_columns or ())) if roster else None
    entries = plan(course / "downloaded" / assignment / "extracted", notebooks, table)
    for path, reason in refused:
        entries[path] = refuse(parse(path, notebooks, table), reason)
    return entries, table


def report(entries: dict, roster: dict | None = None) -> list[str]:
    """Lines telling the instructor what was collected, what was not and why, who is missing."""
    collected = [e for e in entries.values() if e.reason is None]
    skipped = [e for e in entries.values() if e.reason]
    lines = [f"collected {len(collected)} notebook(s), skipped {len(skipped)} file(s)"]
    for e in sorted(collected, key=lambda e: e.student_id):
        late = "  LATE" if e.late else ""
        lines.append(f"  {e.student_id:<20} <- {e.path}{late}")
    if skipped:
        lines.append("not collected:")
        lines.extend(f"  {e.path}: {e.reason}" for e in skipped)
    if roster is not None:
        collected_ids = {e.student_id for e in collected}
        unusable = sorted({e.student_id for e in skipped if e.student_id} - collected_ids)
        if unusable:
            lines.append(f"nothing collectable (see above) from: {', '.join(unusable)}")
        missing = sorted(set(roster.values()) - {e.student_id for e in entries.values()})
        if missing:
            lines.append(f"no submission from {len(missing)} student(s): {', '.join(missing)}")
    elif any(e.lms in UNSTABLE_IDS for e in collected):
        lines.append(
            "warning: Moodle participant ids differ between assignments; pass a roster "
            "(ROSTER=...) so each student keeps one id all term"
        )
    return lines


def release_zip(
    assignment: str, course: str | os.PathLike = ROOT, dest: str | os.PathLike | None = None
) -> Path:
    """``dist/<assignment>.zip``: what ``release/<assignment>/`` holds, under ``<assignment>/``.

    Skips what nbgrader's exchange would skip (``CourseDirectory.ignore``:
    checkpoints, caches); entries carry a fixed date, so the same release gives
    the same bytes.
    """
    course = Path(course)
    src = course / RELEASE / assignment
    if not src.is_dir():
        raise FileNotFoundError(f"{src} does not exist: run `make release` first")
    dest = Path(dest or course / DIST)
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / f"{assignment}.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel in release_files(src):
            info = zipfile.ZipInfo(f"{assignment}/{rel}", date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, (src / rel).read_bytes(), zipfile.ZIP_DEFLATED)
    return out


def release_files(src):
    """Relative paths of the files nbgrader would release from folder ``src``, sorted."""
    files = find_all_files(str(src), exclude=CourseDirectory().ignore)
    return sorted(Path(f).relative_to(src).as_posix() for f in files)
