"""Autograde a whole class on a Dask cluster: ``attncourse grade ASSIGNMENT``.

This is the client. It takes what every student submitted (each folder loses its
symlinks and special files first: :func:`attncourse.plainfiles.refuse_submission`,
removed, never followed; a symlinked notebook leaves the student ``missing``), and sends
one Dask task per student (:func:`attncourse.worker.task.grade_on_worker`): the worker runs
nbgrader's own ``AutogradeApp`` for that student in a scratch course under the course's
``nbgrader_config.py``, so every preprocessor, the sandbox and the judge apply exactly as
with plain ``nbgrader autograde``, and returns the scores, the autograded folder, the log
and the timings. Only this process writes the gradebook (SQLite or PostgreSQL, ``--db-url``)
and ``autograded/``: automatic scores and comments as autograde would have written them,
manual scores and comments kept (:func:`attncourse.gradebook.save_autograde_results`).
Tasks are keyed by run, so nothing is served from an earlier run; a worker that dies
mid-student has its student graded again elsewhere, and each student's result is written
once. The cluster is started on this machine for the run, or named by ``--scheduler``
(:mod:`attncourse.cluster`).

Students are sent longest notebook first, a few per grading slot at a time, so memory
holds only those in flight. A tqdm bar says what it waits for (the cluster's start, then
the grading) and shows progress and each student's result as it finishes; a table at the end gives per student the score, status, time, worker and active
protections, and is saved with every student's log under ``autograded/.attncourse/``. The
exit status is non-zero only when grading itself failed for someone (not when a
submission was missing, unreadable or crashed its kernel: those are reported and graded
as far as they can be).
"""

import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

import nbformat
from tqdm import tqdm

from attncourse.cluster import (
    CourseGrading,
    dashboard_of,
    grading_client,
    slots_by_host,
    task_resources,
    visible_gpus,
)
from attncourse.constants import (
    AUTOGRADED,
    RELEASE,
    RUN_RECORDS,
    SUBMITTED,
    cores,
    default_workers,
)
from attncourse.course import (
    configured_course_id,
    configured_db_url,
    course_config,
    notebook_path,
)
from attncourse.gpulanes import (
    GpuLanes,
    LanesRefused,
    gpus_with_memory,
    mps_available,
    mps_daemon,
    plan_lanes,
)
from attncourse.gradebook import cell_scores, save_autograde_results, write_assignment_definition
from attncourse.gradingsummary import outcome_of, print_summary
from attncourse.handoffs import CourseBundle, GradingJob, StudentResult, TaskResult
from attncourse.names import check_known
from attncourse.plainfiles import WHY, refusal, refuse_submission
from attncourse.roster import roster_reader
from attncourse.runrecord import RunRecord
from attncourse.worker.files import read_tree, write_tree
from attncourse.worker.task import GradingPool, WorkerFault, grade_on_worker, pool_name

IN_FLIGHT_PER_SLOT = 2  # students sent per grading slot before the first ones come back
# A student refused by a worker that could not grade (WorkerFault) is sent on, held to the
# workers that have not refused anyone (strictly: a loose restriction let Dask's work stealing
# hand it back to the idle faulty worker, and CI's soak lost a student after 4 refusals by one
# full disk); given up when MOVES different workers refused it.
MOVES = 3


@dataclass(frozen=True)
class _Run:
    """One run's settings, as the client holds them while it sends students."""

    course: Path
    assignment: str
    refused: Mapping[str, list[str]]  # student -> what refuse_submission removed
    nbgrader_args: tuple[str, ...]
    threads: int | None
    retries: int
    where: str


def students_of(course: str | os.PathLike, assignment: str) -> list[str]:
    """Students with a submission folder for ``assignment`` (submitted/<student>/<assignment>)."""
    submitted = Path(course) / SUBMITTED
    if not submitted.is_dir():
        return []
    return sorted(p.name for p in submitted.iterdir() if (p / assignment).is_dir())


