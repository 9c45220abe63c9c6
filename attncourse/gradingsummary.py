"""What ``attncourse grade`` says at the end of a run: a row per student, then the class.

Each student's submission gets one word of :mod:`attncourse.status` (graded, untouched,
unreadable, refused, missing), counted apart: a not-graded student is listed with the
reason and the next step, never hidden in a 0 score.
"""

import sys
from pathlib import Path
from typing import TextIO

import nbformat

from attncourse.constants import AUTOGRADED
from attncourse.course import notebook_path
from attncourse.handoffs import StudentResult
from attncourse.runrecord import RunRecord
from attncourse.status import Status, SubmissionStatus, status_of

GRADING_FAILED = "grading failed"  # not the submission's status: the grader's own failure


def outcome_of(
    result: StudentResult, course: Path, assignment: str, release: nbformat.NotebookNode | None
) -> SubmissionStatus | None:
    """The status of ``result``'s submission (None when grading itself failed): refused or
    missing from the client's result, else from the autograded notebook and the release."""
    if result.error:
        return None
    if result.missing:
        refused = result.missing.startswith("refused")  # pipeline.missing_reason's words
        return SubmissionStatus(Status.REFUSED if refused else Status.MISSING, result.missing)
    path = notebook_path(course, AUTOGRADED, assignment, result.student)
    try:
        graded = nbformat.reads(Path(path).read_text(), as_version=4)
    except (OSError, ValueError):  # not written: the record the worker sent says all
        if result.record.unreadable:
            return SubmissionStatus(Status.UNREADABLE, result.record.unreadable)
        return SubmissionStatus(Status.GRADED)
    return status_of(graded, release)


def protections_of(record: RunRecord) -> str:
    """Short names of the protections a student's kernel ran with."""
    p = record.protections or {}
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


def class_totals(results: list[StudentResult]) -> str:
    """ "3 graded, 1 untouched, 1 unreadable, 0 refused, 0 missing" (and grading failures)."""
    counts = {status.value: 0 for status in Status}
    failed = 0
    for r in results:
        if r.outcome:
            counts[r.outcome] += 1
        else:
            failed += 1
    words = [f"{n} {word}" for word, n in counts.items()]
    return ", ".join(words + ([f"{failed} {GRADING_FAILED}"] if failed else []))


def print_summary(summary: dict, results: list[StudentResult], out: TextIO = sys.stdout) -> None:
    """The end-of-run table: per student score, status, time, worker, protections; then the
    class's totals, and each student not graded with the reason and the next step.

    ``results``: the students' :class:`StudentResult`, in the summary's order."""
    width = max([len(r.student) for r in results] + [7])
    print(
        f"\n{summary['assignment']}: {len(results)} students, {summary['workers']} workers, "
        f"{summary['wall_s']:.1f}s",
        file=out,
    )
    workers = max([len(r.worker or "-") for r in results] + [6])
    print(
        f"{'student':{width}}  {'score':>11}  {'status':10}  {'time':>6}  {'worker':{workers}}  "
        "protections",
        file=out,
    )
    for r in results:
        graded = r.outcome == Status.GRADED
        score = f"{r.score:g}/{r.max_score:g}" if r.max_score and graded else "-"
        seconds = f"{r.seconds:.1f}s" if r.seconds is not None else "-"
        prot = protections_of(r.record) if r.record != RunRecord() else "-"
        status = r.status if graded or not r.outcome else r.outcome
        print(
            f"{r.student:{width}}  {score:>11}  {status:10}  {seconds:>6}  "
            f"{r.worker or '-':{workers}}  {prot}",
            file=out,
        )
        if r.details and (graded or not r.outcome):
            print(f"{'':{width}}    {r.details}", file=out)
    print(f"totals: {class_totals(results)}", file=out)
    runs = {}
    for r in results:
        if r.outcome == Status.GRADED:
            runs[r.status] = runs.get(r.status, 0) + 1
    if runs:
        print("graded runs: " + ", ".join(f"{n} {s}" for s, n in sorted(runs.items())), file=out)
    not_graded = [r for r in results if r.outcome and r.outcome != Status.GRADED]
    if not_graded:
        print(f"not graded ({len(not_graded)}): the score does not count them", file=out)
    for r in not_graded:
        also = f" ({r.details})" if r.details and r.details not in r.reason else ""
        print(f"  {r.student}: {r.outcome}: {r.reason}{also}", file=out)
        print(f"  {'':{len(r.student)}}  next step: {r.next_step}", file=out)
    protections = next((r.record.protections for r in results if r.record.protections), None)
    if protections:
        hidden = ", ".join(protections.get("hidden", [])) or "nothing"
        limits = ", ".join(f"{k}={v}" for k, v in sorted(protections.get("rlimits", {}).items()))
        print(
            f"sandbox: hidden {hidden}; rlimits {limits}; kernel uid "
            f"{'fresh per kernel' if protections.get('uid') else 'unchanged'}; kernels "
            f"{'forked from a server with torch preloaded' if protections.get('preloaded') else 'started afresh'}",
            file=out,
        )
