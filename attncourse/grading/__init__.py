"""Hidden tests of the course's assignments, one package per assignment, run by the judge.

Every ``attncourse.grading.<assignment>`` has the same shape, so a fifth is written by
reading one of the four:

* ``tolerances`` — each threshold with the error bound it comes from and the margins measured
  by ``tests/grading/<assignment>/margins_<assignment>.py`` (the worst correct answer, the nearest mistake);
* ``references`` — the float64 references and the secret inputs they are computed on, with
  the named mistakes: a reference that can make one takes ``variant``, a frozen dataclass that
  is the task's at its defaults (:func:`attncourse.judge.checks.named_mistakes`); where one
  module would pass 300 lines, a coherent group of them moves to a ``references_<topic>``
  beside it;
* one checks module per group of parts, in course order, each importing only those before it;
* ``__init__`` — only ``CHECKS``: the ``grade_id`` of each test cell of the source notebook ->
  the check the judge runs for it in the grader's process (:mod:`attncourse.judge.verdict`).

A check takes the judge's view of the student's notebook
(:class:`~attncourse.judge.remote.StudentNamespace`), draws its inputs from the run's secret,
compares with the references within the tolerances and fails with a message that names the
mistake. What several assignments share (answer lookup, the attribute check, the
single-thread rule, the mistake convention) lives in :mod:`attncourse.judge.checks`. Nothing
here is ever loaded in a kernel (``tests/unit/test_structure.py`` checks the shape).
"""
