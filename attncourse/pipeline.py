"""Autograde a whole class in parallel: ``attncourse grade ASSIGNMENT --workers N``.

Each worker process runs nbgrader's own ``AutogradeApp`` on one student at a
time, in the course directory and under the course's ``nbgrader_config.py``,
so every preprocessor and the sandbox apply exactly as with plain
``nbgrader autograde``. Kernels run in parallel; gradebook access does not:
every worker takes one exclusive file lock for as long as it holds a database
connection (nbgrader only does so for short bursts before and after
execution), so SQLite never sees two writers and no grade is lost or written
twice. The same holds for PostgreSQL (``--db-url``).

A tqdm bar shows progress and each student's result as it finishes; a table
at the end gives per student the score, status, time and active protections,
and is saved with every student's log under ``autograded/.attncourse/``. The
exit status is non-zero only when grading itself failed for someone (not when
a submission was missing, unreadable or crashed its kernel: those are
reported and graded as far as they can be).

Before a student is graded, their folder loses every symlink and special file
(:func:`attncourse.plainfiles.refuse_submission`: removed, never followed); a
symlinked notebook leaves the student ``missing``, and the summary says what was
refused and why.
"""

import contextlib
import fcntl
import gc
import hashlib
import json
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from tqdm import tqdm

from attncourse.course import ROOT, notebook_path, venv_path
from attncourse.gradebook import cell_scores
from attncourse.plainfiles import WHY, refuse_submission, remember

RECORD = "attncourse"


def students_of(course, assignment):
    """Students with a submission folder for ``assignment`` (submitted/<student>/<assignment>)."""
    submitted = Path(course) / "submitted"
    if not submitted.is_dir():
        return []
    return sorted(p.name for p in submitted.iterdir() if (p / assignment).is_dir())


def configured_db_url(course):
    """The gradebook URL the course's nbgrader_config.py gives (nbgrader's default otherwise)."""
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    return CourseDirectory(config=config, root=str(course)).db_url


