"""``make bench``: seconds per submission of complete notebooks, against stock nbgrader and the floor.

Grades ``copies`` copies of two complete submissions of one assignment, the instructor's
full solution and the demo class's partly wrong student (the solution with several
common mistakes), with five configurations, each in its own scratch course with a fresh
gradebook:

1. stock ``nbgrader autograde`` with nbgrader's default preprocessors (only the
   course's kernel arguments, so the notebook can import its helpers);
2. plain ``nbgrader autograde`` with the course's ``nbgrader_config.py`` (sandbox, judge,
   repairs), serially, in one process;
3. ``attncourse grade`` with 1 worker (its local Dask cluster's start included), whose
   kernel gets all cores' torch threads, as ``make grade WORKERS=1`` runs it;
4. ``attncourse grade`` with N workers (default: all cores), cores / N threads each;
5. the floor: each submission's code cells run by plain ``python`` (one process per
   submission, so it pays ``import torch`` every time; a cell that raises is skipped),
   N processes at a time: what the machine allows any grading of this compute.

The configurations take turns for ``rounds`` rounds, in a rotated order each round, and
each ratio is taken within a round (a virtual machine's speed drifts by 10-40 % over
minutes), then the median of rounds. It prints seconds and CPU seconds (of its own
processes it waited for) per submission, the three target ratios (course config / stock <= 1.0, 1 worker /
course config <= 1.0, N workers / N-lane floor <= 2.0) and where the time of one submission
goes: kernel start, the notebook's cells, the judge's checks and its requests to the
kernel, nbgrader's own steps, the Dask task and the client's writes. It is a measurement
to read, not a test: run it on an otherwise idle machine.
"""

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attncourse.constants import cores, default_workers, threads_per_kernel
from attncourse.course import ROOT, course_config, nbgrader, venv_path
from attncourse.gradebook import total_scores
from attncourse.pipeline import grade
from attncourse.preprocessors.resilientexecute import ResilientExecute
from devtools.autograde import prepare
from devtools.submissions import solution_submission, write_submission

STOCK_CONFIG = """c = get_config()  # noqa: F821
c.CourseDirectory.course_id = {course_id!r}
c.Execute.timeout = {timeout!r}
c.Execute.extra_arguments = {extra!r}
"""


def bench_submissions(assignment, root=ROOT):
    """student -> notebook: the full solution and the demo class's partly wrong student (the
    one of most answers of their own), both complete notebooks."""
    from devtools.demo import demo_students

    own = {s: a for s, a in demo_students(assignment, root).items() if isinstance(a, dict)}
    wrong = own[max(own, key=lambda s: len(own[s]))] if own else {}
    return {
        "solution": solution_submission(root, assignment),
        "partly_wrong": solution_submission(root, assignment, wrong),
    }


def _course(dest, assignment, submissions, copies, stock=False, root=ROOT):
    course = prepare(dest, [assignment], root)
    if stock:
        config = course_config(course)
        stock_config = STOCK_CONFIG.format(
            course_id=config.CourseDirectory.course_id,
            timeout=ResilientExecute(config=config).timeout,
            extra=list(config.Execute.extra_arguments),
        )
        (course / "nbgrader_config.py").write_text(stock_config)
        nbgrader("generate_assignment", assignment, "--force", cwd=course, quiet=True)
    for k in range(copies):
        for student, nb in submissions.items():
            write_submission(course, f"{student}-{k}", assignment, nb)
    return course


def _kernel_start(extra, sandboxed, fork_servers=None):
    """Seconds from launching a kernel to its first reply, as the grader starts it."""
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.utils import run_sync

    from attncourse.sandbox.kernelmanager import SandboxKernelManager

    root = Path(tempfile.mkdtemp(prefix="attncourse-bench-"))
    os.chmod(root, 0o711)
    (root / "work").mkdir()
    (root / "run").mkdir()
    if sandboxed:
        km = SandboxKernelManager(fork_server=fork_servers is not None)
        if fork_servers is not None:
            km.fork_servers = fork_servers  # the server already started
        km.use_run_dir(root / "run")
    else:
        km = AsyncKernelManager()
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


