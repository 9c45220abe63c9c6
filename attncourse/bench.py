"""``make bench``: seconds per submission for stock nbgrader and for this pipeline, and why.

Grades ``copies`` copies of the demo submissions of one assignment with five
configurations, each in its own scratch course with a fresh gradebook:

1. stock ``nbgrader autograde`` with nbgrader's default preprocessors (only the
   course's kernel arguments, so the hidden tests can import their helpers);
2. plain ``nbgrader autograde`` with the course's config, serially, in one process;
3. ``attncourse grade`` on a local Dask cluster of 1 worker (sandbox, repairs, everything
   on), whose kernel gets all cores' torch threads, as ``make grade WORKERS=1`` runs it;
4. ``attncourse grade`` with 1 worker and cores / N torch threads;
5. ``attncourse grade`` with N workers (default: all cores), cores / N threads each.

Each ``attncourse grade`` run includes starting its cluster, as ``make grade`` does.

5 over 4 is how the pipeline scales with the same work per kernel; 5 over 3
is what an instructor gains over ``WORKERS=1``, where torch's threads in the
one kernel already keep part of the other cores busy; 3 over 2 is what the
engine costs or saves over nbgrader's own loop. The configurations take
turns for ``rounds`` rounds and each ratio compares runs of one round, since
a virtual machine's speed drifts by 10-40 % over minutes. Each line also gives
the machine's busy CPU time per submission and how many cores were busy. Each
round also executes the source notebook (solutions and hidden tests) with plain
nbclient in 1 and in N processes side by side: the ceiling that the machine
itself puts on any parallel grading of this compute (shared caches, memory
bandwidth, the host's other guests); N workers over N lanes is how far grading is from
that floor.

Then it times the pieces of one submission: starting a bare kernel, starting
it with the course's helpers (which import torch), a plain ``import torch``,
the fork server, the notebook's own compute (execution minus kernel
start, from the pipeline's records), nbgrader's own work around it, what a Dask task adds
on the worker and what the client spends writing a student's results. It is a measurement to read, not a test:
run it on an otherwise idle machine.
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
from attncourse.constants import (
    CELL_TIMEOUT_S,
    RELEASE,
    SOURCE,
    cores,
    default_workers,
    threads_per_kernel,
)
from attncourse.course import ROOT, course_config, nbgrader, notebook_path, venv_path
from attncourse.gradebook import total_scores
from attncourse.pipeline import grade
from attncourse.submissions import solution_submission, write_submission

STOCK_CONFIG = """c = get_config()  # noqa: F821
c.CourseDirectory.course_id = {course_id!r}
c.Execute.timeout = {timeout!r}
c.Execute.extra_arguments = {extra!r}
"""


def bench_submissions(assignment, root=ROOT):
    """student -> notebook: the demo students (or the solution and the release when none)."""
    import nbformat

    from attncourse.demo import demo_students

    students = demo_students(assignment, root) or {"solution": {}, "blank": "release"}
    release = nbformat.read(notebook_path(root, RELEASE, assignment), as_version=4)
    return {
        s: release if answers == "release" else solution_submission(root, assignment, answers)
        for s, answers in students.items()
    }


def _course(dest, assignment, submissions, copies, stock=False, root=ROOT):
    course = prepare(dest, [assignment], root)
    if stock:
        config = course_config(course)
        stock_config = STOCK_CONFIG.format(
            course_id=config.CourseDirectory.course_id,
            timeout=config.Execute.get("timeout", CELL_TIMEOUT_S),
            extra=list(config.Execute.extra_arguments),
        )
        (course / "nbgrader_config.py").write_text(stock_config)
        nbgrader("generate_assignment", assignment, "--force", cwd=course, quiet=True)
    for k in range(copies):
        for student, nb in submissions.items():
            write_submission(course, f"{student}-{k}", assignment, nb)
    return course


def _kernel_start(extra, sandboxed, fork_server=False):
    """Seconds from launching a kernel to its first reply, as the grader starts it."""
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.utils import run_sync

    from attncourse.sandbox.kernelmanager import SandboxKernelManager

    root = Path(tempfile.mkdtemp(prefix="attncourse-bench-"))
    os.chmod(root, 0o711)
    (root / "work").mkdir()
    (root / "run").mkdir()
    km = SandboxKernelManager(fork_server=fork_server) if sandboxed else AsyncKernelManager()
    if sandboxed:
        km.use_run_dir(root / "run")
    started = time.monotonic()
    quiet = {} if sandboxed else {"stderr": subprocess.DEVNULL}  # its TCP warning
    run_sync(km.start_kernel)(extra_arguments=extra, cwd=str(root / "work"), **quiet)
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
                f"{self.cpu / self.wall:.2f} of {cores()} cores busy)"
            )
        return f"  {label:60s} {self.wall / n:6.2f} s/submission{busy}"


def _median(f, n=3):
    return statistics.median(f() for _ in range(n))


def where_time_goes(extra, records):
    """Seconds for each piece of grading one submission."""
    timed = [r for r in records if _timing(r) and r.task_s is not None]
    bare = ["--HistoryManager.hist_file=:memory:"]
    torch_import = _median(
        lambda: _timed([sys.executable, "-c", "import torch"]),
    )
    ready = [r.record.timing["kernel_ready_s"] for r in records if _timing(r)]
    compute = [
        r.record.timing["execute_s"] - r.record.timing["kernel_ready_s"]
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
        "nbgrader autograde around the execution: sanitize, gradebook, export (median)": (
            _median_of(r.seconds - r.record.timing["execute_s"] for r in timed)
        ),
        "Dask task around autograde: scratch course, files, reading its gradebook (median)": (
            _median_of(r.task_s - r.seconds for r in timed)
        ),
        "client: the student's gradebook rows, autograded folder and log (median)": (
            _median_of(r.save_s for r in timed)
        ),
    }


def _median_of(values):
    values = list(values)
    return statistics.median(values) if values else 0.0


def _timed_server():
    from attncourse.sandbox.forkstart import fork_server
    from attncourse.sandbox.kernelmanager import SandboxKernelManager

    started = time.monotonic()
    fork_server(SandboxKernelManager().preload)
    return time.monotonic() - started


def _timing(result):
    timing = result.record.timing
    return "kernel_ready_s" in timing and "execute_s" in timing


def _timed(cmd):
    started = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - started


def _grade_once(base, config, assignment, submissions, copies, root=ROOT):
    """Grade one scratch course with ``config``; return (its _Clock, scores, records)."""
    _, workers, threads = config
    stock = workers == "stock"
    course = _course(base, assignment, submissions, copies, stock=stock, root=root)
    with _Clock() as clock, open(os.devnull, "w") as devnull:
        if workers in ("stock", "serial"):
            nbgrader("autograde", assignment, "--force", cwd=course, check=False, quiet=True)
            records = []
        else:
            _, results = grade(
                assignment,
                workers=workers,
                threads=threads,
                course=course,
                progress=False,
                out=devnull,
            )
            records = list(results.values())
    return clock, total_scores(course, assignment), records


_LANE = """
import sys
from pathlib import Path

