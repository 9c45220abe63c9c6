"""Read a graded course into :class:`~attncourse.report.model.AssignmentReport`s, in course order.

Scores and the answers waiting for a grader come from nbgrader's gradebook (``Grade``:
``score``, ``max_score``, ``needs_manual_grade``); which tests failed, why, the status of the
submission and the parts attempted from the autograded notebooks against the release
(:mod:`attncourse.status`, :mod:`attncourse.parts`); a test whose points a grader changed
still counts as passed or failed on its own merits. Grading time comes from the summary
``attncourse grade`` writes (``autograded/.attncourse/<assignment>/summary.json``: rows of
``student``, ``seconds``, ``status``), else from the autograded notebooks' own timing.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory

from attncourse.cells import grade_id, is_test_cell
from attncourse.constants import RUN_RECORDS
from attncourse.course import ASSIGNMENTS
from attncourse.integrity.findings import findings_of
from attncourse.parts import cell_parts
from attncourse.report.causes import cause_of, not_attempted
from attncourse.report.model import AssignmentReport, Mistake, PartResult, Submission
from attncourse.runrecord import RunRecord
from attncourse.status import Status, SubmissionStatus, attempted, status_of

RUN_SUMMARY = "summary.json"  # in autograded/.attncourse/<assignment>/, by attncourse.pipeline


@dataclass
class ClassReport:
    """The whole course: its assignments in course order and its students' names."""

    assignments: list[AssignmentReport]
    names: dict[str, str]  # student id -> the name the page shows

    def name(self, student: str) -> str:
        return self.names.get(student, student)


def course_order(names: list[str]) -> list[str]:
    """``names`` in the course's order (``attncourse.course.ASSIGNMENTS``), others after, A-Z."""
    rank = {a: i for i, a in enumerate(ASSIGNMENTS)}
    return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))


def display_names(students) -> dict[str, str]:
    """student id -> "First Last" from the gradebook (the id without a name); a name two
    students share gets the id beside it."""
    names = {
        s.id: " ".join(n for n in (s.first_name, s.last_name) if n and n != "None") or s.id
        for s in students
    }
    counts: dict[str, int] = {}
    for name in names.values():
        counts[name] = counts.get(name, 0) + 1
    return {i: (f"{n} ({i})" if counts[n] > 1 and n != i else n) for i, n in names.items()}


def run_summary_path(autograded: str | os.PathLike, assignment: str) -> Path:
    return Path(autograded) / RUN_RECORDS / assignment / RUN_SUMMARY


def read_run_summary(autograded: str | os.PathLike, assignment: str) -> list[dict]:
    """The rows (student, seconds, status) of the grading run's summary, or [] without one."""
    path = run_summary_path(autograded, assignment)
    return json.loads(path.read_text()).get("students", []) if path.exists() else []


def notebook_seconds(nb: NotebookNode) -> float | None:
    """Seconds the notebook took to execute, from the grading record or nbclient's cell timing."""
    timing = RunRecord.of(nb).timing
    if "execute_s" in timing:
        return float(timing["execute_s"])
    stamps = []
    for cell in nb.cells:
        execution = cell.get("metadata", {}).get("execution", {})
        for key in ("iopub.execute_input", "shell.execute_reply"):
            if key in execution:
                stamps.append(datetime.fromisoformat(execution[key].replace("Z", "+00:00")))
    return (max(stamps) - min(stamps)).total_seconds() if stamps else None


def _read(path: Path) -> NotebookNode | None:
    try:
        return nbformat.read(path, as_version=4)
    except (OSError, ValueError):  # not there, or not a notebook
        return None


def collect(course_dir: str | os.PathLike) -> ClassReport:
    """Every assignment with submissions in the course's gradebook, in course order."""
    coursedir = CourseDirectory(root=str(Path(course_dir).resolve()))
    root = Path(coursedir.root)
    reports = []
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        names = display_names(gb.students)
        by_name = {a.name: a for a in gb.assignments if a.num_submissions}
        for name in course_order(list(by_name)):
            report = AssignmentReport(name, by_name[name].max_score)
            _read_assignment(report, by_name[name], root, coursedir, names)
            reports.append(report)
    return ClassReport(reports, names)


def not_handed_in(row: dict | None, reason: str) -> SubmissionStatus:
    """Refused (what was handed in was a link or a special file, never read) or missing, with
    the grading run's own words when its summary has a row (``row``) for the student."""
    details = (row or {}).get("details") or ""
    if details.startswith("refused"):
        return SubmissionStatus(Status.REFUSED, details)
    return SubmissionStatus(Status.MISSING, details or reason)