def course_bundle(
    course: Path, assignment: str, db_url: str, config: Any, run: str
) -> CourseBundle:
    """What every worker needs of the course for ``assignment``: the files ``course_files``
    names (the config and its modules), the assignment's source and release folders and a
    gradebook with only its definition. Raises ``MissingEntry`` if it was never released."""
    from nbgrader.coursedir import CourseDirectory

    coursedir = CourseDirectory(config=config, root=str(course))
    files = {}
    for pattern in CourseGrading(config=config).course_files:
        for path in sorted(course.glob(pattern)):
            if refusal(path) is None and path.is_file():
                files[path.relative_to(course).as_posix()] = (path.read_bytes(), 0o644)
    for folder in (coursedir.source_directory, coursedir.release_directory):
        for rel, data in read_tree(course / folder / assignment).items():
            if ".ipynb_checkpoints" not in rel.split("/"):
                files[f"{folder}/{assignment}/{rel}"] = data
    with tempfile.TemporaryDirectory() as scratch:
        gradebook = Path(scratch) / "gradebook.db"
        roster = students_of(course, assignment)  # with the gradebook's: the class roster
        write_assignment_definition(db_url, coursedir.course_id, assignment, gradebook, roster)
        return CourseBundle(run=run, files=files, gradebook=gradebook.read_bytes())


def _the_course(bundle: CourseBundle) -> CourseBundle:
    """The run's course bundle, as a task every student's task depends on (fetched once per
    worker; kept in the task graph, so it is made again if the workers holding it die)."""
    return bundle


def status_of(result: StudentResult) -> tuple[str, str]:
    """One word for a student's run, worst first, and the details behind it.

    Files refused from the submission (the run record's ``refused_files``: symlinks, FIFOs,
    ...) make the status ``refused`` and are named in the details of any status.
    """
    status, details = _status(result, result.record)
    refused = result.record.refused_files
    if refused and status != "missing":
        listed = "refused " + "; ".join(refused)
        if status == "ok":
            return "refused", listed
        return status, f"{details}; {listed}"
    return status, details


def _status(result: StudentResult, record: RunRecord) -> tuple[str, str]:
    if result.missing:
        return "missing", result.missing
    if result.error:
        return "error", result.error
    if record.unreadable:
        return "unreadable", record.unreadable
    if record.refused:
        return "refused", record.refused
    if record.faults:
        return "faults", "; ".join(
            f"{f['fault']} in {f.get('where') or f['cell']}" for f in record.faults
        )
    if record.repairs:
        return "repaired", "; ".join(record.repairs)
    return "ok", ""


def missing_reason(nb: Path, refused: list[str]) -> str:
    """Why ``nb`` (a submitted notebook path) is not graded: refused, or not submitted."""
    for entry in refused:
        if entry.startswith(f"{nb.name}:") or "(the submission folder itself)" in entry:
            return f"refused {entry}: {WHY}; never read"
    return f"no {nb.name} submitted"


