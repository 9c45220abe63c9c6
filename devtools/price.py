"""``make price``: what one hostile submission costs the grading process beside an honest one.

Grades, one student per ``nbgrader autograde`` run with the course's ``nbgrader_config.py``
in a scratch course, the instructor's full solution of one assignment (the honest student)
and the hostile notebooks of :mod:`devtools.hostile` (each the same solution with one costly
thing added), and prints for each: wall seconds, CPU seconds (user + system of the grading
process and of everything it started and reaped: its kernels, the fork server), its peak
resident memory (the largest of those processes, ``ru_maxrss``), the ratios to the honest
student (goal: CPU <= 3x, memory <= 1.5x), the score and how it ended (graded, or the
refusals it met). ``--without-limits`` raises every limit out of reach, to see the price
without them. A measurement to read, not a test: run it on an otherwise quiet machine.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import nbformat  # noqa: E402

from attncourse.constants import AUTOGRADED  # noqa: E402
from attncourse.course import ROOT, notebook_path, venv_path  # noqa: E402
from attncourse.gradebook import total_scores  # noqa: E402
from attncourse.runrecord import RunRecord  # noqa: E402
from devtools.autograde import prepare  # noqa: E402
from devtools.hostile import HOSTILE  # noqa: E402
from devtools.submissions import solution_submission, write_submission  # noqa: E402

CPU_GOAL, MEMORY_GOAL = 3.0, 1.5
NO_LIMITS = """
c.SubmissionLimits.max_notebook_bytes = 2**40
c.SubmissionLimits.max_cells = 10**9
c.SubmissionLimits.max_attachment_bytes = 2**40
c.SubmissionLimits.max_cell_source_bytes = 2**40
c.SubmissionLimits.max_parse_depth = 10**9
c.SubmissionLimits.max_parse_nodes = 10**12
c.ResilientExecute.max_outputs = 10**12
"""


def autograde_one(course: Path, assignment: str, student: str) -> dict:
    """Autograde one student; wall s, CPU s and peak MB of the grading process tree."""
    exe = Path(sys.executable).with_name("nbgrader")
    cmd = [str(exe), "autograde", assignment, "--student", student, "--force"]
    env = {**os.environ, "PATH": venv_path(), "PYTHONWARNINGS": "ignore"}
    started = time.monotonic()
    with open(course / f"{student}.log", "wb") as log:
        proc = subprocess.Popen(cmd, cwd=course, env=env, stdout=log, stderr=log)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall_s": time.monotonic() - started,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_mb": usage.ru_maxrss / 1024,
        "exit": proc.returncode,
    }


def outcome(course: Path, assignment: str, student: str) -> str:
    """How grading ended for ``student``: its refusals and faults, or "graded"."""
    path = notebook_path(course, AUTOGRADED, assignment, student)
    if not path.exists():
        return "no autograded notebook"
    record = RunRecord.of(nbformat.read(path, as_version=4))
    said = [record.refused] if record.refused else []
    said += [f"{f['fault']} ({f.get('where') or f['cell']})" for f in record.faults]
    return "; ".join(said)[:300] or "graded"


def measure(assignment: str, limits: bool, workdir: Path) -> list[dict]:
    """Rows of the price table, the honest student first."""
    course = prepare(workdir / "course", [assignment], ROOT)
    if not limits:
        with open(course / "nbgrader_config.py", "a") as config:
            config.write(NO_LIMITS)
    honest = solution_submission(ROOT, assignment)
    notebooks = {"honest": honest, **{name: make(honest) for name, make in HOSTILE.items()}}
    rows = []
    for k, (name, nb) in enumerate(notebooks.items()):
        student = f"s{k}"
        write_submission(course, student, assignment, nb)
        row = {"notebook": name, **autograde_one(course, assignment, student)}
        row["score"] = total_scores(course, assignment).get(student)
        row["outcome"] = outcome(course, assignment, student)
        rows.append(row)
        print(_line(row, rows[0]), flush=True)
    return rows


def _line(row, honest):
    cpu = row["cpu_s"] / honest["cpu_s"]
    mem = row["peak_mb"] / honest["peak_mb"]
    met = "met" if cpu <= CPU_GOAL and mem <= MEMORY_GOAL else "NOT MET"
    score = "-" if row["score"] is None else "{:g}/{:g}".format(*row["score"])
    return (
        f"| {row['notebook']} | {row['wall_s']:.1f} | {row['cpu_s']:.1f} | {row['peak_mb']:.0f} "
        f"| {cpu:.2f}x | {mem:.2f}x | {met} | {score} | {row['outcome']} |"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--assignment", default="attention_variants")
    parser.add_argument("--without-limits", action="store_true")
    args = parser.parse_args(argv)
    print(
        "| notebook | wall s | CPU s | peak MB | CPU / honest | memory / honest | goal "
        "| score | outcome |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    )
    with tempfile.TemporaryDirectory(prefix="attncourse-price-") as tmp:
        rows = measure(args.assignment, not args.without_limits, Path(tmp))
    honest = rows[0]
    worst = all(
        r["cpu_s"] <= CPU_GOAL * honest["cpu_s"] and r["peak_mb"] <= MEMORY_GOAL * honest["peak_mb"]
        for r in rows
    )
    print(f"every submission within {CPU_GOAL}x CPU and {MEMORY_GOAL}x memory: {worst}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
