"""Isolation on the classroom, tried as the real Unix accounts: what one student can do to
another's submission and to the course, and what nbgrader tells a student or instructor when
something is missing or wrong.

Each attempt runs as that account (its uid, gid and groups, as its server would), beside a
control where the rightful account does the same and succeeds.
"""

import os

import nbformat
import pytest
from classroomkit import INSTRUCTOR, IVY, JON, as_user, nbgrader_as, try_reading

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("classroom")]

# The term (test_classroom_term) hands in attention_worksheet; these tests never touch it.
ASSIGNMENT = "attention_variants"
MARK = "ivy's own words"


def inbound(room):
    return room.exchange / room.course_id / "inbound"


def submissions(room, student):
    """Root's view of ``student``'s submission folders in the inbound, oldest first."""
    return sorted(p for p in inbound(room).iterdir() if p.name.startswith(f"{student}+"))


@pytest.fixture(scope="module")
def released(classroom):
    """ASSIGNMENT released; ivy fetched it, wrote MARK into it and submitted; jon fetched it."""
    room = classroom
    done = nbgrader_as(room, INSTRUCTOR, "release_assignment", ASSIGNMENT, "--force")
    assert done.returncode == 0, done.stderr
    for student in (IVY, JON):
        done = nbgrader_as(room, student, "fetch_assignment", ASSIGNMENT)
        assert done.returncode == 0, done.stderr
    path = room.home(IVY) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[-1].source += f"\n# {MARK}"
    nbformat.write(nb, path)
    os.chown(path, *_ids(room, IVY))
    done = nbgrader_as(room, IVY, "submit", ASSIGNMENT)
    assert done.returncode == 0, done.stderr
    return room


def _ids(room, name):
    st = room.home(name).stat()
    return st.st_uid, st.st_gid


def test_a_student_cannot_list_the_inbound_but_the_instructor_can(released):
    room = released
    assert try_reading(room, JON, [inbound(room)]) == {str(inbound(room)): "EACCES"}
    assert try_reading(room, INSTRUCTOR, [inbound(room)]) == {str(inbound(room)): "ok"}


def test_a_student_cannot_read_change_or_remove_another_submission_even_by_its_name(released):
    room = released
    (folder,) = submissions(room, IVY)
    notebook = folder / f"{ASSIGNMENT}.ipynb"
    assert try_reading(room, JON, [folder, notebook]) == {
        str(folder): "EACCES",
        str(notebook): "EACCES",
    }
    assert try_reading(room, INSTRUCTOR, [notebook]) == {str(notebook): "ok"}
    before = notebook.read_bytes()
    attempts = {
        "overwrite": ["sh", "-c", f'echo forged > "{notebook}"'],
        "add a file": ["touch", f"{folder}/extra.ipynb"],
        "remove": ["rm", "-rf", str(folder)],
        "rename": ["mv", str(folder), f"{inbound(room)}/{JON}+{ASSIGNMENT}+stolen"],
    }
    for what, cmd in attempts.items():
        done = as_user(room, JON, *cmd)
        assert done.returncode != 0, f"jon could {what} ivy's submission"
        assert "Permission denied" in done.stderr or "Operation not permitted" in done.stderr
    assert notebook.read_bytes() == before and submissions(room, IVY) == [folder]
    # Control: the instructor's group may read it, and ivy herself may still rename her own.
    done = as_user(room, IVY, "mv", str(folder), f"{folder}x")
    assert done.returncode == 0, done.stderr
    os.rename(f"{folder}x", folder)


