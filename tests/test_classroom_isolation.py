"""Isolation on the classroom, tried as the real Unix accounts: what one student can do to
another's submission and to the course, and what nbgrader tells a student or instructor when
something is missing or wrong.

Each attempt runs as that account (its uid, gid and groups, as its server would), beside a
control where the rightful account does the same and succeeds.
"""

import os

import nbformat
import pytest
from classroomkit import ADA, BEN, INSTRUCTOR, as_user, nbgrader_as, try_reading

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("classroom")]

ASSIGNMENT = "attention_worksheet"
MARK = "ada's own words"


def inbound(room):
    return room.exchange / room.course_id / "inbound"


def submissions(room, student):
    """Root's view of ``student``'s submission folders in the inbound, oldest first."""
    return sorted(p for p in inbound(room).iterdir() if p.name.startswith(f"{student}+"))


@pytest.fixture(scope="module")
def released(classroom):
    """ASSIGNMENT released; ada fetched it, wrote MARK into it and submitted; ben fetched it."""
    room = classroom
    done = nbgrader_as(room, INSTRUCTOR, "release_assignment", ASSIGNMENT, "--force")
    assert done.returncode == 0, done.stderr
    for student in (ADA, BEN):
        done = nbgrader_as(room, student, "fetch_assignment", ASSIGNMENT)
        assert done.returncode == 0, done.stderr
    path = room.home(ADA) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[-1].source += f"\n# {MARK}"
    nbformat.write(nb, path)
    os.chown(path, *_ids(room, ADA))
    done = nbgrader_as(room, ADA, "submit", ASSIGNMENT)
    assert done.returncode == 0, done.stderr
    return room


def _ids(room, name):
    st = room.home(name).stat()
    return st.st_uid, st.st_gid


def test_a_student_cannot_list_the_inbound_but_the_instructor_can(released):
    room = released
    assert try_reading(room, BEN, [inbound(room)]) == {str(inbound(room)): "EACCES"}
    assert try_reading(room, INSTRUCTOR, [inbound(room)]) == {str(inbound(room)): "ok"}


def test_a_student_cannot_read_change_or_remove_another_submission_even_by_its_name(released):
    room = released
    (folder,) = submissions(room, ADA)
    notebook = folder / f"{ASSIGNMENT}.ipynb"
    assert try_reading(room, BEN, [folder, notebook]) == {
        str(folder): "EACCES",
        str(notebook): "EACCES",
    }
    assert try_reading(room, INSTRUCTOR, [notebook]) == {str(notebook): "ok"}
    before = notebook.read_bytes()
    attempts = {
        "overwrite": ["sh", "-c", f'echo forged > "{notebook}"'],
        "add a file": ["touch", f"{folder}/extra.ipynb"],
        "remove": ["rm", "-rf", str(folder)],
        "rename": ["mv", str(folder), f"{inbound(room)}/{BEN}+{ASSIGNMENT}+stolen"],
    }
    for what, cmd in attempts.items():
        done = as_user(room, BEN, *cmd)
        assert done.returncode != 0, f"ben could {what} ada's submission"
        assert "Permission denied" in done.stderr or "Operation not permitted" in done.stderr
    assert notebook.read_bytes() == before and submissions(room, ADA) == [folder]
    # Control: the instructor's group may read it, and ada herself may still rename her own.
    done = as_user(room, ADA, "mv", str(folder), f"{folder}x")
    assert done.returncode == 0, done.stderr
    os.rename(f"{folder}x", folder)


