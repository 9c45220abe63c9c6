"""Grading against a real PostgreSQL gradebook, started by the test itself, on a running
Dask cluster: the workers autograde into scratch SQLite gradebooks of their own and the
client alone writes PostgreSQL.

The server runs from a temporary data directory as an unprivileged user
(``initdb`` refuses root), listens on loopback only, and is stopped at the end.
Where PostgreSQL is not installed the test installs Debian's ``postgresql``
(when it runs as root with apt-get), and is skipped, saying why, only where
neither works.
"""

import os
import shutil
import subprocess

import pytest
from toy_course import ASSIGNMENT, class_submissions, make_course, submit

from attncourse.course import nbgrader
from attncourse.gradebook import cell_scores
from attncourse.pipeline import grade
from devtools.pgserver import PostgresServer, binaries

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.xdist_group("postgres")]


def postgres_binaries():
    """(initdb, pg_ctl), installing Debian's postgresql when missing and possible; else skip."""
    if binaries() is None:
        if os.geteuid() != 0 or not shutil.which("apt-get"):
            pytest.skip("PostgreSQL is not installed and cannot be (needs root and apt-get)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True)
        done = subprocess.run(
            ["apt-get", "install", "-y", "-q", "postgresql"], env=env, capture_output=True
        )
        if done.returncode != 0 or binaries() is None:
            pytest.skip(f"apt-get install postgresql failed: {done.stderr.decode()[-300:]}")
    return binaries()


@pytest.fixture(scope="module")
def postgres_url():
    """postgresql+psycopg2:// URL (SQLAlchemy 2.1 defaults to psycopg 3) of a fresh server with an empty ``gradebook`` database."""
    postgres_binaries()
    server = PostgresServer().start()
    try:
        yield server.url
    finally:
        server.stop()


def test_parallel_grading_against_postgres_matches_sqlite(tmp_path, postgres_url, dask_cluster):
    pg_course = make_course(tmp_path / "pg")
    nbgrader(
        "generate_assignment",
        ASSIGNMENT,
        "--force",
        f"--CourseDirectory.db_url={postgres_url}",
        cwd=pg_course,
        quiet=True,
    )
    (pg_course / "gradebook.db").unlink()  # make_course released into SQLite first
    sqlite_course = make_course(tmp_path / "sqlite")
    students = class_submissions(pg_course)
    for course in (pg_course, sqlite_course):
        for student, nb in students.items():
            submit(course, student, nb)

    status, results = grade(
        ASSIGNMENT, course=pg_course, db_url=postgres_url, scheduler=dask_cluster.address
    )
    assert status == 0
    assert {r.worker for r in results.values()} <= {"w1", "w2"}
    assert grade(ASSIGNMENT, workers=2, course=sqlite_course)[0] == 0

    on_postgres = cell_scores(pg_course, ASSIGNMENT, url=postgres_url)
    assert set(on_postgres) == set(students)
    assert on_postgres == cell_scores(sqlite_course, ASSIGNMENT)
    perfect = on_postgres["perfect"]
    assert all(score == points for score, points, manual in perfect.values() if not manual)
    assert not (pg_course / "gradebook.db").exists(), "grading fell back to SQLite"