def test_a_student_cannot_read_the_course_or_another_home(released):
    room = released
    course = room.course
    graded = nbgrader_as(room, INSTRUCTOR, "db", "student", "list")  # makes gradebook.db
    assert graded.returncode == 0, graded.stderr
    for folder in ("autograded", "feedback", "submitted"):
        as_user(room, INSTRUCTOR, "mkdir", "-p", course / folder / IVY)
    private = [
        course,
        course / "nbgrader_config.py",
        course / "gradebook.db",
        course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
        course / "attncourse" / "grading" / "__init__.py",
        course / "autograded",
        course / "feedback" / IVY,
        room.home(IVY),
        room.home(IVY) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
        room.home(INSTRUCTOR),
    ]
    for path in private:
        assert path.exists(), path
    got = try_reading(room, JON, private)
    assert got == {str(p): "EACCES" for p in private}
    # Control: the instructor reads the course.
    assert set(try_reading(room, INSTRUCTOR, private[:7]).values()) == {"ok"}


def test_a_submission_under_another_students_name_is_refused_at_collect(released):
    room = released
    forged = nbgrader_as(room, JON, "submit", ASSIGNMENT, "--student", IVY)
    assert forged.returncode == 0, forged.stderr  # nbgrader lets anyone name any student
    assert len(submissions(room, IVY)) == 2
    collected = nbgrader_as(room, INSTRUCTOR, "collect", ASSIGNMENT, "--update")
    assert collected.returncode == 0, collected.stderr
    assert f"its folder belongs to {JON}, not to student '{IVY}'" in collected.stderr
    got = room.course / "submitted" / IVY / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert MARK in got.read_text(), "ivy's own (older) submission is the one collected"


def test_a_submission_carrying_links_and_a_fifo_is_refused_at_collect(released):
    room = released
    (mine,) = [p for p in submissions(room, IVY) if p.stat().st_uid == _ids(room, IVY)[0]]
    later = f"{IVY}+{ASSIGNMENT}+2099-01-01 00:00:00.000000 UTC+handmade"
    folder = inbound(room) / later
    script = (
        f'mkdir "{folder}" && cp "{mine}"/*.ipynb "{mine}/timestamp.txt" "{folder}/" && '
        f'ln -s "{room.course}/gradebook.db" "{folder}/gradebook.ipynb" && '
        f'ln -s "{room.course}/source" "{folder}/source" && mkfifo "{folder}/pipe"'
    )
    done = as_user(room, IVY, "sh", "-c", script)
    assert done.returncode == 0, done.stderr
    collected = nbgrader_as(room, INSTRUCTOR, "collect", ASSIGNMENT, "--update")
    assert collected.returncode == 0, collected.stderr
    for name in ("gradebook.ipynb", "source", "pipe"):
        assert f"{later}/{name}: " in collected.stderr, collected.stderr[-2000:]
    got = sorted(p.name for p in (room.course / "submitted" / IVY / ASSIGNMENT).iterdir())
    assert got == [f"{ASSIGNMENT}.ipynb", "timestamp.txt"]
    as_user(room, IVY, "rm", "-rf", str(folder))


# --- what breaks gets a clear message ----------------------------------------------------


def test_fetching_before_release_says_it_is_not_released(released):
    done = nbgrader_as(released, JON, "fetch_assignment", "mla_inference")
    assert done.returncode != 0
    assert "Assignment not found at: " in done.stderr
    assert "outbound/mla_inference" in done.stderr
    assert not (released.home(JON) / "mla_inference").exists()


def test_submitting_an_unknown_assignment_names_the_nearest_one(released):
    done = nbgrader_as(released, JON, "submit", "attention_variantz")
    assert done.returncode != 0
    assert "Assignment not found at: " in done.stderr
    assert f"Did you mean: {released.home(JON) / ASSIGNMENT}" in done.stderr


def test_an_inbound_students_cannot_write_says_so_and_keeps_the_work(released):
    room = released
    folder = inbound(room)
    folder.chmod(0o2755)
    try:
        done = nbgrader_as(room, JON, "submit", ASSIGNMENT)
    finally:
        folder.chmod(0o3733)
    assert done.returncode != 0
    assert f"You don't have write permissions to the directory: {folder}" in done.stderr
    assert (room.home(JON) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()
    assert not submissions(room, JON)