def _read_assignment(report, assignment, root, coursedir, roster):
    autograded = root / coursedir.autograded_directory
    releases = {
        nb.name: _read(root / coursedir.release_directory / assignment.name / f"{nb.name}.ipynb")
        for nb in assignment.notebooks
    }
    many = len(releases) > 1
    labels = {}  # (notebook, grade_id) -> (the part's label as the page shows it, cell kind)
    for nb_name, release in releases.items():
        for gid, part in (cell_parts(release) if release else {}).items():
            label = part.part or gid  # a notebook whose text names no parts: the grade ids
            label = f"{nb_name}: {label}" if many else label
            labels[(nb_name, gid)] = (label, part.kind)
    rows = {r["student"]: r for r in read_run_summary(autograded, assignment.name)}
    for submission in assignment.submissions:
        student = submission.student.id
        sub = Submission(student, SubmissionStatus(Status.GRADED), submission.score)
        report.submissions[student] = sub
        for notebook in submission.notebooks:
            path = autograded / student / assignment.name / f"{notebook.name}.ipynb"
            _read_notebook(report, sub, notebook, _read(path), releases[notebook.name], labels)
            if sub.status.status is Status.MISSING:
                sub.status = not_handed_in(rows.get(student), sub.status.reason)
    for student in sorted((set(roster) | set(rows)) - set(report.submissions)):
        status = not_handed_in(rows.get(student), "no submission in the gradebook")
        report.submissions[student] = Submission(student, status)
    graded_parts = {p for s in report.submissions.values() for p in s.parts}
    report.parts = list(dict.fromkeys(lb for lb, _ in labels.values() if lb in graded_parts))
    for label, kind in labels.values():
        report.kinds.setdefault(label, set()).add(kind)
    if rows:
        report.seconds = {s: r["seconds"] for s, r in rows.items() if "seconds" in r}
        report.run_status = {s: r.get("status", "") for s, r in rows.items()}
        report.timing_source = "the summary of the last attncourse grade run"
    else:
        report.timing_source = "execution time recorded in the autograded notebooks"


def _read_notebook(report, sub, notebook, nb, release, labels):
    student = sub.student
    if nb is None:
        sub.status = SubmissionStatus(Status.MISSING, f"no autograded {notebook.name}.ipynb")
    else:
        sub.status = status_of(nb, release)
    done = attempted(nb, release) if nb is not None and release is not None else set()
    failed = _failed_tests(nb) if nb is not None else {}
    for grade in notebook.grades:
        label, kind = labels.get((notebook.name, grade.name), (grade.name, "test"))
        part = sub.parts.setdefault(label, PartResult())
        part.score += grade.score or 0.0
        part.max_score += grade.max_score or 0.0
        part.written += kind == "written"
        if kind == "written" and grade.needs_manual_grade:
            part.waiting += 1
            part.waiting_points += grade.max_score or 0.0
        if kind != "written":
            part.review += bool(grade.needs_manual_grade)
            part.tests += 1
            if nb is None:
                part.failed += (grade.auto_score or 0.0) < grade.max_score
            elif grade.name in failed:
                part.failed += 1
    for (nb_name, gid), (label, _) in labels.items():
        if nb_name == notebook.name and gid in done and label in sub.parts:
            sub.parts[label].attempted = True
    if nb is None:
        return
    if sub.graded:
        for gid, error in failed.items():
            label = labels.get((notebook.name, gid), (gid,))[0]
            if sub.parts.get(label, PartResult()).attempted and not not_attempted(error):
                report.mistakes.append(Mistake(student, label, gid, cause_of(error)))
    record = RunRecord.of(nb)
    for finding in findings_of(nb):  # charged to an answer's grade id: shown by its part
        label = labels.get((notebook.name, finding.part), (finding.part,))[0]
        report.findings.append((student, replace(finding, part=label)))
    if notebook.flagged:
        kinds = sorted({f.kind for s, f in report.findings if s == student})
        report.flagged[student] = (
            f"integrity: {', '.join(kinds)}" if kinds else "flagged by a grader"
        )
    for match in record.instance_matches:
        parts = report.instance_matches.setdefault(student, {}).setdefault(match["student"], [])
        parts.append(match["part"])
    seconds = notebook_seconds(nb)
    if seconds is not None:
        report.seconds[student] = report.seconds.get(student, 0.0) + seconds


def _failed_tests(nb: NotebookNode) -> dict[str, NotebookNode]:
    """grade_id -> the last error output of every test cell that failed."""
    out = {}
    for cell in nb.cells:
        if is_test_cell(cell):
            errors = [o for o in cell.outputs if o.output_type == "error"]
            if errors:
                out[grade_id(cell)] = errors[-1]
    return out