def grade(
    assignment: str,
    workers: int | None = None,
    course: str | os.PathLike = ".",
    db_url: str | None = None,
    students: list[str] | None = None,
    nbgrader_args: tuple[str, ...] = (),
    progress: bool = True,
    out: TextIO = sys.stdout,
    threads: int | None = None,
    scheduler: str | None = None,
) -> tuple[int, dict[str, StudentResult]]:
    """Autograde every submitted student of ``assignment``; return (exit status, results).

    ``students``: grade only these (``attncourse grade --student``); everyone else's scores,
    autograded folders and rows of the last run's summary stay as they were.

    ``scheduler``: address of a running Dask scheduler (default: ``c.CourseGrading.scheduler``,
    else a local cluster of ``workers`` processes, default the cores). ``threads``:
    torch/OpenMP threads per kernel (default: each host's cores shared out among its
    grading slots, so parallel kernels do not oversubscribe it).
    """
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.preprocessors import AssignLatePenalties

    course = Path(course).resolve()
    config = course_config(course)
    settings = CourseGrading(config=config)
    scheduler = scheduler or settings.scheduler or None
    db_url = db_url or configured_db_url(course, config)
    course_id = configured_course_id(course, config)
    only_some = students is not None
    students = list(students) if students is not None else students_of(course, assignment)
    if only_some:  # a typo is not a missing student: on neither the roster nor submitted/
        sqlite = db_url.removeprefix("sqlite:///")
        roster = () if sqlite != db_url and not Path(sqlite).exists() else roster_reader(db_url)()
        known = sorted(set(students_of(course, assignment)) | set(roster))
        where = f"submitted/*/{assignment}/ and the gradebook"
        check_known("student", students, known, where=where)
    if not students:
        print(f"no submissions: nothing in {course}/submitted/*/{assignment}/", file=out)
        return 0, {}
    gpus = [] if scheduler else gpus_with_memory(visible_gpus())
    lanes = None
    if gpus:  # a GPU grader: its lanes are planned (or refused) before anything else
        try:
            lanes = gpu_lanes(config, settings, gpus, workers)
        except LanesRefused as e:
            print(f"attncourse grade: {e}", file=out)
            return 2, {}
        print(f"GPU grader: {lanes.why}", file=out)
    run_dir = course / AUTOGRADED / RUN_RECORDS / assignment
    run_dir.mkdir(parents=True, exist_ok=True)
    results = {}
    todo, size, refused = [], {}, {}
    for student in students:
        nb = notebook_path(course, SUBMITTED, assignment, student)
        refused[student] = refuse_submission(nb.parent)  # links removed, never followed
        if nb.is_file():
            todo.append(student)
            size[student] = nb.stat().st_size
        else:
            results[student] = StudentResult(
                student,
                missing=missing_reason(nb, refused[student]),
                record=RunRecord(refused_files=refused[student]),
            )
    # Longest first, with the notebook's size as the guess (an untouched or damaged one runs
    # little): the short ones then fill the workers' last minutes instead of one long one
    # keeping a single worker busy at the end.
    todo.sort(key=lambda s: -size[s])
    started = time.monotonic()
    bar = tqdm(total=len(students), unit="student", disable=not progress, file=sys.stderr)
    bar.update(len(students) - len(todo))
    bar.set_description_str("starting the Dask cluster" if not scheduler else "connecting")
    n_workers = 0
    if todo:
        try:
            bundle = course_bundle(course, assignment, db_url, config, uuid.uuid4().hex[:12])
        except MissingEntry:
            print(f"{assignment} is not in the gradebook: release it first", file=out)
            return 1, {}
        late_penalty = AssignLatePenalties(config=config)
        late_penalty.init_plugin()
        local_workers = min(workers or default_workers(), len(todo))
        with (
            mps_daemon(gpus, lanes.kernel_mb if lanes else 0) as mps_pipe,
            grading_client(
                scheduler, local_workers, lanes, mps_pipe, settings.worker_wait
            ) as client,
            Gradebook(db_url, course_id) as gb,
        ):
            if lanes and lanes.kernel_mb and not mps_pipe:
                print(
                    "GPU grader: WARNING: the CUDA MPS daemon did not start; kernels sharing "
                    "a GPU have no memory limit each",
                    file=out,
                )

            def save(student: str, done: TaskResult | str) -> None:
                if isinstance(done, str):  # grading failed for good: the record the job began
                    begun = RunRecord(refused_files=refused[student])
                    result = StudentResult(student, error=done, record=begun)
                else:
                    save_s = _save(course, assignment, run_dir, gb, late_penalty, student, done)
                    result = _result_of(student, done, save_s)
                results[student] = result
                status, _ = status_of(result)
                bar.set_postfix_str(f"{student}: {status}")
                if progress:
                    worker = f", {result.worker}" if result.worker else ""
                    bar.write(f"  {status:10s} {student} ({result.seconds or 0:.1f}s{worker})")
                bar.update(1)

            def say(line: str) -> None:  # above the progress bar
                bar.write(line, file=out)

            bar.set_description_str("grading")

            run = _Run(
                course=course,
                assignment=assignment,
                refused=refused,
                nbgrader_args=tuple(nbgrader_args),
                threads=threads,
                retries=settings.retries,
                where=f"Dask scheduler {scheduler}" if scheduler else "a local Dask cluster",
            )
            n_workers = _grade_on_cluster(client, bundle, todo, run, save, say)
    bar.close()
    wall = time.monotonic() - started
    scores = cell_scores(course, assignment, url=db_url, course_id=course_id)
    released = notebook_path(course, RELEASE, assignment)
    release = nbformat.read(released, as_version=4) if released.is_file() else None
    for student, result in results.items():
        grades = scores.get(student, {})
        status, details = status_of(result)
        outcome = outcome_of(result, course, assignment, release)
        results[student] = replace(
            result,
            score=sum(g[0] or 0 for g in grades.values()),
            max_score=sum(g[1] for g in grades.values()),
            needs_manual=sum(bool(g[2]) for g in grades.values()),
            status=status,
            details=details,
            outcome=outcome.status.value if outcome else "",
            reason=outcome.reason if outcome else "",
            next_step=outcome.next_step if outcome else "",
        )
    rows = [results[s].summary() for s in sorted(results)]
    if only_some:  # a regrade of a few: everyone else's rows of the last run stay
        rows = merged_rows(run_dir / "summary.json", rows)
    summary = {
        "assignment": assignment,
        "scheduler": scheduler or "local",
        "workers": n_workers,
        "threads_per_kernel": threads
        or sorted({r.threads_per_kernel for r in results.values() if r.threads_per_kernel}),
        "wall_s": round(wall, 2),
        "db_url": db_url.split("@")[-1],
        "students": rows,
    }
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    print_summary(summary, [results[s] for s in sorted(results)], out)
    failed = [s for s, r in results.items() if r.status == "error"]
    return (1 if failed else 0), results


