"""The instructor's command line: ``attncourse <command>`` (the Makefile calls it)."""

import argparse
import sys

from attncourse.course import ROOT, assignments, nbgrader


def cmd_release(args):
    """Build release/ from source/ (generate_assignment) and publish it to the exchange."""
    from attncourse.exchange import publish

    for assignment in args.assignments or assignments():
        nbgrader("generate_assignment", assignment, "--force", cwd=ROOT)
        publish(assignment)
    return 0


def cmd_demo(args):
    """Release, autograde the bundled demo submissions, feedback, export; print where results are."""
    from attncourse.demo import run_demo

    return run_demo(args.dir)


def cmd_grade(args):
    """Autograde every submission of one assignment in parallel, sandboxed; print a summary."""
    from attncourse.pipeline import grade

    status, _ = grade(
        args.assignment, workers=args.workers, db_url=args.db_url, threads=args.threads
    )
    return status


def cmd_bench(args):
    """Time stock nbgrader autograde against this pipeline at 1 and N workers."""
    from attncourse.bench import run_bench

    return run_bench(
        args.assignment,
        copies=args.copies,
        workers=args.workers,
        rounds=args.rounds,
        dest=args.dir,
    )


def cmd_feedback(args):
    """Generate feedback (test results and messages, no hidden tests) for one assignment."""
    from attncourse.feedback import generate_feedback

    return generate_feedback(ROOT, args.assignment)


def cmd_export(args):
    """Export grades to grades.csv (nbgrader's) and canvas_grades.csv (Canvas import)."""
    from attncourse.export import export_grades

    return export_grades(ROOT, roster=args.roster)


def cmd_report(args):
    """Write the HTML grading report (scores, failing tests, integrity, timing)."""
    from attncourse.report import build_report

    print(f"wrote {build_report(ROOT, args.out)}")
    return 0


def cmd_scan(args):
    """Scan the submitted notebooks of one assignment for tampering, without running them."""
    from attncourse.integrity import print_findings, scan_submissions

    print_findings(scan_submissions(ROOT, args.assignment))
    return 0


def cmd_collect(args):
    """Collect the students' submissions of one assignment from the exchange."""
    from attncourse.exchange import collect

    return collect(args.assignment).returncode


def cmd_return_feedback(args):
    """Put the generated feedback of one assignment in the exchange for students to fetch."""
    from attncourse.exchange import return_feedback

    return return_feedback(args.assignment).returncode


def cmd_collect_lms(args):
    """Collect a Canvas or Moodle download (zip) into submitted/ and report what did not match."""
    from attncourse.lms import collect_lms, report

    columns = args.roster_columns.split(",") if args.roster_columns else None
    entries, roster = collect_lms(
        args.zip, args.assignment, roster=args.roster, roster_columns=columns
    )
    print("\n".join(report(entries, roster)))
    return 0 if any(e.reason is None for e in entries.values()) else 1


def cmd_release_zip(args):
    """Write dist/<assignment>.zip with exactly what release/<assignment>/ holds."""
    from attncourse.lms import release_zip

    for assignment in args.assignments or assignments():
        print(f"wrote {release_zip(assignment)}")
    return 0


def cmd_formgrader(args):
    """Start JupyterLab with formgrader on the course (127.0.0.1, fresh token)."""
    from attncourse.formgrader import serve

    return serve(course=args.course, port=args.port)


def cmd_workload(args):
    """Print how long grading the written answers by hand takes per student."""
    from attncourse.formgrader import workload_table

    print(workload_table())
    return 0


def build_parser():
    parser = argparse.ArgumentParser(prog="attncourse", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("release", help=cmd_release.__doc__)
    p.add_argument("assignments", nargs="*")
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("demo", help=cmd_demo.__doc__)
    p.add_argument("--dir", default=str(ROOT / ".demo"), help="scratch course directory")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("grade", help=cmd_grade.__doc__)
    p.add_argument("assignment")
    p.add_argument("--workers", type=int, default=None, help="parallel kernels (default: cores)")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads per kernel (default: cores / workers)",
    )
    p.add_argument("--db-url", default=None, help="gradebook URL (default: the course's SQLite)")
    p.set_defaults(func=cmd_grade)

    p = sub.add_parser("bench", help=cmd_bench.__doc__)
    p.add_argument("--assignment", default="attention_variants")
    p.add_argument("--copies", type=int, default=8, help="copies of each demo submission")
    p.add_argument("--rounds", type=int, default=2, help="turns of the four configurations")
    p.add_argument("--workers", type=int, default=None, help="the parallel run (default: cores)")
    p.add_argument("--dir", default=None, help="keep the scratch courses here (default: temporary)")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("feedback", help=cmd_feedback.__doc__)
    p.add_argument("assignment")
    p.set_defaults(func=cmd_feedback)

    p = sub.add_parser("export", help=cmd_export.__doc__)
    p.add_argument("--roster", help="Canvas gradebook export CSV giving Canvas ids")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("report", help=cmd_report.__doc__)
    p.add_argument("--out", default=str(ROOT / "reports" / "index.html"))
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("scan", help=cmd_scan.__doc__)
    p.add_argument("assignment")
    p.set_defaults(func=cmd_scan)

    p = sub.add_parser("collect", help=cmd_collect.__doc__)
    p.add_argument("assignment")
    p.set_defaults(func=cmd_collect)

    p = sub.add_parser("return-feedback", help=cmd_return_feedback.__doc__)
    p.add_argument("assignment")
    p.set_defaults(func=cmd_return_feedback)

    p = sub.add_parser("collect-lms", help=cmd_collect_lms.__doc__)
    p.add_argument("zip", help="the LMS's download of all submissions")
    p.add_argument("assignment")
    p.add_argument("--roster", help="CSV mapping LMS ids to student ids")
    p.add_argument("--roster-columns", help="LMS_COLUMN,STUDENT_COLUMN (default lms_id,student_id)")
    p.set_defaults(func=cmd_collect_lms)

    p = sub.add_parser("release-zip", help=cmd_release_zip.__doc__)
    p.add_argument("assignments", nargs="*")
    p.set_defaults(func=cmd_release_zip)

    p = sub.add_parser("formgrader", help=cmd_formgrader.__doc__)
    p.add_argument("--course", default=str(ROOT), help="course directory (e.g. .demo)")
    p.add_argument("--port", type=int, default=8888)
    p.set_defaults(func=cmd_formgrader)

    p = sub.add_parser("workload", help=cmd_workload.__doc__)
    p.set_defaults(func=cmd_workload)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    sys.exit(args.func(args))
