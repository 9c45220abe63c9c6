"""Hidden tests of the course's assignments, one module per assignment, run by the judge.

``attncourse.grading.<assignment>`` ends with ``CHECKS``: the ``grade_id`` of each
test cell of that assignment's source notebook -> the check the judge runs for
it in the grader's process (:mod:`attncourse.judge.verdict`). A check takes the
judge's view of the student's notebook
(:class:`~attncourse.judge.remote.StudentNamespace`), draws its inputs from the
run's secret, compares with references computed here in float64 and fails with
a message that names the mistake. Nothing here is ever loaded in a kernel.
"""
