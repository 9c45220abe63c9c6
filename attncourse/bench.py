"""``make bench``: seconds per submission for stock nbgrader and for this pipeline, and why.

Grades ``copies`` copies of the demo submissions of one assignment four
times, each in its own scratch course with a fresh gradebook:

1. stock ``nbgrader autograde`` with nbgrader's default preprocessors (only the
   course's kernel arguments, so the hidden tests can import their helpers);
2. ``attncourse grade`` with 1 worker (sandbox, repairs, everything on), whose
   kernel gets all cores' torch threads, as ``make grade WORKERS=1`` runs it;
3. ``attncourse grade`` with N workers (default: all cores), cores / N threads each;
4. ``attncourse grade`` with 1 worker and 1 torch thread, so that 3 over 4 shows how
   the pipeline itself scales, apart from what one worker already gets out of the
   other cores (torch's threads, the next kernel started during this one's run).

Each line also gives the machine's busy CPU time per submission and how many
cores were busy on average, which is what bounds the ratios.

Then it times the pieces of one submission: starting a bare kernel, starting
it with the course's helpers (which import torch), a plain ``import torch``,
and the notebook's own compute (execution minus kernel start, from the
pipeline's records). It is a measurement to read, not a test: numbers depend
on what else runs on the machine, so run it on an otherwise idle one.
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attncourse.autograde import prepare
from attncourse.course import ROOT, nbgrader, notebook_path
from attncourse.gradebook import total_scores
from attncourse.pipeline import grade
from attncourse.submissions import solution_submission, write_submission

STOCK_CONFIG = """c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "attention"
c.Execute.timeout = 120
c.Execute.extra_arguments = {extra!r}
"""


def bench_submissions(assignment):
    """student -> notebook: the demo students (or the solution and the release when none)."""
    import nbformat

    from attncourse.demo import demo_students

    students = demo_students(assignment) or {"solution": {}, "blank": "release"}
    release = nbformat.read(notebook_path(ROOT, "release", assignment), as_version=4)
    return {
        s: release if answers == "release" else solution_submission(ROOT, assignment, answers)
        for s, answers in students.items()
    }


def _course(dest, assignment, submissions, copies, stock=False):
    course = prepare(dest, [assignment])
    if stock:
        from traitlets.config.loader import PyFileConfigLoader

        config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
        extra = list(config.Execute.extra_arguments)
        (course / "nbgrader_config.py").write_text(STOCK_CONFIG.format(extra=extra))
        nbgrader("generate_assignment", assignment, "--force", cwd=course, quiet=True)
    for k in range(copies):
        for student, nb in submissions.items():
            write_submission(course, f"{student}-{k}", assignment, nb)
    return course


def _kernel_start(extra, sandboxed, fork_server=False):
    """Seconds from launching a kernel to its first reply, as the grader starts it."""
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.utils import run_sync

    from attncourse.sandbox import SandboxKernelManager

    root = Path(tempfile.mkdtemp(prefix="attncourse-bench-"))
    os.chmod(root, 0o711)
    (root / "work").mkdir()
    (root / "run").mkdir()
    km = SandboxKernelManager(fork_server=fork_server) if sandboxed else AsyncKernelManager()
    if sandboxed:
        km.use_run_dir(root / "run")
    started = time.monotonic()
    run_sync(km.start_kernel)(extra_arguments=extra, cwd=str(root / "work"))
    kc = km.client()
    kc.start_channels()
    run_sync(kc.wait_for_ready)(timeout=120)
    seconds = time.monotonic() - started
    kc.stop_channels()
    run_sync(km.shutdown_kernel)(now=True)
    shutil.rmtree(root, ignore_errors=True)
    return seconds


def _cpu_busy_s():
    """Seconds of CPU time the whole machine has spent busy (all cores, from /proc/stat)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


class _Clock:
    """Wall time and machine-wide busy CPU time of a block (the machine should be otherwise idle)."""

    def __enter__(self):
        self.started, self.cpu0 = time.monotonic(), _cpu_busy_s()
        return self

    def __exit__(self, *_):
        self.wall = time.monotonic() - self.started
        cpu1 = _cpu_busy_s()
        self.cpu = None if cpu1 is None or self.cpu0 is None else cpu1 - self.cpu0

    def line(self, label, n):
        busy = ""
        if self.cpu is not None:
            busy = (
                f"  (CPU {self.cpu / n:5.2f} s/submission, "
                f"{self.cpu / self.wall:.2f} of {os.cpu_count()} cores busy)"
            )
        return f"  {label:28s} {self.wall / n:6.2f} s/submission{busy}"


def _median(f, n=3):
    return statistics.median(f() for _ in range(n))