def test_a_student_cannot_read_the_course_or_another_home(released):
    room = released
    course = room.course
    graded = nbgrader_as(room, INSTRUCTOR, "db", "student", "list")  # makes gradebook.db
    assert graded.returncode == 0, graded.stderr
    for folder in ("autograded", "feedback", "submitted"):
        as_user(room, INSTRUCTOR, "mkdir", "-p", course / folder / ADA)
    private = [
        course,
        course / "nbgrader_config.py",
        course / "gradebook.db",
        course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
        course / "attncourse" / "grading" / "__init__.py",
        course / "autograded",
        course / "feedback" / ADA,
        room.home(ADA),
        room.home(ADA) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
        room.home(INSTRUCTOR),
    ]
    for path in private:
        assert path.exists(), path
    got = try_reading(room, BEN, private)
    assert got == {str(p): "EACCES" for p in private}
    # Control: the instructor reads the course.
    assert set(try_reading(room, INSTRUCTOR, private[:7]).values()) == {"ok"}


def test_a_submission_under_another_students_name_is_refused_at_collect(released):
    room = released
    forged = nbgrader_as(room, BEN, "submit", ASSIGNMENT, "--student", ADA)
    assert forged.returncode == 0, forged.stderr  # nbgrader lets anyone name any student
    assert len(submissions(room, ADA)) == 2
    collected = nbgrader_as(room, INSTRUCTOR, "collect", ASSIGNMENT, "--update")
    assert collected.returncode == 0, collected.stderr
    assert f"its folder belongs to {BEN}, not to student '{ADA}'" in collected.stderr
    got = room.course / "submitted" / ADA / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert MARK in got.read_text(), "ada's own (older) submission is the one collected"


def test_a_submission_carrying_links_and_a_fifo_is_refused_at_collect(released):
    room = released
    (mine,) = [p for p in submissions(room, ADA) if p.stat().st_uid == _ids(room, ADA)[0]]
    later = f"{ADA}+{ASSIGNMENT}+2099-01-01 00:00:00.000000 UTC+handmade"
    folder = inbound(room) / later
    script = (
        f'mkdir "{folder}" && cp "{mine}"/*.ipynb "{mine}/timestamp.txt" "{folder}/" && '
        f'ln -s "{room.course}/gradebook.db" "{folder}/gradebook.ipynb" && '
        f'ln -s "{room.course}/source" "{folder}/source" && mkfifo "{folder}/pipe"'
    )
    done = as_user(room, ADA, "sh", "-c", script)
    assert done.returncode == 0, done.stderr
    collected = nbgrader_as(room, INSTRUCTOR, "collect", ASSIGNMENT, "--update")
    assert collected.returncode == 0, collected.stderr
    for name in ("gradebook.ipynb", "source", "pipe"):
        assert f"{later}/{name}: " in collected.stderr, collected.stderr[-2000:]
    got = sorted(p.name for p in (room.course / "submitted" / ADA / ASSIGNMENT).iterdir())
    assert got == [f"{ASSIGNMENT}.ipynb", "timestamp.txt"]
    as_user(room, ADA, "rm", "-rf", str(folder))


# --- what breaks gets a clear message ----------------------------------------------------


def test_fetching_before_release_says_it_is_not_released(released):
    done = nbgrader_as(released, BEN, "fetch_assignment", "attention_variants")
    assert done.returncode != 0
    assert "Assignment not found at: " in done.stderr
    assert "outbound/attention_variants" in done.stderr
    assert not (released.home(BEN) / "attention_variants").exists()


def test_submitting_an_unknown_assignment_names_the_nearest_one(released):
    done = nbgrader_as(released, BEN, "submit", "attention_worksheat")
    assert done.returncode != 0
    assert "Assignment not found at: " in done.stderr
    assert f"Did you mean: {released.home(BEN) / ASSIGNMENT}" in done.stderr


def test_an_inbound_students_cannot_write_says_so_and_keeps_the_work(released):
    room = released
    folder = inbound(room)
    folder.chmod(0o2755)
    try:
        done = nbgrader_as(room, BEN, "submit", ASSIGNMENT)
    finally:
        folder.chmod(0o3733)
    assert done.returncode != 0
    assert f"You don't have write permissions to the directory: {folder}" in done.stderr
    assert (room.home(BEN) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()
    assert not submissions(room, BEN)