import nbclient
import nbformat

path = Path(sys.argv[1])
for _ in range(int(sys.argv[2])):
    nb = nbformat.read(path, as_version=4)
    resources = {"metadata": {"path": str(path.parent)}}
    nbclient.NotebookClient(nb, timeout=600, allow_errors=True, resources=resources).execute()
"""


def ceiling_wall(notebook, runs, lanes, threads):
    """Seconds to execute ``notebook`` ``runs`` times with plain nbclient, in ``lanes``
    processes side by side: the same kernels and compute with no grading, sandbox or
    gradebook, so N lanes over 1 lane is what this machine can give any pipeline."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), PATH=venv_path())
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _LANE, str(notebook), str(runs // lanes)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(lanes)
    ]
    if any(p.wait() for p in procs):
        raise RuntimeError(f"executing {notebook} failed")
    return time.monotonic() - started


def ratio_lines(walls, workers, threads, cores, submissions=1, notebooks=1):
    """The target ratios, each taken within a round (same machine state), then their median.

    ``walls``: configuration -> wall seconds per round, rounds in the same order; a grading
    run grades ``submissions``, a ceiling run executes ``notebooks``."""

    def ratio(slow, fast, text, scale=1.0):
        per_round = [scale * a / b for a, b in zip(walls[slow], walls[fast], strict=True)]
        rounds = ", ".join(f"{r:.2f}" for r in per_round)
        return f"  {text}: {statistics.median(per_round):.2f}x (rounds: {rounds})"

    return [
        ratio(
            "ceiling 1",
            "ceiling n",
            f"the machine's ceiling: plain nbclient, {workers} lanes / 1 lane, {threads} torch "
            "threads per kernel",
        ),
        ratio(
            "1t",
            "nw",
            f"throughput {workers} workers / 1 worker, {threads} torch threads per kernel in "
            "both (target >= 1.7x on 2 cores)",
        ),
        ratio(
            "1w",
            "nw",
            f"throughput {workers} workers / 1 worker as `make grade WORKERS=1` runs it "
            f"({cores} torch threads in its one kernel)",
        ),
        ratio("stock", "1w", "stock time / 1-worker time (target >= 1.0)"),
        ratio(
            "serial",
            "1w",
            "serial nbgrader with the course config / 1-worker time (target >= 1.0)",
        ),
        ratio(
            "nw",
            "ceiling n",
            f"{workers} workers / the {workers}-lane floor (plain nbclient), per notebook "
            "(target <= 1.3x)",
            scale=notebooks / submissions,
        ),
    ]


