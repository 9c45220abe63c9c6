"""``make soak``: a term of a thousand students on PostgreSQL, graded while things fail.

A class of ``--students`` (1,000) synthetic students, each drawing one notebook from a finite
pool made from the case tables of ``attention_worksheet`` (the cheapest assignment to grade:
the fewest judge requests per notebook, no experiment to recompute): the full solution,
correct alternatives, named wrong answers, the blank release, an unreadable file and two
hostile notebooks; some hand in late, some hand in again after the first grading. They are
graded by ``attncourse grade`` (the Dask pipeline) on a cluster of two workers into a
PostgreSQL gradebook that the run starts and stops itself, while faults come on a schedule
(by the share of the class graded): a worker killed, the grading client killed and started
again for the students it had not saved, the database restarted, a worker whose disk is
full. Afterwards it checks that every student was graded exactly once (one summary line and
one gradebook row each, resubmissions twice), each score equals a serial ``nbgrader
autograde`` of the same notebook (each distinct notebook of the pool graded once: students
are drawn from the pool, so that is every notebook there is), the export's rows equal the
roster, formgrader's pages for the assignment (a JupyterLab server on the course's PostgreSQL
gradebook, timed over HTTP: each page and the API call that fills it) load within 2 s,
and no process, kernel or temporary directory is left behind. It prints the figures and
exits non-zero if a check failed.
"""

import argparse
import json
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path[:0] = [
    str(Path(__file__).resolve().parent.parent),
    str(Path(__file__).resolve().parent.parent / "tests" / "helpers"),
]

from attncourse.course import ROOT, nbgrader, notebook_path  # noqa: E402
from attncourse.gradebook import cell_scores  # noqa: E402
from devtools import hostile  # noqa: E402
from devtools.autograde import prepare  # noqa: E402
from devtools.cluster import FaultyCluster, leftovers  # noqa: E402
from devtools.pgserver import PostgresServer  # noqa: E402
from devtools.submissions import solution_submission, write_submission  # noqa: E402

ASSIGNMENT = "attention_worksheet"
ON_TIME, LATE = "2026-11-20 12:00:00 UTC", "2026-11-29 12:00:00 UTC"
DUE = "2026-11-25 12:00:00"
LINE = re.compile(r"^\s+(\w+)\s+(s\d{4}) \(")


def pool(root: Path = ROOT) -> dict:
    """name -> notebook (or raw bytes) of every distinct submission the class draws from."""
    from casetable import load

    table = load(ASSIGNMENT)
    solution = solution_submission(root, ASSIGNMENT)
    cases = [c for c in table.cases if not c.alone]
    wrong = [c for c in cases if not c.correct][:6]
    right = [c for c in cases if c.correct][:2]
    notebooks = {"correct": solution}
    notebooks |= {
        f"wrong:{c.name}": solution_submission(root, ASSIGNMENT, c.answers) for c in wrong
    }
    notebooks |= {
        f"right:{c.name}": solution_submission(root, ASSIGNMENT, c.answers) for c in right
    }
    notebooks["blank"] = _release(root)
    notebooks["unreadable"] = '{"cells": [ this is not JSON'
    notebooks["hostile:cells"] = hostile.many_cells(solution, 1_000)
    notebooks["hostile:bomb"] = hostile.parse_bomb(solution, cells=6)
    return notebooks


def _release(root):
    import nbformat

    return nbformat.read(notebook_path(root, "release", ASSIGNMENT), as_version=4)


def serial_scores(base: Path, notebooks: dict) -> dict:
    """pool name -> {grade id: score}: each notebook graded once by plain ``nbgrader autograde``."""
    course = prepare(base / "serial", [ASSIGNMENT])
    names = {f"p{k:02d}": name for k, name in enumerate(notebooks)}
    for student, name in names.items():
        write_submission(course, student, ASSIGNMENT, notebooks[name])
    nbgrader("autograde", ASSIGNMENT, "--force", cwd=course, check=False, quiet=True)
    scores = cell_scores(course, ASSIGNMENT)
    return {name: _auto(scores.get(student, {})) for student, name in names.items()}


def _auto(grades: dict) -> dict:
    return {gid: g[0] for gid, g in grades.items()}