def gpu_lanes(config: Any, settings: CourseGrading, gpus: list, workers: int | None) -> GpuLanes:
    """The kernels each visible GPU runs: ``workers`` in all, else ``kernels_per_gpu`` per
    GPU, else the default from the cores and each GPU's free memory, at
    ``c.SandboxKernelManager.gpu_memory_mb`` per kernel. Raises ``LanesRefused``."""
    from attncourse.sandbox.kernelmanager import SandboxKernelManager

    manager = SandboxKernelManager(config=config)
    requested = workers or (settings.kernels_per_gpu * len(gpus) or None)
    if not mps_available():
        why_not = "CUDA MPS is unavailable"
    elif os.geteuid() == 0 and manager.drop_privileges:
        # MPS serves one uid's clients at a time: kernels of fresh uids would wait in turn
        why_not = (
            "graded as root, each kernel runs as a fresh uid, which one MPS server cannot share"
        )
    else:
        why_not = ""
    return plan_lanes(
        gpus, requested, cores(), manager.gpu_memory_mb, isolated=not why_not, why_not=why_not
    )


def merged_rows(previous_summary: Path, rows: list[dict]) -> list[dict]:
    """``rows`` of the students just graded, after the rows of everyone else in the summary
    of the run before (if any), sorted by student."""
    graded = {r["student"] for r in rows}
    earlier = []
    if previous_summary.exists():
        earlier = json.loads(previous_summary.read_text()).get("students", [])
    kept = [r for r in earlier if r.get("student") not in graded]
    return sorted([*kept, *rows], key=lambda r: r["student"])


def _grade_on_cluster(
    client: Any,
    bundle: CourseBundle,
    todo: list[str],
    run: _Run,
    save: Callable[[str, TaskResult | str], None],
    say: Callable[[str], None],
) -> int:
    """Grade ``todo`` on ``client``'s cluster, calling ``save(student, task result or the
    error)`` as each comes back and ``say`` with news of the cluster; return the number of
    workers."""
    info = client.scheduler_info()
    slots = slots_by_host(info)
    say(f"{run.assignment}: grading on {run.where}, {len(info['workers'])} workers")
    dashboard = dashboard_of(client)
    if dashboard:
        say(f"Dask dashboard: {dashboard}")
    args = run.nbgrader_args
    if len(todo) > sum(slots.values()):
        args += ("--ResilientExecute.prewarm=True",)  # each has a next student
    name = pool_name(bundle.run)
    client.register_plugin(GradingPool(bundle.run), name=name)
    try:
        for student, done in _graded(client, bundle, todo, run, args, slots, task_resources(info)):
            save(student, done)
    finally:
        try:  # closes the run's grading processes on every worker
            client.unregister_worker_plugin(name)
        except Exception:  # noqa: BLE001 - a worker gone already took its grading processes along
            pass
    return len(info["workers"])


def grading_job(run: _Run, student: str, args: tuple[str, ...], slots: dict) -> GradingJob:
    """The job of ``student``: their submitted folder, read now (after its links were refused,
    which the run record carries), and what the worker needs to grade it."""
    folder = notebook_path(run.course, SUBMITTED, run.assignment, student).parent
    return GradingJob(
        assignment=run.assignment,
        student=student,
        files=read_tree(folder),
        record=RunRecord(refused_files=list(run.refused[student])),
        nbgrader_args=args,
        threads=run.threads,
        slots=slots,
    )


