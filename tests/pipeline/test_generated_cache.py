"""The run's cache of generated courses (``devtools/generated.py``): a copy is what generating
again writes, and any change to what generation reads generates again."""

import shutil
import sqlite3

import nbformat
import pytest
import tiny_course

import devtools.generated as generated
from attncourse.course import ROOT
from devtools.generated import CACHE, generate

ASSIGNMENT = tiny_course.ASSIGNMENT


def _ungenerated(path):
    """A tiny course with its source and config, not yet generated."""
    (path / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy2(ROOT / "nbgrader_config.py", path / "nbgrader_config.py")
    nbformat.write(
        tiny_course.source_notebook(), path / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    )
    return path


def _cells(course):
    """The gradebook's record of the assignment, without nbgrader's random ids."""
    db = sqlite3.connect(course / "gradebook.db")
    return (
        sorted(
            db.execute(
                "SELECT b.name, b.type, g.max_score, g.cell_type FROM base_cell b"
                " LEFT JOIN grade_cells g ON g.id = b.id"
            ).fetchall()
        )
        + sorted(db.execute("SELECT name, checksum, source FROM source_cell").fetchall())
        + list(db.execute("SELECT version_num FROM alembic_version"))
    )


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE, str(tmp_path / "cache"))
    return tmp_path / "cache"


def _generations(monkeypatch):
    """The nbgrader generate_assignment runs :func:`generate` makes from now on."""
    runs = []
    real = generated.nbgrader

    def counted(*args, **kwargs):
        runs.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(generated, "nbgrader", counted)
    return runs


@pytest.mark.slow
def test_a_copy_is_what_generating_again_writes(tmp_path, cache, monkeypatch):
    runs = _generations(monkeypatch)
    first = _ungenerated(tmp_path / "first")
    generate(first, [ASSIGNMENT])
    assert len(runs) == 1 and len(list(cache.iterdir())) == 1
    second = _ungenerated(tmp_path / "second")
    generate(second, [ASSIGNMENT])
    assert len(runs) == 1, "the same course was generated twice"
    # The control: generating the same course for real writes what the copy holds.
    monkeypatch.delenv(CACHE)
    fresh = _ungenerated(tmp_path / "fresh")
    generate(fresh, [ASSIGNMENT])
    notebook = f"release/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    assert (second / notebook).read_bytes() == (fresh / notebook).read_bytes()
    assert _cells(second) == _cells(fresh) != []


@pytest.mark.parametrize(
    "change",
    [
        lambda course: (course / "nbgrader_config.py").open("a").write("\n# changed\n"),
        lambda course: (course / "source" / ASSIGNMENT / "data.txt").write_text("a file"),
        lambda course: (course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").write_text(
            (course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
            .read_text()
            .replace("assert", "assert  ", 1)
        ),
    ],
    ids=["config", "a file added", "a cell edited"],
)
def test_whatever_generation_reads_changes_the_key(tmp_path, change):
    course = _ungenerated(tmp_path / "course")
    before = generated._key(course, [ASSIGNMENT])
    assert generated._key(course, [ASSIGNMENT]) == before  # the control: the same files
    change(course)
    assert generated._key(course, [ASSIGNMENT]) != before


def test_the_order_of_assignments_is_part_of_the_key(tmp_path):
    course = _ungenerated(tmp_path / "course")
    (course / "source" / "other").mkdir()
    assert generated._key(course, [ASSIGNMENT, "other"]) != generated._key(
        course, ["other", ASSIGNMENT]
    )
