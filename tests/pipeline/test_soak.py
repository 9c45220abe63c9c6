"""A term in small: make soak's run with 50 students (drawn, as make soak's 1,000 are, from
the 13-notebook pool, the serial grading of the pool included), graded on PostgreSQL through
the Dask pipeline while a worker is killed, the client killed and started again, the database
restarted and a worker's disk is full; nothing lost or doubled, every score equal to a serial
grading of the same notebook, the export equal to the roster, formgrader's pages within 2 s,
nothing left behind."""

import tempfile
from pathlib import Path

import pytest

from devtools import pgserver
from devtools.soak import run

STUDENTS = 50

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.xdist_group("postgres")]


def test_a_class_through_the_faults_are_each_graded_once_as_serial_grading():
    if pgserver.binaries() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    # A short base, as make soak's: under pytest's tmp_path a kernel's socket path passes the
    # system's 107 bytes (ZMQError: File name too long).
    with tempfile.TemporaryDirectory(prefix="attncourse-soak-") as base:
        figures = run(STUDENTS, Path(base))
    print(figures)  # make test -s, or the failure's report: the soak's figures
    assert figures["failed"] == []
    assert len(figures["faults"]) == 4, figures["faults"]
    assert figures["client_exit"] == 0
    assert figures["moved_from_full_disk"] > 0  # the full disk met a student, who was moved
