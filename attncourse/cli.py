"""The instructor's command line: ``attncourse <command>`` (the Makefile calls it)."""

import argparse
import sys

from attncourse.course import ROOT, assignments, nbgrader


def cmd_release(args):
    """Build release/ from source/ with nbgrader generate_assignment."""
    for assignment in args.assignments or assignments():
        nbgrader("generate_assignment", assignment, "--force", cwd=ROOT)
    return 0


def cmd_demo(args):
    """Release, autograde the bundled demo submissions, feedback, export; print where results are."""
    from attncourse.demo import run_demo

    return run_demo(args.dir)


def cmd_grade(args):
    """Autograde every submission of one assignment."""
    result = nbgrader("autograde", args.assignment, "--force", cwd=ROOT, check=False)
    return result.returncode


def cmd_feedback(args):
    """Generate feedback for every graded submission of one assignment."""
    return nbgrader(
        "generate_feedback", args.assignment, "--force", cwd=ROOT, check=False
    ).returncode


def cmd_export(args):
    """Export grades to grades.csv with nbgrader's exporter."""
    return nbgrader("export", cwd=ROOT, check=False).returncode


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
    p.add_argument("--workers", type=int, default=None)
    p.set_defaults(func=cmd_grade)

    p = sub.add_parser("feedback", help=cmd_feedback.__doc__)
    p.add_argument("assignment")
    p.set_defaults(func=cmd_feedback)

    p = sub.add_parser("export", help=cmd_export.__doc__)
    p.set_defaults(func=cmd_export)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    sys.exit(args.func(args))
