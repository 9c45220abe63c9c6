"""Instructor-only package of the attention course: grading helpers, nbgrader plugins, CLI.

Nothing here is shipped to students. Hidden tests run in the grader's process (the judge,
:mod:`attncourse.judge`); a kernel sees only the sandbox launcher and fork server.
"""
