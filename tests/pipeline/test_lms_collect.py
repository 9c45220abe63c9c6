"""make collect-lms: Canvas and Moodle downloads reach submitted/ through nbgrader zip_collect."""

import io
import shutil
import stat
import zipfile

import nbformat
import pytest

from attncourse import lms
from attncourse.lms import collect_lms, load_roster, parse, report

ASSIGNMENT = "attention_variants"
NOTEBOOKS = {ASSIGNMENT}


def notebook(marker):
    """A tiny notebook whose only cell names the student, so the test can tell copies apart."""
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(f"answer = {marker!r}"))
    return nbformat.writes(nb)


def marker_of(path):
    return nbformat.read(path, as_version=4).cells[0].source


@pytest.fixture
def course(tmp_path):
    """A course folder with the course's config and a one-notebook release of ASSIGNMENT."""
    from attncourse.course import ROOT

    course = tmp_path / "course"
    (course / "release" / ASSIGNMENT).mkdir(parents=True)
    (course / "nbgrader_config.py").write_text((ROOT / "nbgrader_config.py").read_text())
    (course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").write_text(notebook("release"))
    return course


def build_zip(path, files):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


CANVAS = {
    "smithjane_1001_50001_attention_variants.ipynb": notebook("jane"),
    "doejohn_late_1002_50002_attention_variants.ipynb": notebook("john"),
    # Ana uploaded twice in one submission: Canvas renamed the newer upload to -1.
    "garciaana_1003_50003_attention_variants.ipynb": notebook("ana old"),
    "garciaana_1003_50007_attention_variants-1.ipynb": notebook("ana new"),
    "leekim_1004_50004_homework.ipynb": notebook("kim, wrong name"),
    "leekim_1004_50005_notes.pdf": b"%PDF-1.4",
    "index.html": b"<html></html>",
}

MOODLE = {
    "Jane Smith_2001_assignsubmission_file_/attention_variants.ipynb": notebook("jane"),
    "Jane Smith_2001_assignsubmission_file_/attention_variants (1).ipynb": notebook("jane new"),
    "John Doe_2002_assignsubmission_file_/attention_variants.ipynb": notebook("john"),
    "Ana Garcia_2003_assignsubmission_onlinetext_/onlinetext.html": b"<p>see upload</p>",
    "Kim Lee_2004_assignsubmission_file_attention_variants.ipynb": notebook("kim, flat"),
    "__MACOSX/._attention_variants.ipynb": b"junk",
}


def test_canvas_download_lands_in_submitted_with_roster_ids(course, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text(
        'Student,ID,SIS Login ID\n"Smith, Jane",1001,jsmith\n"Doe, John",1002,jdoe\n'
        '"Garcia, Ana",1003,agarcia\n"Lee, Kim",1004,klee\n"Park, Min",1005,mpark\n'
    )
    download = build_zip(tmp_path / "submissions.zip", CANVAS)
    entries, table = collect_lms(
        download, ASSIGNMENT, course, roster, roster_columns=("ID", "SIS Login ID")
    )

    submitted = course / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["agarcia", "jdoe", "jsmith"]
    for student, marker in [("jsmith", "jane"), ("jdoe", "john"), ("agarcia", "ana new")]:
        path = submitted / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        assert marker_of(path) == f"answer = {marker!r}", student
    reasons = {e.path: e.reason for e in entries.values() if e.reason}
    assert set(reasons) == {
        "submissions/garciaana_1003_50003_attention_variants.ipynb",
        "submissions/leekim_1004_50004_homework.ipynb",
        "submissions/leekim_1004_50005_notes.pdf",
        "submissions/index.html",
    }
    assert "superseded" in reasons["submissions/garciaana_1003_50003_attention_variants.ipynb"]
    assert "homework.ipynb is not one of" in reasons["submissions/leekim_1004_50004_homework.ipynb"]
    assert "not a notebook" in reasons["submissions/leekim_1004_50005_notes.pdf"]
    assert "neither the Canvas nor the Moodle" in reasons["submissions/index.html"]

    text = "\n".join(report(entries, table))
    assert "collected 3 notebook(s), skipped 4 file(s)" in text
    assert "jdoe" in text and "LATE" in text.split("jdoe")[1].split("\n")[0]
    assert "nothing collectable (see above) from: klee" in text
    assert "no submission from 1 student(s): mpark" in text


def test_moodle_download_with_folders_and_flat_names(course, tmp_path):
    download = build_zip(tmp_path / "moodle.zip", MOODLE)
    entries, table = collect_lms(download, ASSIGNMENT, course)

    submitted = course / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["2001", "2002", "2004"]
    assert (
        marker_of(submitted / "2001" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb") == "answer = 'jane new'"
    )
    assert (
        marker_of(submitted / "2004" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb") == "answer = 'kim, flat'"
    )
    skipped = sorted(e.path.split("/", 1)[1] for e in entries.values() if e.reason)
    assert skipped == [
        "Ana Garcia_2003_assignsubmission_onlinetext_/onlinetext.html",
        "Jane Smith_2001_assignsubmission_file_/attention_variants.ipynb",
        "__MACOSX/._attention_variants.ipynb",
    ]
    assert "Moodle participant ids differ between assignments" in "\n".join(report(entries))


def test_recollecting_replaces_a_students_earlier_download(course, tmp_path):
    first = build_zip(
        tmp_path / "a.zip", {"smithjane_1001_1_attention_variants.ipynb": notebook("v1")}
    )
    second = build_zip(
        tmp_path / "b.zip", {"smithjane_1001_2_attention_variants.ipynb": notebook("v2")}
    )
    collect_lms(first, ASSIGNMENT, course)
    collect_lms(second, ASSIGNMENT, course)
    path = course / "submitted" / "1001" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert marker_of(path) == "answer = 'v2'"


def test_student_not_in_roster_is_reported_not_collected(course, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("lms_id,student_id\n1001,jsmith\n")
    download = build_zip(
        tmp_path / "s.zip",
        {
            "smithjane_1001_1_attention_variants.ipynb": notebook("jane"),
            "stranger_9999_2_attention_variants.ipynb": notebook("who"),
        },
    )
    entries, _ = collect_lms(download, ASSIGNMENT, course, roster)
    assert sorted(p.name for p in (course / "submitted").iterdir()) == ["jsmith"]
    reasons = [e.reason for e in entries.values() if e.reason]
    assert reasons == ["canvas id 9999 is not in the roster"]


@pytest.mark.parametrize(
    ("name", "lms", "lms_id", "late"),
    [
        ("smithjane_1001_50001_attention_variants.ipynb", "canvas", "1001", False),
        ("smithjane_late_1001_50001_attention_variants.ipynb", "canvas", "1001", True),
        ("late_1001_50001_attention_variants.ipynb", "canvas", "1001", True),  # anonymous grading
        ("1001_50001_attention_variants.ipynb", "canvas", "1001", False),
        ("obrien_mary_ann_1001_50001_attention_variants-2.ipynb", "canvas", "1001", False),
        (
            "x/Mary Ann O'Brien_77_assignsubmission_file_/attention_variants.ipynb",
            "moodle",
            "77",
            False,
        ),
        (
            "Participant_77_assignsubmission_file_/sub/attention_variants.ipynb",
            "moodle",
            "77",
            False,
        ),
    ],
)
def test_file_name_patterns(name, lms, lms_id, late):
    entry = parse(name, NOTEBOOKS)
    assert (entry.lms, entry.lms_id, entry.late, entry.reason) == (lms, lms_id, late, None)
    assert entry.student_id == lms_id and entry.notebook == ASSIGNMENT


def test_moodle_grading_worksheet_works_as_roster(tmp_path):
    """Moodle's worksheet names participants "Participant 2001"; the digits are the LMS id."""
    worksheet = tmp_path / "grades.csv"
    worksheet.write_text(
        "\ufeffIdentifier,Full name,Email address,Status\n"
        "Participant 2001,Jane Smith,jsmith@uni.example,Submitted\n"
        "Participant 2002,John Doe,jdoe@uni.example,No submission\n"
    )
    roster = load_roster(worksheet, "Identifier", "Email address")
    assert roster == {"2001": "jsmith@uni.example", "2002": "jdoe@uni.example"}
    entry = parse(
        "m/Jane Smith_2001_assignsubmission_file_/attention_variants.ipynb", NOTEBOOKS, roster
    )
    assert (entry.student_id, entry.reason) == ("jsmith@uni.example", None)


SOURCE_LINK = "../../../../source/attention_variants/attention_variants.ipynb"


def link_entry(name, target):
    """A zip member that is a symlink (Unix mode S_IFLNK; a zip stores the target as the data)."""
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info, target


def build_zip_with(path, files, links=()):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        for info, data in links:
            zf.writestr(info, data)
    return path


def nested_zip(files=(), links=()):
    buffer = io.BytesIO()
    build_zip_with(buffer, dict(files), links)
    return buffer.getvalue()


def test_symlink_absolute_and_dotdot_entries_are_refused_plain_files_collected(course, tmp_path):
    download = build_zip_with(
        tmp_path / "submissions.zip",
        {
            "smithjane_1001_50001_attention_variants.ipynb": notebook("jane"),
            "/tmp/garciaana_1003_50003_attention_variants.ipynb": notebook("ana, absolute"),
            "../leekim_1004_50004_attention_variants.ipynb": notebook("kim, dotdot"),
            "Min Park_2005_assignsubmission_file_/upload.zip": nested_zip(
                links=[link_entry("attention_variants.ipynb", SOURCE_LINK)]
            ),
        },
        links=[link_entry("doejohn_1002_50002_attention_variants.ipynb", SOURCE_LINK)],
    )
    entries, _ = collect_lms(download, ASSIGNMENT, course)

    submitted = course / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["1001"]
    path = submitted / "1001" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert marker_of(path) == "answer = 'jane'"  # control: the plain upload is collected
    reasons = {e.path: e.reason for e in entries.values() if e.reason}
    link = reasons["submissions/doejohn_1002_50002_attention_variants.ipynb"]
    assert link.startswith(f"symlink entry to {SOURCE_LINK!r}: not extracted")
    assert "regular files and folders" in link
    assert reasons["submissions/tmp/garciaana_1003_50003_attention_variants.ipynb"].startswith(
        "absolute path"
    )
    assert reasons["submissions/../leekim_1004_50004_attention_variants.ipynb"].startswith(
        "'..' in its path"
    )
    nested = reasons["submissions/Min Park_2005_assignsubmission_file_/upload.zip"]
    assert nested.startswith("archive holding attention_variants.ipynb: symlink entry")
    text = "\n".join(report(entries))
    assert "collected 1 notebook(s), skipped 4 file(s)" in text and "symlink entry" in text
    extracted = course / "downloaded" / ASSIGNMENT / "extracted"
    assert not any(p.is_symlink() for p in extracted.rglob("*"))


def test_control_without_the_check_a_symlink_entry_is_collected(course, tmp_path, monkeypatch):
    """Stock extraction writes a symlink entry as a file holding the link's target: collected."""
    monkeypatch.setattr(lms, "clean_archive", lambda src, dest: shutil.copy2(src, dest) and [])
    download = build_zip_with(
        tmp_path / "submissions.zip",
        {},
        links=[link_entry("doejohn_1002_50002_attention_variants.ipynb", SOURCE_LINK)],
    )
    collect_lms(download, ASSIGNMENT, course)
    path = course / "submitted" / "1002" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert path.read_text() == SOURCE_LINK


def test_files_that_are_not_regular_are_never_collected(course, tmp_path):
    extracted = tmp_path / "extracted" / "submissions"
    extracted.mkdir(parents=True)
    (extracted / "smithjane_1001_50001_attention_variants.ipynb").write_text(notebook("jane"))
    (extracted / "doejohn_1002_50002_attention_variants.ipynb").symlink_to("/etc/passwd")
    entries = lms.plan(extracted.parent, NOTEBOOKS)
    reasons = {e.path: e.reason for e in entries.values() if e.reason}
    assert list(reasons) == ["submissions/doejohn_1002_50002_attention_variants.ipynb"]
    assert reasons["submissions/doejohn_1002_50002_attention_variants.ipynb"].startswith(
        "symlink to '/etc/passwd': not collected, never followed"
    )