def _graded(
    client: Any,
    bundle: CourseBundle,
    todo: list[str],
    run: _Run,
    args: tuple[str, ...],
    slots: dict,
    resources: dict | None,
) -> Iterator[tuple[str, TaskResult | str]]:
    """Yield (student, task result) as the cluster grades ``todo``, sending a few students per
    grading slot at a time; a task that failed for good yields the error's words instead. A
    student a worker could not grade for its own reason (:class:`WorkerFault`: its disk full,
    ...) is sent again, to the other workers only (until ``MOVES`` different workers refused
    it); the others are steered away from the workers that refused anyone (loosely: if every
    fit worker leaves, any worker). A moved student waits for a fit worker if all have left."""
    from distributed import as_completed

    the_course = client.submit(_the_course, bundle, key=f"course-{run.assignment}-{bundle.run}")
    pending = list(todo)
    futures: dict[Any, str] = {}
    moved: dict[str, int] = {}  # student -> times sent to another worker
    refused_by: dict[str, set[str]] = {}  # student -> the workers that could not grade it
    unfit: set[str] = set()  # addresses of workers that could not grade
    done = as_completed()

    def send_more() -> None:
        info = client.scheduler_info(n_workers=-1 if unfit else 1)
        window = IN_FLIGHT_PER_SLOT * max(1, info["total_threads"])
        fit = (sorted(set(info["workers"]) - unfit) or None) if unfit else None  # None: any
        while pending and len(futures) < window:
            student = pending.pop(0)
            again = f"-moved{moved[student]}" if student in moved else ""
            future = client.submit(
                grade_on_worker,
                the_course,
                grading_job(run, student, args, slots),
                key=f"grade-{student}-{bundle.run}{again}",
                retries=run.retries,
                resources=resources,
                priority=len(pending),  # in the order sent: longest first
                pure=False,
                workers=fit,
                allow_other_workers=bool(fit) and student not in refused_by,
            )
            futures[future] = student
            done.add(future)

    send_more()
    for future in done:
        student = futures.pop(future)
        try:
            result: TaskResult | str = future.result()
        except WorkerFault as e:
            future.release()
            unfit.add(e.address)
            refused_by.setdefault(student, set()).add(e.address)
            workers = client.scheduler_info(n_workers=-1)["workers"]
            if len(refused_by[student]) < MOVES and set(workers) - unfit:
                moved[student] = moved.get(student, 0) + 1
                pending.insert(0, student)
                send_more()
                continue
            result = (
                f"grading failed: {len(refused_by[student])} worker(s) could not grade it, "
                f"and no other is fit; the last: {e}"
                if not set(workers) - unfit
                else f"grading failed: {len(refused_by[student])} workers could not grade it; "
                f"the last: {e}"
            )
        except Exception as e:  # noqa: BLE001 - its workers died, or its task failed for good
            result = f"grading failed: {type(e).__name__}: {e}"
        future.release()
        yield student, result
        send_more()


def _save(
    course: Path,
    assignment: str,
    run_dir: Path,
    gb: Any,
    late_penalty: Any,
    student: str,
    task: TaskResult,
) -> float:
    """Write one student's result: the log, the autograded folder and the gradebook; return
    the seconds it took."""
    started = time.monotonic()
    (run_dir / f"{student}.log").write_text(task.log)
    folder = notebook_path(course, AUTOGRADED, assignment, student).parent
    if task.files:
        write_tree(folder, task.files)
    else:
        shutil.rmtree(folder, ignore_errors=True)  # as autograde --force left it
    if task.autograde.gradebook:
        gradebook = task.autograde.gradebook
        reconnecting(
            gb, lambda: save_autograde_results(gb, assignment, student, gradebook, late_penalty)
        )
    return round(time.monotonic() - started, 3)


def _result_of(student: str, task: TaskResult, save_s: float) -> StudentResult:
    """The student's row from their task (what was delivered elsewhere left behind)."""
    autograde = task.autograde
    return StudentResult(
        student,
        error=autograde.error,
        seconds=autograde.seconds,
        record=autograde.record,
        read_gradebook_s=autograde.read_gradebook_s,
        worker=task.worker,
        worker_address=task.worker_address,
        gpu=task.gpu,
        threads_per_kernel=task.threads_per_kernel,
        task_s=task.task_s,
        save_s=save_s,
    )


def reconnecting(gb: Any, write: Any, tries: int = 6) -> Any:
    """``write()`` to the gradebook; where the database went away (restarted, a connection cut)
    the transaction is rolled back and written again on a fresh connection, for about a minute."""
    from sqlalchemy.exc import OperationalError

    for attempt in range(tries):
        try:
            return write()
        except OperationalError:  # the connection, not the data: a constraint is no such error
            gb.db.rollback()
            if attempt == tries - 1:
                raise
            time.sleep(2**attempt)