def where_time_goes(extra, records):
    """Seconds for each piece of grading one submission."""
    bare = ["--HistoryManager.hist_file=:memory:"]
    torch_import = _median(
        lambda: _timed([sys.executable, "-c", "import torch"]),
    )
    ready = [r["record"]["timing"]["kernel_ready_s"] for r in records if _timing(r)]
    compute = [
        r["record"]["timing"]["execute_s"] - r["record"]["timing"]["kernel_ready_s"]
        for r in records
        if _timing(r)
    ]
    return {
        "python -c 'import torch'": torch_import,
        "bare kernel start (no sandbox)": _median(lambda: _kernel_start(bare, False)),
        "bare kernel start (sandboxed)": _median(lambda: _kernel_start(bare, True)),
        "kernel start with the course helpers (torch), sandboxed, started afresh": _median(
            lambda: _kernel_start(extra, True)
        ),
        "fork server start: import torch and the helpers (once per worker)": _timed_server(),
        "kernel start with the course helpers, sandboxed, from the fork server": _median(
            lambda: _kernel_start(extra, True, fork_server=True)
        ),
        "kernel ready, in the pipeline (median)": statistics.median(ready) if ready else 0.0,
        "notebook compute, in the pipeline (median)": statistics.median(compute)
        if compute
        else 0.0,
    }


def _timed_server():
    from attncourse.sandbox import SandboxKernelManager, _fork_server

    started = time.monotonic()
    _fork_server(SandboxKernelManager().preload)
    return time.monotonic() - started


def _timing(result):
    timing = result.get("record", {}).get("timing", {})
    return "kernel_ready_s" in timing and "execute_s" in timing


def _timed(cmd):
    started = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - started


def run_bench(assignment="attention_variants", copies=2, workers=None, dest=None):
    """Run the three gradings and the breakdown; print seconds per submission and ratios."""
    workers = workers or os.cpu_count() or 1
    base = Path(dest or tempfile.mkdtemp(prefix="attncourse-bench-"))
    submissions = bench_submissions(assignment)
    n = len(submissions) * copies
    print(
        f"bench: {assignment}, {n} submissions ({len(submissions)} demo x {copies}), "
        f"{os.cpu_count()} cores, workers {workers}"
    )

    stock = _course(base / "stock", assignment, submissions, copies, stock=True)
    with _Clock() as clock:
        nbgrader("autograde", assignment, "--force", cwd=stock, check=False, quiet=True)
    t_stock = clock.wall
    print(clock.line("stock nbgrader autograde:", n))

    times, scores, records = {}, {}, []
    runs = (
        ("1 worker", 1, None),
        (f"{workers} workers", workers, None),
        ("1 worker, 1 thread", "1t", 1),
    )
    for label, w, threads in runs:
        course = _course(base / f"w{w}", assignment, submissions, copies)
        with _Clock() as clock, open(os.devnull, "w") as devnull:
            _, results = grade(
                assignment,
                workers=1 if w == "1t" else w,
                threads=threads,
                course=course,
                progress=False,
                out=devnull,
            )
        times[w] = clock.wall
        scores[w] = total_scores(course, assignment)
        records += list(results.values())
        print(clock.line(f"attncourse grade, {label}:", n))
    stock_scores = total_scores(stock, assignment)
    differ = sorted(
        s for s in scores[1] if not scores[1][s] == scores[workers].get(s) == scores["1t"].get(s)
    )
    from_stock = sorted(s for s in scores[1] if scores[1][s] != stock_scores.get(s))
    print(
        f"  throughput {workers} workers / 1 worker: {times[1] / times[workers]:.2f}x "
        f"(target >= 1.7x on 2 cores)"
    )
    print(
        f"  throughput {workers} workers / 1 worker at 1 thread: {times['1t'] / times[workers]:.2f}x "
        "(the pipeline's scaling when one worker gets one core's work; the 1-worker run "
        "above also uses the other cores: torch threads and the pre-started next kernel)"
    )
    print(f"  stock time / 1-worker time:  {t_stock / times[1]:.2f}x (target >= 1.0)")
    print(
        f"  all three pipeline runs give the same scores: "
        f"{'yes' if not differ else 'NO: ' + ', '.join(differ)}"
    )
    print(
        f"  stock scores differ for: {', '.join(from_stock) or 'nobody'} "
        "(stock zeroes cells that warn on stderr and aborts on damaged notebooks)"
    )

    from traitlets.config.loader import PyFileConfigLoader

    extra = list(
        PyFileConfigLoader("nbgrader_config.py", path=str(ROOT))
        .load_config()
        .Execute.extra_arguments
    )
    print("where the time of one submission goes (seconds):")
    for what, seconds in where_time_goes(extra, records).items():
        print(f"  {seconds:6.2f}  {what}")
    if dest is None:
        shutil.rmtree(base, ignore_errors=True)
    return 1 if differ else 0
