"""The instructor's command line: ``attncourse <command>`` (the Makefile calls it).

Every command acts on the course in the current directory, or the one ``--course DIR``
names (where its ``nbgrader_config.py`` is), as nbgrader's own commands do.
"""

import argparse
import sys
from pathlib import Path

from attncourse.constants import DEMO, RELEASE, SOURCE
from attncourse.course import ROOT, assignments, nbgrader
from attncourse.names import UnknownName, check_known


def cmd_release(args: argparse.Namespace) -> int:
    """Build release/ from source/ (generate_assignment, then the rule prover) and publish it."""
    from attncourse.exchange import publish
    from attncourse.prover import write_prover

    for assignment in args.assignments or assignments(args.course):
        nbgrader("generate_assignment", assignment, "--force", cwd=args.course)
        write_prover(assignment, args.course)  # the rule prover the notebook's test cells call
        publish(assignment, args.course)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Release, autograde the bundled demo submissions, feedback, export; print where results are."""
    from attncourse.demo import run_demo

    return run_demo(args.dir or args.course / DEMO, args.course)


def cmd_grade(args: argparse.Namespace) -> int:
    """Autograde every submission of one assignment (or only --student's) in parallel, sandboxed."""
    from attncourse.pipeline import grade

    status, _ = grade(
        args.assignment,
        students=args.students,
        workers=args.workers,
        course=args.course,
        db_url=args.db_url,
        threads=args.threads,
        scheduler=args.scheduler,
    )
    return status


def cmd_bench(args: argparse.Namespace) -> int:
    """Time the grading of complete notebooks (the solution and a partly wrong student):
    stock nbgrader autograde, nbgrader autograde with the course's config, attncourse grade
    with 1 and with N workers, and the floor (the code cells run by plain python, N at a
    time); print the three target ratios and where one submission's time goes."""
    from devtools.bench import run_bench

    return run_bench(
        args.assignment,
        copies=args.copies,
        workers=args.workers,
        rounds=args.rounds,
        dest=args.dir,
        course=args.course,
    )


def cmd_feedback(args: argparse.Namespace) -> int:
    """Generate feedback (test results and messages, no hidden tests) for one assignment."""
    from attncourse.feedback import generate_feedback

    return generate_feedback(args.course, args.assignment)


def cmd_export(args: argparse.Namespace) -> int:
    """Export grades to grades.csv (nbgrader's) and canvas_grades.csv (Canvas import)."""
    from attncourse.export import export_grades

    return export_grades(args.course, roster=args.roster)


def cmd_report(args: argparse.Namespace) -> int:
    """Write the HTML grading report (scores, failing tests, integrity, timing)."""
    from attncourse.report.page import build_report

    print(f"wrote {build_report(args.course, args.out)}")
    return 0


def cmd_scan(args: argparse.Namespace) -> int:
    """Scan the submitted notebooks of one assignment for tampering, without running them."""
    from attncourse.integrity.command import print_findings, scan_submissions

    print_findings(scan_submissions(args.course, args.assignment))
    return 0


def cmd_similarity(args: argparse.Namespace) -> int:
    """Compare every pair of students' answers, part by part; write the CSV and HTML page."""
    from attncourse.similarity.page import similarity_report

    try:
        csv_out, html_out, flagged = similarity_report(args.course, args.assignment)
    except FileNotFoundError as err:
        print(f"attncourse similarity: {err} (run attncourse release first)", file=sys.stderr)
        return 2
    print(f"{flagged} answers flagged; wrote {html_out} and {csv_out}")
    return 0


def cmd_instance(args: argparse.Namespace) -> int:
    """Print one student's own numbers and their expected answers as JSON."""
    import importlib
    import json

    try:
        module = importlib.import_module(f"attncourse.grading.{args.assignment}.references")
    except ModuleNotFoundError:
        module = None
    if not hasattr(module, "instance_json"):
        print(f"attncourse instance: {args.assignment} has no per-student numbers", file=sys.stderr)
        return 2
    print(json.dumps(module.instance_json(args.student), indent=1))
    return 0


def cmd_collect(args: argparse.Namespace) -> int:
    """Collect the students' submissions of one assignment from the exchange."""
    from attncourse.exchange import collect

    return collect(args.assignment, args.course).returncode


def cmd_return_feedback(args: argparse.Namespace) -> int:
    """Put the generated feedback of one assignment in the exchange for students to fetch."""
    from attncourse.exchange import return_feedback

    return return_feedback(args.assignment, args.course).returncode


def cmd_collect_lms(args: argparse.Namespace) -> int:
    """Collect a Canvas or Moodle download (zip) into submitted/ and report what did not match."""
    from attncourse.lms import collect_lms, report

    columns = args.roster_columns.split(",") if args.roster_columns else None
    entries, roster = collect_lms(
        args.zip, args.assignment, course=args.course, roster=args.roster, roster_columns=columns
    )
    print("\n".join(report(entries, roster)))
    return 0 if any(e.reason is None for e in entries.values()) else 1


def cmd_release_zip(args: argparse.Namespace) -> int:
    """Write dist/<assignment>.zip with exactly what release/<assignment>/ holds."""
    from attncourse.lms import release_zip

    for assignment in args.assignments or assignments(args.course):
        print(f"wrote {release_zip(assignment, args.course)}")
    return 0


def cmd_formgrader(args: argparse.Namespace) -> int:
    """Start JupyterLab with formgrader on the course (127.0.0.1, fresh token)."""
    from attncourse.formgrader import serve

    return serve(course=args.course, port=args.port)


def cmd_workload(args: argparse.Namespace) -> int:
    """Print how long grading the written answers by hand takes per student."""
    from attncourse.workload import workload_table

    print(workload_table(args.course))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="attncourse", description=__doc__)
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument(
        "--course",
        type=lambda path: Path(path).resolve(),
        default=Path.cwd(),
        help="the course directory, where nbgrader_config.py is (default: this directory)",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("release", parents=[where], help=cmd_release.__doc__)
    p.add_argument("assignments", nargs="*")
    p.set_defaults(func=cmd_release)

    p = commands.add_parser("demo", parents=[where], help=cmd_demo.__doc__)
    p.add_argument("--dir", default=None, help="scratch course directory (default: COURSE/.demo)")
    p.set_defaults(func=cmd_demo)

    p = commands.add_parser("grade", parents=[where], help=cmd_grade.__doc__)
    p.add_argument("assignment")
    p.add_argument(
        "--student",
        dest="students",
        action="append",
        default=None,
        metavar="ID",
        help="grade only this student (again), keeping everyone else's scores; repeatable",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="workers of the local cluster, one kernel each (default: cores)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads per kernel (default: cores / workers)",
    )
    p.add_argument("--db-url", default=None, help="gradebook URL (default: the course's SQLite)")
    p.add_argument(
        "--scheduler",
        default=None,
        help="Dask scheduler to grade on, tcp://HOST:8786 (default: c.CourseGrading.scheduler, "
        "else a local cluster of --workers processes)",
    )
    p.set_defaults(func=cmd_grade)

    p = commands.add_parser("bench", parents=[where], help=cmd_bench.__doc__)
    p.add_argument("--assignment", default="attention_variants")
    p.add_argument(
        "--copies", type=int, default=4, help="copies of the solution and of the partly wrong one"
    )
    p.add_argument("--rounds", type=int, default=1, help="turns of the five configurations")
    p.add_argument(
        "--workers", type=int, default=None, help="the parallel run and floor (default: cores)"
    )
    p.add_argument("--dir", default=None, help="keep the scratch courses here (default: temporary)")
    p.set_defaults(func=cmd_bench)

    p = commands.add_parser("feedback", parents=[where], help=cmd_feedback.__doc__)
    p.add_argument("assignment")
    p.set_defaults(func=cmd_feedback)

    p = commands.add_parser("export", parents=[where], help=cmd_export.__doc__)
    p.add_argument("--roster", help="Canvas gradebook export CSV giving Canvas ids")
    p.set_defaults(func=cmd_export)

    p = commands.add_parser("report", parents=[where], help=cmd_report.__doc__)
    p.add_argument("--out", default=None, help="default: COURSE/reports/index.html")
    p.set_defaults(func=cmd_report)

    p = commands.add_parser("scan", parents=[where], help=cmd_scan.__doc__)
    p.add_argument("assignment")
    p.set_defaults(func=cmd_scan)

    p = commands.add_parser("similarity", parents=[where], help=cmd_similarity.__doc__)
    p.add_argument("assignment")
    p.set_defaults(func=cmd_similarity)

    p = commands.add_parser("instance", help=cmd_instance.__doc__)
    p.add_argument("assignment")
    p.add_argument("--student", required=True, help="the id the student is graded under")
    p.set_defaults(func=cmd_instance)

    p = commands.add_parser("collect", parents=[where], help=cmd_collect.__doc__)
    p.add_argument("assignment")
    p.set_defaults(func=cmd_collect)

    p = commands.add_parser("return-feedback", parents=[where], help=cmd_return_feedback.__doc__)
    p.add_argument("assignment")
    p.set_defaults(func=cmd_return_feedback)

    p = commands.add_parser("collect-lms", parents=[where], help=cmd_collect_lms.__doc__)
    p.add_argument("zip", help="the LMS's download of all submissions")
    p.add_argument("assignment")
    p.add_argument("--roster", help="CSV mapping LMS ids to student ids")
    p.add_argument("--roster-columns", help="LMS_COLUMN,STUDENT_COLUMN (default lms_id,student_id)")
    p.set_defaults(func=cmd_collect_lms)

    p = commands.add_parser("release-zip", parents=[where], help=cmd_release_zip.__doc__)
    p.add_argument("assignments", nargs="*")
    p.set_defaults(func=cmd_release_zip)

    p = commands.add_parser("formgrader", parents=[where], help=cmd_formgrader.__doc__)
    p.add_argument("--port", type=int, default=8888)
    p.set_defaults(func=cmd_formgrader)

    p = commands.add_parser("workload", parents=[where], help=cmd_workload.__doc__)
    p.set_defaults(func=cmd_workload)
    return parser


def check_assignments(args: argparse.Namespace) -> None:
    """Stop with :class:`UnknownName` if the command names an assignment the course lacks."""
    named = getattr(args, "assignments", None) or []
    if getattr(args, "assignment", None):
        named = [args.assignment]
    course = getattr(args, "course", ROOT)
    if named:
        check_known("assignment", named, course_assignments(course), where=f"{course}")


def course_assignments(course: Path) -> list[str]:
    """The assignments ``course`` has: its ``source/`` ones in course order, then any that only
    ``release/`` holds (a course directory that was given the release alone)."""
    known = assignments(course) if (course / SOURCE).is_dir() else []
    released = course / RELEASE
    if released.is_dir():
        known += sorted(p.name for p in released.iterdir() if p.is_dir() and p.name not in known)
    return known


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        check_assignments(args)
        status = args.func(args)
    except UnknownName as unknown:
        print(f"attncourse {args.command}: {unknown}", file=sys.stderr)
        status = 2
    sys.exit(status)