def run_bench(
    assignment: str = "attention_variants",
    copies: int = 8,
    workers: int | None = None,
    rounds: int = 2,
    dest: str | os.PathLike | None = None,
    course: str | os.PathLike = ROOT,
) -> int:
    """Grade the copies with each configuration, ``rounds`` times interleaved; print seconds
    per submission, the ratios and where the time goes. Exit 1 if the pipeline's runs disagree.

    The machine's speed drifts over minutes (other virtual machines on the host), so the
    configurations take turns, in a rotated order each round, and each ratio compares runs
    of the same round.
    """
    workers = workers or default_workers()
    threads = threads_per_kernel(workers)  # what `attncourse grade` gives each kernel
    base = Path(dest or tempfile.mkdtemp(prefix="attncourse-bench-"))
    submissions = bench_submissions(assignment, course)
    n = len(submissions) * copies
    configs = {
        "stock": ("stock nbgrader autograde", "stock", None),
        "serial": ("nbgrader autograde, the course's config", "serial", None),
        "1w": (f"attncourse grade (Dask), 1 worker, {cores()} threads", 1, cores()),
        "1t": (f"attncourse grade (Dask), 1 worker, {threads} threads", 1, threads),
        "nw": (f"attncourse grade (Dask), {workers} workers, {threads} threads", workers, threads),
    }
    print(
        f"bench: {assignment}, {n} submissions ({len(submissions)} demo x {copies}), "
        f"{cores()} cores, {rounds} rounds",
        flush=True,
    )
    keys = list(configs)
    walls = {k: [] for k in [*keys, "ceiling 1", "ceiling n"]}
    scores, records = {}, []
    source = notebook_path(course, SOURCE, assignment)
    runs = workers * max(1, n // (4 * workers))  # notebooks per ceiling measurement
    for r in range(rounds):
        for key in keys[r % len(keys) :] + keys[: r % len(keys)]:
            clock, scores[key], got = _grade_once(
                base / f"{key}-{r}", configs[key], assignment, submissions, copies, course
            )
            walls[key].append(clock.wall)
            records += got
            print(clock.line(f"round {r + 1}  {configs[key][0]}", n), flush=True)
        for lanes, key in ((1, "ceiling 1"), (workers, "ceiling n")):
            walls[key].append(ceiling_wall(source, runs, lanes, threads))
            label = (
                f"round {r + 1}  plain nbclient, {lanes} lane{'s' * (lanes > 1)}, {threads} threads"
            )
            print(f"  {label:60s} {walls[key][-1] / runs:6.2f} s/notebook", flush=True)
    print("ratios:")
    for line in ratio_lines(walls, workers, threads, cores(), n, runs):
        print(line)
    pipeline = [k for k in configs if isinstance(configs[k][1], int)]
    same = [*pipeline, "serial"]  # nbgrader's own loop under the course config too
    differ = sorted(s for s in scores["1w"] if len({str(scores[k].get(s)) for k in same}) > 1)
    from_stock = sorted(s for s in scores["1w"] if scores["1w"][s] != scores["stock"].get(s))
    print(
        f"  all pipeline runs and serial nbgrader give the same scores: "
        f"{'yes' if not differ else 'NO: ' + ', '.join(differ)}"
    )
    print(
        f"  stock scores differ for: {', '.join(from_stock) or 'nobody'} "
        "(stock zeroes cells that warn on stderr and aborts on damaged notebooks)"
    )

    extra = list(course_config(course).Execute.extra_arguments)
    print("where the time of one submission goes (seconds):")
    for what, seconds in where_time_goes(extra, records).items():
        print(f"  {seconds:6.2f}  {what}")
    if dest is None:
        shutil.rmtree(base, ignore_errors=True)
    return 1 if differ else 0
