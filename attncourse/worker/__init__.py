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
run goes on: its ``Grader`` keeps its fork server (torch imported once) and may start the
next student's kernel while this one runs (``ResilientExecute.prewarm``). The worker keeps a
run's grading processes in that run's ``GradingPool`` (a Dask worker plugin); a grading
process exits when the client ends the run (unregistering the pool), when its worker dies,
or after ten idle minutes.

What crosses each hop is a frozen dataclass of :mod:`attncourse.handoffs` (``CourseBundle``
and ``GradingJob`` in, ``GradingRequest`` and ``AutogradeResult`` on the pipe, ``TaskResult``
back). The gradebook's round trip, and why each hop stays: the client copies the
assignment's definition and roster into a scratch SQLite file (the workers never open the
course's gradebook, which may be PostgreSQL or on another machine); each student gets a
fresh copy of it in the grading process's scratch course (nothing of the last student's
rows); nbgrader's own ``AutogradeApp`` writes into that copy (so plain ``nbgrader autograde``
gives the same scores); the grading process reads back only what autograde wrote
(``gradebook.autograde_results``: plain data, pickled to the client); the client writes it
into the course's gradebook, keeping manual scores (``save_autograde_results``), and at the
end re-reads every student's cell scores from it, since a manual score overrides the
automatic one and only the course's gradebook holds both.

The modules, by the process each part runs in:

* :mod:`~attncourse.worker.task` — in the Dask worker: the task, and the grading processes
  it keeps for the run;
* :mod:`~attncourse.worker.grading` — in a grading process: autograde one student, serve
  the worker's requests;
* :mod:`~attncourse.worker.files` — a folder as data, on both sides of every hop (the client
  sends a submission with it, the worker returns the autograded folder).
"""