def class_of(n: int, names: list[str], rng: random.Random) -> dict:
    """student -> [pool names handed in, in order]: about 8 % late (same notebook, later
    timestamp), 5 % hand in twice."""
    drawn = {f"s{k:04d}": [rng.choice(names)] for k in range(n)}
    for student in rng.sample(sorted(drawn), max(1, n // 20)):
        drawn[student].append(rng.choice(names))
    return drawn


def grading_client(course: Path, cluster: FaultyCluster, url: str, log: Path, students=()):
    """``attncourse grade`` as the instructor runs it, on the cluster, into PostgreSQL."""
    cmd = [str(Path(sys.executable).with_name("attncourse")), "grade", ASSIGNMENT]
    cmd += ["--scheduler", cluster.address, "--db-url", url]
    for student in students:
        cmd += ["--student", student]
    out = open(log, "ab")
    return subprocess.Popen(cmd, cwd=course, stdout=out, stderr=subprocess.STDOUT, env=cluster.env)


def summary_lines(logs: list[Path]) -> list[tuple[str, str]]:
    """(status, student) of every summary line across the client's logs."""
    found = []
    for log in logs:
        if log.exists():
            for line in log.read_text(errors="replace").splitlines():
                match = LINE.match(line)
                if match:
                    found.append((match.group(1), match.group(2)))
    return found


def graded_so_far(logs: list[Path]) -> Counter:
    """student -> summary lines across the client's logs (one per grading of the student)."""
    return Counter(student for _, student in summary_lines(logs))


def run(n: int, base: Path, seed: int = 35) -> dict:
    """The soak; its figures and failed checks (``failed``: empty when all held)."""
    rng = random.Random(seed)
    notebooks = pool()
    started = time.monotonic()
    reference = serial_scores(base, notebooks)
    serial_s = time.monotonic() - started
    drawn = class_of(n, sorted(notebooks), rng)
    late = set(rng.sample(sorted(drawn), max(1, n * 8 // 100)))
    before = leftovers(base)
    pg = PostgresServer().start()
    cluster = FaultyCluster(base / "dask", ["w1", "w2"])
    figures = {"students": n, "pool": len(notebooks), "serial_s": round(serial_s, 1)}
    try:
        course = prepare(base / "course", [ASSIGNMENT])
        nbgrader(
            "generate_assignment",
            ASSIGNMENT,
            "--force",
            "--duedate",
            DUE,
            f"--CourseDirectory.db_url={pg.url}",
            cwd=course,
            quiet=True,
        )
        (course / "gradebook.db").unlink()
        for student, names in drawn.items():
            stamp = LATE if student in late else ON_TIME
            write_submission(course, student, ASSIGNMENT, notebooks[names[0]], timestamp=stamp)
        figures |= _first_round(course, cluster, pg, base, n)
        again = sorted(s for s, names in drawn.items() if len(names) > 1)
        for student in again:
            write_submission(
                course, student, ASSIGNMENT, notebooks[drawn[student][1]], timestamp=LATE
            )
        log = base / "client-resubmitted.log"
        grading_client(course, cluster, pg.url, log, again).wait()
        figures["wall_s"] = round(time.monotonic() - started - serial_s, 1)
        figures["students_per_hour"] = round((n + len(again)) / figures["wall_s"] * 3600)
        figures |= _checks(course, pg.url, drawn, reference, base)
    finally:
        cluster.stop()
        pg.stop()
    figures["left_behind"] = sorted(set(leftovers(base)) - set(before))
    if figures["left_behind"]:
        figures["failed"].append("left behind: " + "; ".join(figures["left_behind"])[:500])
    return figures


def _first_round(course, cluster, pg, base, n) -> dict:
    """Grade the class while the faults come; the faults' log."""
    logs = [base / "client-1.log"]
    client = grading_client(course, cluster, pg.url, logs[0])
    schedule = [
        (0.15, "worker killed"),
        (0.3, "client killed"),
        (0.4, "worker short of disk"),  # early: students are still to be sent to it
        (0.6, "database restarted"),
    ]
    faults = []
    try:
        while client.poll() is None or schedule:
            done = sum(graded_so_far(logs).values())
            if schedule and done >= schedule[0][0] * n:
                _, fault = schedule.pop(0)
                faults.append(f"{fault} after {done} students")
                if fault == "worker killed":
                    cluster.kill("w1")
                    cluster.add("w3")
                elif fault == "client killed":
                    client.send_signal(signal.SIGKILL)
                    client.wait()
                    missing = sorted(set(_students(course)) - set(graded_so_far(logs)))
                    logs.append(base / "client-2.log")
                    client = grading_client(course, cluster, pg.url, logs[-1], missing)
                elif fault == "database restarted":
                    pg.restart()
                else:
                    cluster.add("w4", disk_full=True)
            elif client.poll() is not None:
                schedule = []  # the class was graded before the rest of the faults came
            time.sleep(1)
    finally:  # the run stopped half-way: its client goes too
        if client.poll() is None:
            client.kill()
            client.wait()
    full = cluster.base / "w4.log"  # the full-disk worker: lines naming a WorkerFault it raised
    moved = full.read_text(errors="replace").count("WorkerFault") if full.exists() else 0
    return {
        "faults": faults,
        "client_exit": client.returncode,
        "logs": [str(p) for p in logs],
        "moved_from_full_disk": moved,
    }


def _students(course):
    return sorted(p.name for p in (course / "submitted").iterdir())


def _checks(course, url, drawn, reference, base) -> dict:
    """Exactly once, equal to serial, export = roster, formgrader's queries: figures and failures."""
    failed = []
    logs = sorted(base.glob("client-*.log"))
    times = graded_so_far(logs)
    wrong_count = {s: times[s] for s, names in drawn.items() if times[s] != len(names)}
    if wrong_count:
        failed.append(
            f"not graded exactly once (student: times): {dict(list(wrong_count.items())[:10])}"
        )
    errors = sorted({student for status, student in summary_lines(logs) if status == "error"})
    if errors:  # the grader's own failure: the log says why
        failed.append(f"graded as error (see the client logs): {errors[:10]}")
    scores = cell_scores(course, ASSIGNMENT, url=url)
    if set(scores) != set(drawn):
        failed.append(f"gradebook rows != roster: {sorted(set(drawn) ^ set(scores))[:10]}")
    unequal = [s for s, names in drawn.items() if _auto(scores.get(s, {})) != reference[names[-1]]]
    if unequal:
        failed.append(f"{len(unequal)} scores differ from serial grading: {unequal[:10]}")
    nbgrader("export", f"--CourseDirectory.db_url={url}", cwd=course, quiet=True, check=False)
    exported = _exported(course / "grades.csv")
    if exported != set(drawn):
        failed.append(f"export rows != roster: {sorted(exported ^ set(drawn))[:10]}")
    page_s, rows = _formgrader_queries(course, url)
    if max(page_s.values()) >= 2.0:
        failed.append(f"formgrader's pages took {page_s}")
    if not rows.pop("gradebookview_loaded"):
        failed.append("formgrader's server did not load attncourse.gradebookview")
    shown = {rows["manage_submissions"], rows["notebook_submissions"], rows["students"]}
    if shown != {len(drawn)}:
        failed.append(f"formgrader's pages list {rows} rows, not the {len(drawn)} students")
    return {
        "formgrader_s": page_s,
        "formgrader_rows": rows,
        "failed": failed,
        "graded_lines": sum(times.values()),
    }


def _exported(csv_path: Path) -> set:
    import csv

    if not csv_path.exists():
        return set()
    with open(csv_path) as f:
        return {
            row["student_id"] for row in csv.DictReader(f) if row.get("assignment") == ASSIGNMENT
        }


def _formgrader_queries(course: Path, url: str) -> dict:
    """Seconds formgrader's pages for the assignment take to load, and the rows each API call
    returned, over HTTP from a JupyterLab
    server on the course and its PostgreSQL gradebook (first load of each): the assignment
    list, Manage Submissions, the notebook's submissions in the gradebook view and the
    students list, each page's HTML and the API call its script makes for the rows."""
    import urllib.request

    from attncourse.formgrader import running

    config = course / "nbgrader_config.py"
    config.write_text(config.read_text() + f"\nc.CourseDirectory.db_url = {url!r}\n")
    pages = {
        "assignments": ["/formgrader/manage_assignments", "/formgrader/api/assignments"],
        "manage_submissions": [
            f"/formgrader/manage_submissions/{ASSIGNMENT}",
            f"/formgrader/api/submissions/{ASSIGNMENT}",
        ],
        "notebook_submissions": [
            f"/formgrader/gradebook/{ASSIGNMENT}/{ASSIGNMENT}",
            f"/formgrader/api/submitted_notebooks/{ASSIGNMENT}/{ASSIGNMENT}",
        ],
        "students": ["/formgrader/manage_students", "/formgrader/api/students"],
    }
    timed, rows = {}, {}
    with running(course, course.parent / "formgrader.log") as (base, token):
        for name, paths in pages.items():
            started = time.monotonic()
            for path in paths:
                request = urllib.request.Request(
                    base + path, headers={"Authorization": f"token {token}"}
                )
                with urllib.request.urlopen(request, timeout=60) as response:
                    body = response.read()
            timed[name] = round(time.monotonic() - started, 2)
            rows[name] = len(json.loads(body))  # the API's rows (not a login page)
    log = (course.parent / "formgrader.log").read_text(errors="replace")
    rows["gradebookview_loaded"] = "formgrader lists a notebook's submissions" in log
    return timed, rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=35)
    args = parser.parse_args(argv)
    # Stopped (kill, a CI's timeout): the cluster, the database and the folders go as on Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="attncourse-soak-") as tmp:
        figures = run(args.students, Path(tmp), args.seed)
    print(json.dumps(figures, indent=1))
    return 1 if figures["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
