"""The nbgrader preprocessors of the course, one per module, in the order they run.

Registered in ``nbgrader_config.py``, so plain ``nbgrader autograde`` and
``attncourse grade`` run the same steps.

Autograde, sanitize stage (before any cell runs):

* :mod:`~attncourse.preprocessors.refusespecialfiles` — no link or special file of the
  student's folder reaches a kernel;
* :mod:`~attncourse.preprocessors.repairgradecells` — put back grade and locked cells that
  were deleted, stripped or duplicated;
* :mod:`~attncourse.preprocessors.integrityscan` — scan the submission for integrity findings.
* :mod:`~attncourse.preprocessors.pininstance` — the worksheet's own numbers drawn for the
  graded id (after nbgrader's ``OverwriteCells``).

Autograde, run stage:

* :mod:`~attncourse.preprocessors.resilientexecute` — student cells in the sandboxed
  kernel, each test cell's verdict from the judge; a crash costs its cell. It composes
  :mod:`~attncourse.preprocessors.kernellife` (the kernel started, interrupted, killed,
  restarted and replayed; its private directories and the kernel started ahead are the
  sandbox's :mod:`~attncourse.sandbox.workspace` and :mod:`~attncourse.sandbox.sparekernel`)
  and :mod:`~attncourse.preprocessors.judgesession` (the checks, the secret, the channel);
* :mod:`~attncourse.preprocessors.inertoutputs` — student output kept as text and raster
  images only (also for feedback and formgrader's pages);
* :mod:`~attncourse.preprocessors.stderrasdisplay` — a warning on stderr no longer fails a test;
* :mod:`~attncourse.preprocessors.recordgradingrun` — repairs, faults, protections and
  timings into the notebook;
* :mod:`~attncourse.preprocessors.flagintegrity` — parts with findings flagged for review;
* :mod:`~attncourse.preprocessors.flagnotgraded` — an unreadable or untouched notebook
  flagged, every grade needing a look, the reason in a comment;
* :mod:`~attncourse.preprocessors.insertmarkscheme` — the mark scheme under each written
  answer, for graders.

Feedback:

* :mod:`~attncourse.preprocessors.feedbackstatus` — the submission's status, for the banner
  of one not graded;
* :mod:`~attncourse.preprocessors.partcontents` — the contents list names the parts; a written
  answer not graded yet is "awaiting grading";
* :mod:`~attncourse.preprocessors.hidehiddentests` — results and messages, no hidden test,
  traceback or mark scheme.
"""
