"""Grading by an instructor who is not root: the sandbox's unprivileged path, end to end.

Run as root (as CI does), every other test exercises the privileged sandbox: a
fresh uid per kernel. A course team on a shared server grades as an ordinary
user instead; then the kernel keeps the grader's own uid, so file permissions
protect nothing and the sandbox rests on a user namespace and its mount
namespace alone. This test grades the toy class with the real pipeline as an
unprivileged uid and checks that the snooping student, running as the very
uid that owns the course, still cannot see or change the course, the gradebook,
another student's work or a directory the grader owns outside the course.

The interpreter this suite runs on may sit below a directory the unprivileged
uid cannot enter (pyenv under ``/root``, mode 0700). Then the grading runs in a
private mount namespace where such a directory is replaced by an empty tmpfs
holding just the path to the interpreter, as if Python were installed where
that user can run it; nothing else changes.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from sandboxkit import reachable
from snoop import SNOOP, Listener, snoop_report
from toy_course import ASSIGNMENT, make_course, submission, submit

from attncourse.course import ROOT, notebook_path
from attncourse.gradebook import cell_scores

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("nonroot")]

GRADER = 65534  # "nobody": an uid that owns nothing on the machine


@pytest.fixture(scope="module")
def graded():
    if os.geteuid() != 0:
        pytest.skip(
            f"the suite runs as uid {os.geteuid()}: every grading test already takes "
            "the unprivileged path"
        )
    for tool in ("unshare", "setpriv"):
        if not shutil.which(tool):
            pytest.skip(f"`{tool}` (util-linux) is not installed")
    base = Path(tempfile.mkdtemp(prefix="attncourse-nonroot-"))
    os.chmod(base, 0o755)
    course = make_course(base / "course")
    outside = base / "grader-files"  # the grader's own, outside the course
    outside.mkdir()
    gradebook = course / "gradebook.db"
    listener = Listener()
    snoop = SNOOP.format(
        gradebook=str(gradebook),
        port=listener.port,
        reads=[
            str(notebook_path(course, "source", ASSIGNMENT)),
            str(gradebook),
            str(notebook_path(course, "submitted", ASSIGNMENT, "perfect")),
        ],
        writes=[
            str(gradebook),
            str(course / "source" / ASSIGNMENT / "pwned.txt"),
            str(course / "submitted" / "perfect" / ASSIGNMENT / "pwned.txt"),
            str(outside / "escaped.txt"),
        ],
    )
    students = {
        "perfect": submission(course),
        "wrong": submission(course, scale_answer="def scale(x, d):\n    return x / d\n"),
        "snoop": submission(
            course,
            double_answer=snoop,
        ),
    }
    for student, nb in students.items():
        submit(course, student, nb)
    home = base / "home"
    home.mkdir()
    subprocess.run(["chown", "-R", f"{GRADER}:{GRADER}", str(base)], check=True)
    source_before = notebook_path(course, "source", ASSIGNMENT).read_bytes()

    grade = (
        "import json, sys\n"
        "from attncourse.pipeline import grade\n"
        f"status, _ = grade({ASSIGNMENT!r}, workers=2, course={str(course)!r}, progress=False)\n"
        "sys.exit(status)\n"
    )
    env = {
        "HOME": str(home),
        "USER": "grader",
        "LOGNAME": "grader",
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "LANG": "C.UTF-8",
    }
    drop = ["setpriv", f"--reuid={GRADER}", f"--regid={GRADER}", "--clear-groups"]
    drop += ["env", "-i", *(f"{k}={v}" for k, v in env.items()), sys.executable, "-c", grade]
    script = "\n".join(
        ["set -e", *reachable([sys.executable, ROOT], base), "exec " + shlex.join(drop)]
    )
    run = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        cwd=course,
        capture_output=True,
        text=True,
        timeout=600,
    )
    listener.close()
    summary_path = course / "autograded" / ".attncourse" / ASSIGNMENT / "summary.json"
    yield {
        "run": run,
        "course": course,
        "outside": outside,
        "summary": json.loads(summary_path.read_text()) if summary_path.exists() else None,
        "source_before": source_before,
        "connections": listener.connections,
    }
    shutil.rmtree(base, ignore_errors=True)


def _output(graded):
    run = graded["run"]
    return f"exit {run.returncode}\nstdout:\n{run.stdout[-3000:]}\nstderr:\n{run.stderr[-3000:]}"


def test_an_unprivileged_grader_grades_the_class(graded):
    assert graded["run"].returncode == 0, _output(graded)
    scores = cell_scores(graded["course"], ASSIGNMENT)
    auto = {
        s: {gid: g[0] for gid, g in grades.items() if gid.endswith("_test")}
        for s, grades in scores.items()
    }
    assert auto == {
        "perfect": {"scale_test": 2, "double_test": 1},
        "wrong": {"scale_test": 0, "double_test": 1},
        # its cell raises before `double` is defined (and its imports are a finding)
        "snoop": {"scale_test": 2, "double_test": 0},
    }, _output(graded)


def test_the_kernel_ran_in_a_user_namespace_with_the_graders_uid(graded):
    summary = graded["summary"]
    assert summary is not None, _output(graded)
    for student in summary["students"]:
        p = student["record"]["protections"]
        assert p["user_namespace"] and p["mount_namespace"], (student["student"], p)
        assert p["network_namespace"] and p["pid_namespace"], (student["student"], p)
        assert p["uid"] is None  # no uid to switch to without root: the grader's own
        assert {"as", "cpu", "fsize"} <= set(p["rlimits"]), p["rlimits"]


def test_snooping_as_the_graders_own_uid_found_nothing(graded):
    import nbformat

    course = graded["course"]
    nb = nbformat.read(notebook_path(course, "autograded", ASSIGNMENT, "snoop"), as_version=4)
    report = snoop_report(nb)
    # Same uid as the files' owner: only the namespaces stand in the way, so every path
    # must be missing for the kernel, not merely forbidden, and the port unreachable.
    network = report.pop("network")
    assert set(report.values()) == {"FileNotFoundError"}, report
    assert network in ("ConnectionRefusedError", "OSError"), network
    assert graded["connections"] == 0
    assert not (course / "source" / ASSIGNMENT / "pwned.txt").exists()
    assert not (course / "submitted" / "perfect" / ASSIGNMENT / "pwned.txt").exists()
    assert not (graded["outside"] / "escaped.txt").exists()
    assert (course / "gradebook.db").exists()
    assert notebook_path(course, "source", ASSIGNMENT).read_bytes() == graded["source_before"]
