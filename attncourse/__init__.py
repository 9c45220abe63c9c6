"""Instructor-only package of the attention course: grading helpers, nbgrader plugins, CLI.

Nothing here is shipped to students; hidden tests import it inside the grading kernel.
"""
