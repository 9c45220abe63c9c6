"""A term in small (make soak's run with 50 students): graded on PostgreSQL through the Dask
pipeline while a worker is killed, the client killed and started again, the database
restarted and a worker's disk is full; nothing lost or doubled, every score equal to a serial
grading of the same notebook, the export equal to the roster, nothing left behind."""

import pytest

from tools import pgserver
from tools.soak import run

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.xdist_group("postgres")]


@pytest.mark.xfail(
    reason="open (soak of 12, 2026-11-27): the student sent to the worker whose disk is full ends "
    "as `error` (Dask retries it on the same worker), and a killed worker's fork-server and "
    "kernel folders stay in its TMPDIR",
    strict=False,
)
def test_fifty_students_through_the_faults_are_each_graded_once_as_serial_grading(tmp_path):
    if pgserver.binaries() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    figures = run(50, tmp_path)
    assert figures["failed"] == []
    assert len(figures["faults"]) == 4, figures["faults"]
    assert figures["client_exit"] == 0
