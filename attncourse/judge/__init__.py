"""The judge: hidden tests computed in the grader's process, never in the student's kernel.

* :mod:`~attncourse.judge.agent` — the only grading code sent into a kernel: it
  answers requests about the student's objects with plain data;
* :mod:`~attncourse.judge.wire` — what crosses, and the checks on what arrives;
* :mod:`~attncourse.judge.remote` — the judge's view of the notebook
  (:class:`StudentNamespace`, :class:`Remote` handles);
* :mod:`~attncourse.judge.channel` — reaching the agent in a kernel, or in this
  process for the fast tests;
* :mod:`~attncourse.judge.verdict` — a check's outcome as the test cell's outputs;
* :mod:`~attncourse.judge.checks` — the base of every assignment's checks: comparisons,
  failure messages, the run's secret inputs, helpers for the student's objects;
* :mod:`~attncourse.judge.rules` — source rules (loops, statements, forbidden calls), read
  from the notebook's source by name.

``attncourse.grading.<assignment>`` builds on ``checks`` and ``rules``; nothing here imports
an assignment's module except :mod:`~attncourse.judge.verdict`, by name, at grading time.
"""