def _cpu_s():
    """CPU seconds (user and system) of this process and of every process it has waited for,
    whatever else the machine runs. Kernels forked from a fork server are not among them (their
    parent is the server), so this undercounts the course's runs: read it within one
    configuration, not across."""
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class _Clock:
    """Wall time and CPU time of a block (its processes' own CPU, see :func:`_cpu_s`)."""

    def __enter__(self):
        self.started, self.cpu0 = time.monotonic(), _cpu_s()
        return self

    def __exit__(self, *_):
        self.wall = time.monotonic() - self.started
        self.cpu = _cpu_s() - self.cpu0

    def line(self, label, n):
        busy = f"  (CPU {self.cpu / n:5.2f} s/submission, {self.cpu / self.wall:.2f} of {cores()} cores)"
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
    from attncourse.sandbox.forkstart import ForkServers

    servers = ForkServers()  # started once, then forked from
    return {
        "python -c 'import torch'": torch_import,
        "bare kernel start (no sandbox)": _median(lambda: _kernel_start(bare, False)),
        "bare kernel start (sandboxed)": _median(lambda: _kernel_start(bare, True)),
        "kernel start with the course helpers (torch), sandboxed, started afresh": _median(
            lambda: _kernel_start(extra, True)
        ),
        "fork server start: import torch and the helpers (once per worker)": _timed_server(servers),
        "kernel start with the course helpers, sandboxed, from the fork server": _median(
            lambda: _kernel_start(extra, True, fork_servers=servers)
        ),
        "kernel ready, in the pipeline (median)": statistics.median(ready) if ready else 0.0,
        "notebook's cells and checks, in the pipeline (median)": statistics.median(compute)
        if compute
        else 0.0,
        "  of which the judge's checks, its requests to the kernel included (median)": (
            _median_of(r.record.timing["judge_s"] for r in records if "judge_s" in r.record.timing)
        ),
        "  requests of the judge to the kernel per notebook (median, a count)": _median_of(
            r.record.timing["requests"] for r in records if "requests" in r.record.timing
        ),
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


def _timed_server(servers):
    from attncourse.sandbox.kernelmanager import SandboxKernelManager

    started = time.monotonic()
    servers.socket(SandboxKernelManager().preload)
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


_FLOOR = """
import json
import sys

with open(sys.argv[1]) as f:
    cells = json.load(f)["cells"]
namespace = {"__name__": "__main__"}
for cell in cells:
    if cell["cell_type"] == "code":
        source = cell["source"]
        try:
            exec(compile("".join(source), "<cell>", "exec"), namespace)
        except Exception:
            pass
"""


def floor_wall(notebooks, lanes, threads):
    """Seconds to run the code cells of each of ``notebooks`` with plain ``python``, one
    process per notebook, ``lanes`` at a time: the same compute with no kernel, grading,
    sandbox or gradebook, paying ``import torch`` in every process."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), PATH=venv_path())
    queue, running = list(notebooks), []
    started = time.monotonic()
    while queue or running:
        while queue and len(running) < lanes:
            notebook = Path(queue.pop())
            cmd = [sys.executable, "-c", _FLOOR, str(notebook)]
            running.append(
                subprocess.Popen(cmd, env=env, cwd=notebook.parent, stdout=subprocess.DEVNULL)
            )
        running[0].wait()
        running = [p for p in running if p.poll() is None]
    return time.monotonic() - started


TARGETS = (  # (slower, faster, what, target): slower / faster <= target (issue 33)
    ("course", "stock", "nbgrader autograde, the course's config / stock nbgrader", 1.0),
    ("1w", "course", "attncourse grade, 1 worker / nbgrader with the course's config", 1.0),
    ("nw", "floor", "attncourse grade, {n} workers / the {n}-lane floor (the aim: 1.3x)", 2.0),
)


def ratio_lines(walls: dict, workers: int) -> list[str]:
    """The target ratios, each taken within a round (same machine state), then their median.

    ``walls``: configuration -> wall seconds per round, rounds in the same order, every
    configuration over the same submissions."""
    lines = []
    for slow, fast, what, target in TARGETS:
        per_round = [a / b for a, b in zip(walls[slow], walls[fast], strict=True)]
        ratio = statistics.median(per_round)
        rounds = ", ".join(f"{r:.2f}" for r in per_round)
        verdict = "met" if ratio <= target else "NOT met"
        lines.append(
            f"  {what.format(n=workers)}: {ratio:.2f}x (target <= {target}x, {verdict}; "
            f"rounds: {rounds})"
        )
    return lines


def run_bench(
    assignment: str = "attention_variants",
    copies: int = 4,
    workers: int | None = None,
    rounds: int = 1,
    dest: str | os.PathLike | None = None,
    course: str | os.PathLike = ROOT,
) -> int:
    """Grade the copies with each configuration, ``rounds`` times interleaved; print seconds
    per submission, the three target ratios and where the time goes. Exit 1 if the course
    config's runs (nbgrader and attncourse grade) disagree on a score."""
    workers = workers or default_workers()
    threads = threads_per_kernel(workers)  # what `attncourse grade` gives each kernel
    base = Path(dest or tempfile.mkdtemp(prefix="attncourse-bench-"))
    submissions = bench_submissions(assignment, course)
    n = len(submissions) * copies
    configs = {
        "stock": ("stock nbgrader autograde", "stock", None),
        "course": ("nbgrader autograde, the course's config", "serial", None),
        "1w": (f"attncourse grade, 1 worker, {cores()} threads", 1, cores()),
        "nw": (f"attncourse grade, {workers} workers, {threads} threads each", workers, threads),
        "floor": (f"the floor: plain python, {workers} at a time, {threads} threads", None, None),
    }
    print(
        f"bench: {assignment}, {n} complete submissions ({', '.join(submissions)} x {copies}), "
        f"{cores()} cores, {rounds} round{'s' * (rounds > 1)}",
        flush=True,
    )
    keys = list(configs)
    walls = {k: [] for k in keys}
    scores, records = {}, []
    notebooks = base / "floor"
    notebooks.mkdir(parents=True, exist_ok=True)
    floor = []
    for student, nb in submissions.items():
        for k in range(copies):
            floor.append(write_submission(notebooks, f"{student}-{k}", assignment, nb))
    for r in range(rounds):
        for key in keys[r % len(keys) :] + keys[: r % len(keys)]:
            if key == "floor":
                with _Clock() as clock:
                    floor_wall(floor, workers, threads)
            else:
                clock, scores[key], got = _grade_once(
                    base / f"{key}-{r}", configs[key], assignment, submissions, copies, course
                )
                records += got
            walls[key].append(clock.wall)
            print(clock.line(f"round {r + 1}  {configs[key][0]}", n), flush=True)
    print("ratios (each within a round, then the median of rounds):")
    for line in ratio_lines(walls, workers):
        print(line)
    same = ("course", "1w", "nw")
    differ = sorted(s for s in scores["1w"] if len({str(scores[k].get(s)) for k in same}) > 1)
    from_stock = sorted(s for s in scores["1w"] if scores["1w"][s] != scores["stock"].get(s))
    print(
        f"  nbgrader with the course's config and attncourse grade give the same scores: "
        f"{'yes' if not differ else 'NO: ' + ', '.join(differ)}"
    )
    print(
        f"  stock scores differ for: {', '.join(from_stock) or 'nobody'} "
        "(stock runs the hidden tests in the student's kernel and zeroes cells that warn)"
    )
    extra = list(course_config(course).Execute.extra_arguments)
    print("where the time of one submission goes (seconds):")
    for what, seconds in where_time_goes(extra, records).items():
        print(f"  {seconds:6.2f}  {what}")
    if dest is None:
        shutil.rmtree(base, ignore_errors=True)
    return 1 if differ else 0