def lock_path(db_url):
    """The lock file that serializes access to the gradebook at ``db_url``."""
    digest = hashlib.sha256(db_url.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"attncourse-gradebook-{digest}.lock"


class GradebookLock:
    """Hold an exclusive file lock while this process has any database connection checked out.

    Installed through SQLAlchemy pool events, so it covers every gradebook
    access nbgrader makes, including nested sessions (counted, not re-locked).
    """

    def __init__(self, path):
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self.depth = 0
        self.guard = threading.Lock()
        self.held_s = 0.0
        self.waited_s = 0.0
        self._since = 0.0

    def acquire(self, *_):
        with self.guard:
            if self.depth == 0:
                asked = time.monotonic()
                fcntl.flock(self.fd, fcntl.LOCK_EX)
                self._since = time.monotonic()
                self.waited_s += self._since - asked
            self.depth += 1

    def release(self, *_):
        with self.guard:
            self.depth -= 1
            if self.depth == 0:
                self.held_s += time.monotonic() - self._since
                fcntl.flock(self.fd, fcntl.LOCK_UN)

    def install(self):
        from sqlalchemy import event
        from sqlalchemy.pool import Pool

        event.listen(Pool, "checkout", self.acquire)
        event.listen(Pool, "checkin", self.release)


_lock = None
_graded = 0  # students this worker process has graded


def _init_worker(path, course, threads):
    global _lock
    os.chdir(course)
    os.environ["PATH"] = venv_path()
    # Kernels inherit this: parallel kernels share the cores instead of oversubscribing them.
    os.environ["OMP_NUM_THREADS"] = str(threads)
    _lock = GradebookLock(path)
    _lock.install()


def grade_student(course, assignment, student, nbgrader_args, log_dir, refused=()):
    """Autograde one student with nbgrader's AutogradeApp in this process; return a result dict.

    ``refused``: what :func:`grade` removed from the student's folder, for the notebook's record.
    """
    from nbgrader.apps import AutogradeApp

    global _graded
    if _graded == 1:
        # After the first student the modules and caches grading needs are loaded: collect
        # what that student left, then freeze the survivors, so that the collections during
        # the next students scan only their own objects (they took a fifth to a third of a
        # worker's CPU before). Once only: what is frozen is never freed.
        gc.collect()
        gc.freeze()
    _graded += 1
    started = time.monotonic()
    held, waited = (_lock.held_s, _lock.waited_s) if _lock else (0.0, 0.0)
    result = {"student": student, "error": None}
    folder = notebook_path(course, "submitted", assignment, student).parent
    remember(folder, refused)
    log = Path(log_dir) / f"{student}.log"
    with _output_to(log):
        for entry in refused:
            print(f"Refused {folder}/{entry}: {WHY}; removed, never followed", file=sys.stderr)
        try:
            app = AutogradeApp()
            app.initialize([assignment, "--student", student, "--force", *nbgrader_args])
            app.start()
        except BaseException as e:  # noqa: BLE001 - reported per student; the class goes on
            result["error"] = f"{type(e).__name__}: {e}".strip() + f" (see {log})"
    result["seconds"] = round(time.monotonic() - started, 2)
    if _lock:
        result["gradebook_lock_s"] = round(_lock.held_s - held, 3)
        result["gradebook_wait_s"] = round(_lock.waited_s - waited, 3)
    result["record"] = _read_record(notebook_path(course, "autograded", assignment, student))
    return result


@contextlib.contextmanager
def _output_to(path):
    """Send this process's stdout and stderr (nbgrader's log included) to ``path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, log):
            os.close(fd)


def _read_record(path):
    try:
        return json.loads(Path(path).read_text()).get("metadata", {}).get(RECORD, {})
    except (OSError, ValueError):
        return {}


def status_of(result):
    """One word for a student's run, worst first, and the details behind it.

    Files refused from the submission (``refused``: symlinks, FIFOs, ...) make the status
    ``refused`` and are named in the details of any status.
    """
    status, details = _status(result, result.get("record", {}))
    refused = result.get("record", {}).get("refused_files") or result.get("refused") or []
    if refused and status != "missing":
        listed = "refused " + "; ".join(refused)
        if status == "ok":
            return "refused", listed
        return status, f"{details}; {listed}"
    return status, details


def _status(result, record):
    if result.get("missing"):
        return "missing", result["missing"]
    if result.get("error"):
        return "error", result["error"]
    if record.get("unreadable"):
        return "unreadable", record["unreadable"]
    if record.get("faults"):
        return "faults", "; ".join(f"{f['fault']} in {f['cell']}" for f in record["faults"])
    if record.get("repairs"):
        return "repaired", "; ".join(record["repairs"])
    return "ok", ""


def missing_reason(nb, refused):
    """Why ``nb`` (a submitted notebook path) is not graded: refused, or not submitted."""
    for entry in refused:
        if entry.startswith(f"{nb.name}:") or "(the submission folder itself)" in entry:
            return f"refused {entry}: {WHY}; never read"
    return f"no {nb.name} submitted"


def protections_of(record):
    """Short names of the protections a student's kernel ran with."""
    p = record.get("protections") or {}
    names = []
    if p.get("mount_namespace"):
        names.append("fs")
    if p.get("network_namespace"):
        names.append("net")
    if p.get("pid_namespace"):
        names.append("pid")
    if p.get("uid") is not None:
        names.append("uid")
    if p.get("user_namespace"):
        names.append("userns")
    names += sorted(p.get("rlimits", {}))
    return ",".join(names) or "none"


def grade(
    assignment,
    workers=None,
    course=ROOT,
    db_url=None,
    students=None,
    nbgrader_args=(),
    progress=True,
    out=sys.stdout,
    threads=None,
):
    """Autograde every submitted student of ``assignment``; return (exit status, results).

    ``threads``: torch/OpenMP threads per kernel (default: the cores shared out among the
    workers, so parallel kernels do not oversubscribe the machine).
    """
    course = Path(course).resolve()
    workers = workers or os.cpu_count() or 1
    db_url = db_url or configured_db_url(course)
    args = [f"--CourseDirectory.root={course}", f"--CourseDirectory.db_url={db_url}"]
    args += list(nbgrader_args)
    students = list(students) if students is not None else students_of(course, assignment)
    if not students:
        print(f"no submissions: nothing in {course}/submitted/*/{assignment}/", file=out)
        return 0, {}
    run_dir = course / "autograded" / ".attncourse" / assignment
    run_dir.mkdir(parents=True, exist_ok=True)
    results = {}
    todo, size, refused = [], {}, {}
    for student in students:
        nb = notebook_path(course, "submitted", assignment, student)
        refused[student] = refuse_submission(nb.parent)  # links removed, never followed
        if nb.is_file():
            todo.append(student)
            size[student] = nb.stat().st_size
        else:
            results[student] = {
                "student": student,
                "missing": missing_reason(nb, refused[student]),
                "refused": refused[student],
            }
    # Longest first, with the notebook's size as the guess (an untouched or damaged one runs
    # little): the short ones then fill the workers' last minutes instead of one long one
    # keeping a single worker busy at the end.
    todo.sort(key=lambda s: -size[s])
    if len(todo) > workers:
        args.append("--ResilientExecute.prewarm=True")  # each worker has a next student
    threads = threads or max(1, (os.cpu_count() or 1) // workers)
    started = time.monotonic()
    bar = tqdm(total=len(students), unit="student", disable=not progress, file=sys.stderr)
    bar.update(len(students) - len(todo))
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        max_workers=min(workers, max(len(todo), 1)),
        mp_context=context,
        initializer=_init_worker,
        initargs=(str(lock_path(db_url)), str(course), threads),
    ) as pool:
        futures = {
            pool.submit(
                grade_student, str(course), assignment, s, args, str(run_dir), refused[s]
            ): s
            for s in todo
        }
        for future in as_completed(futures):
            student = futures[future]
            try:
                results[student] = future.result()
            except Exception as e:  # the worker process itself died
                results[student] = {"student": student, "error": f"worker died: {e}"}
            if refused[student]:
                results[student]["refused"] = refused[student]
            status, _ = status_of(results[student])
            bar.set_postfix_str(f"{student}: {status}")
            if progress:
                bar.write(f"  {status:10s} {student} ({results[student].get('seconds', 0):.1f}s)")
            bar.update(1)
    bar.close()
    wall = time.monotonic() - started
    scores = cell_scores(course, assignment, url=db_url)
    for student, result in results.items():
        grades = scores.get(student, {})
        result["score"] = sum(g[0] or 0 for g in grades.values())
        result["max_score"] = sum(g[1] for g in grades.values())
        result["needs_manual"] = sum(bool(g[2]) for g in grades.values())
        result["status"], result["details"] = status_of(result)
    summary = {
        "assignment": assignment,
        "workers": workers,
        "threads_per_kernel": threads,
        "wall_s": round(wall, 2),
        "db_url": db_url.split("@")[-1],
        "students": [results[s] for s in sorted(results)],
    }
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    print_summary(summary, out)
    failed = [s for s, r in results.items() if r["status"] == "error"]
    return (1 if failed else 0), results


def print_summary(summary, out=sys.stdout):
    """The end-of-run table: per student score, status, time, protections; then totals."""
    rows = summary["students"]
    width = max([len(r["student"]) for r in rows] + [7])
    print(
        f"\n{summary['assignment']}: {len(rows)} students, {summary['workers']} workers, "
        f"{summary['wall_s']:.1f}s",
        file=out,
    )
    print(f"{'student':{width}}  {'score':>11}  {'status':10}  {'time':>6}  protections", file=out)
    for r in rows:
        score = f"{r['score']:g}/{r['max_score']:g}" if r.get("max_score") else "-"
        seconds = f"{r['seconds']:.1f}s" if "seconds" in r else "-"
        prot = protections_of(r.get("record", {})) if r.get("record") else "-"
        print(
            f"{r['student']:{width}}  {score:>11}  {r['status']:10}  {seconds:>6}  {prot}", file=out
        )
        if r["details"]:
            print(f"{'':{width}}    {r['details']}", file=out)
    counts = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print("totals: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())), file=out)
    protections = next((r["record"].get("protections") for r in rows if r.get("record")), None)
    if protections:
        hidden = ", ".join(protections.get("hidden", [])) or "nothing"
        limits = ", ".join(f"{k}={v}" for k, v in sorted(protections.get("rlimits", {}).items()))
        print(
            f"sandbox: hidden {hidden}; rlimits {limits}; kernel uid "
            f"{'fresh per kernel' if protections.get('uid') else 'unchanged'}; kernels "
            f"{'forked from a server with torch preloaded' if protections.get('preloaded') else 'started afresh'}",
            file=out,
        )
