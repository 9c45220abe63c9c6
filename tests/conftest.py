"""Shared pytest set-up: run nbgrader's helpers (alembic) from this venv; torch's threads
shared out among parallel test workers; one cache of generated scratch courses per run; one
fork server per test process, handed down to the graders its tests start; the
fixtures several modules use (the graded toy course, the demo class, a Dask cluster, the
classroom and its hub)."""

import contextlib
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
import torch
from classroomkit import make_classroom, remove_classroom
from sandboxkit import SERVERS
from toy_course import graded_course

from attncourse.constants import PRELOAD, threads_per_kernel
from attncourse.course import venv_path
from attncourse.sandbox.forkclient import FORK_SERVER_ENV
from devtools.generated import CACHE

os.environ["PATH"] = venv_path()
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    # The in-process case tables compute with torch in every worker: the cores are shared out
    # as among grading workers, instead of each worker's thread pool contending for all of them.
    THREADS = threads_per_kernel(int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    torch.set_num_threads(THREADS)
    # So do the kernels of a plain `nbgrader autograde` a test runs (attncourse grade sets its
    # own): with torch's default (the cores) in both workers' kernels, OpenMP's threads spin
    # waiting on cores the other worker holds. Two autogrades of 3 attention_variants solutions
    # side by side on the 2 cores: 53.7 and 52.7 s of CPU with 2 threads a kernel, 44.6 and 43.3
    # with 1 (28.5 s and 23 s of wall).
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(name, str(THREADS))

DASK = str(Path(sys.executable).with_name("dask"))
HEAVY = ("slow", "kernel", "browser")  # the marks of the tests that start kernels
GENERATED = pytest.StashKey[str]()


def pytest_configure(config):
    """One cache of generated scratch courses for the whole run (``devtools/generated.py``):
    made by the process that starts the xdist workers, so that they inherit and share it."""
    if not hasattr(config, "workerinput") and CACHE not in os.environ:
        config.stash[GENERATED] = tempfile.mkdtemp(prefix="attncourse-generated-")
        os.environ[CACHE] = config.stash[GENERATED]


def pytest_collection_finish(session):
    """Each process that runs tests which start kernels starts the course's fork server once
    and hands it down to every grader those tests start (ForkServers.handed_down): stop 47's
    make test ran 26 nbgrader autogrades and 57 grading processes, each starting a server of
    its own (about 7 s of CPU each). The tests of the servers themselves, and an unprivileged
    grader, start their own; make test-fast starts none."""
    config = session.config
    runs_tests = hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", 0)
    kernels = any(item.get_closest_marker(m) for item in session.items for m in HEAVY)
    if runs_tests and kernels and not config.option.collectonly:
        if FORK_SERVER_ENV not in os.environ:
            os.environ[FORK_SERVER_ENV] = SERVERS.handed_down(PRELOAD)


def pytest_collection_modifyitems(items):
    """The slow tests first (``make test`` keeps the collection's order, ``--no-loadscope-reorder``):
    the xdist workers start on the long groups and end on short tests that even out their
    finish, instead of one worker grading a class while the other has nothing left."""
    items.sort(key=lambda item: not any(item.get_closest_marker(m) for m in HEAVY))


@pytest.fixture(scope="session", autouse=True)
def _alembic_head_once():
    """nbgrader runs the ``alembic`` command to learn its migration head each time it creates a
    gradebook (about 2 s of CPU); the head is a constant of the installed nbgrader, so a test
    process asks once (:func:`functools.cache`, the first answer nbgrader's own)."""
    import nbgrader.api

    asked = nbgrader.api.get_alembic_version
    nbgrader.api.get_alembic_version = functools.cache(asked)
    yield
    nbgrader.api.get_alembic_version = asked


def pytest_unconfigure(config):
    folder = config.stash.get(GENERATED, None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(CACHE, None)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DaskCluster:
    """A ``dask scheduler`` and named ``dask worker`` processes (one thread, no nanny, so a
    worker's process is the one to kill) on 127.0.0.1, run from this venv's ``dask``."""

    def __init__(self, base, names):
        self.base = Path(base)
        self.base.mkdir(parents=True, exist_ok=True)
        port = _free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        self.workers = {}
        self.scheduler = self._start(
            "scheduler", "scheduler", "--host=127.0.0.1", f"--port={port}", "--no-dashboard"
        )
        try:
            self._start_workers(names)
        except BaseException:
            self.stop()
            raise

    def _start_workers(self, names):
        for name in names:
            self.workers[name] = self._start(
                name,
                "worker",
                self.address,
                "--nthreads=1",
                "--no-nanny",
                f"--name={name}",
                "--host=127.0.0.1",
                "--no-dashboard",
                f"--local-directory={self.base / name}",
            )
        from distributed import Client

        with Client(self.address, timeout=120) as client:
            client.wait_for_workers(len(names), timeout=180)

    def _start(self, log, *args):
        with open(self.base / f"{log}.log", "wb") as out:
            return subprocess.Popen([DASK, *args], stdout=out, stderr=subprocess.STDOUT)

    def kill(self, name):
        """SIGKILL worker ``name``: it dies mid-task, as a machine that goes away."""
        self.workers[name].send_signal(signal.SIGKILL)
        self.workers[name].wait(timeout=30)

    def stop(self):
        """Stop the scheduler and workers, then kill what they started and left running."""
        started = []
        for process in [*self.workers.values(), self.scheduler]:
            with contextlib.suppress(psutil.NoSuchProcess):
                started += psutil.Process(process.pid).children(recursive=True)
        for process in [*self.workers.values(), self.scheduler]:
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + 20
        for process in [*self.workers.values(), self.scheduler]:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for child in started:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()


@contextlib.contextmanager
def _running_cluster(base):
    cluster = DaskCluster(base, ["w1", "w2"])
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def dask_cluster(tmp_path):
    """A running Dask cluster of two one-thread workers, ``w1`` and ``w2`` (stopped after)."""
    with _running_cluster(tmp_path / "dask") as cluster:
        yield cluster


@pytest.fixture(scope="module")
def module_dask_cluster(tmp_path_factory):
    """The same cluster, started once for a module's tests (each grading run ends its own
    grading processes; the cluster's processes and what they started are stopped after)."""
    with _running_cluster(tmp_path_factory.mktemp("dask")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def graded_toy(tmp_path_factory):
    """A course directory with the toy class autograded, once per test process (shared: do not
    change it; ``course`` is a private copy)."""
    return graded_course(str(tmp_path_factory.getbasetemp()))


@pytest.fixture(scope="session")
def demo_class(tmp_path_factory):
    """The demo class (``attncourse demo``: every assignment released, autograded, with feedback,
    grades, similarity and report), made once per test process (shared: copy it to change it)."""
    from devtools.demo import run_demo

    course = tmp_path_factory.mktemp("demo_class") / "demo"
    run_demo(course)
    return course


@pytest.fixture
def course(graded_toy, tmp_path):
    """A private copy of the graded toy course, to change."""
    return shutil.copytree(graded_toy, tmp_path / "course")


@pytest.fixture(scope="session")
def classroom():
    """The test classroom (real Unix accounts, exchange, course directory), once per run of the
    tests grouped ``classroom``; removed with its accounts after."""
    room = make_classroom()
    try:
        yield room
    finally:
        remove_classroom(room)


@pytest.fixture(scope="session")
def hub(classroom, tmp_path_factory):
    """The classroom's JupyterHub, started once; yields (classroom, seconds it took to start).
    Its log (the users' servers' too) stays in the test run's temporary folder."""
    from classroom.hub import running

    start = time.monotonic()
    with running(classroom, tmp_path_factory.mktemp("hub") / "jupyterhub.log"):
        yield classroom, time.monotonic() - start
