"""What a grading worker does for one student: autograde them in a scratch course of its own.

``attncourse grade`` (:mod:`attncourse.pipeline`, the client) sends each Dask task the run's
course bundle (the course's config and modules, ``source/`` and ``release/`` of the
assignment, and a SQLite gradebook holding only the assignment's definition) and one
student's submitted files. The task (:mod:`~attncourse.worker.task`) hands them to a *grading
process* of this worker: a Python process of its own that writes them into its scratch
course, runs nbgrader's ``AutogradeApp`` for that student (every preprocessor, the sandbox
and the judge, as plain ``nbgrader autograde`` does) into a fresh copy of that gradebook,
and reads back what autograde wrote there. The task returns the scores and comments, the
autograded folder's files, the log, the notebook's record and the timings; only the
client writes the course's gradebook and ``autograded/``, so nothing is locked across
machines and a worker that dies mid-student leaves nothing behind.

A grading process serves one run of one worker, one student at a time, for as long as the
run goes on: its fork server imports torch once, and it may start the next student's
kernel while this one runs (``ResilientExecute.prewarm``). It exits when the client ends
the run (``stop_grading``), when its worker dies, or after ten idle minutes.

The modules, by the process each part runs in:

* :mod:`~attncourse.worker.task` — in the Dask worker: the task, and the grading processes
  it keeps for the run;
* :mod:`~attncourse.worker.grading` — in a grading process: autograde one student, serve
  the worker's requests;
* :mod:`~attncourse.worker.files` — a folder as data, on both sides of every hop (the client
  sends a submission with it, the worker returns the autograded folder).
"""
