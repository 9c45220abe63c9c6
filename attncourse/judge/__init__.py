"""The judge: hidden tests computed in the grader's process, never in the student's kernel.

* :mod:`~attncourse.judge.agent` — the only grading code sent into a kernel: it
  answers requests about the student's objects with plain data;
* :mod:`~attncourse.judge.wire` — what crosses, and the checks on what arrives;
* :mod:`~attncourse.judge.remote` — the judge's view of the notebook
  (:class:`StudentNamespace`, :class:`Remote` handles);
* :mod:`~attncourse.judge.channel` — reaching the agent in a kernel over a Unix socket
  (one serving execution per check), or in this process for the fast tests;
* :mod:`~attncourse.judge.verdict` — a check's outcome as the test cell's outputs;
* :mod:`~attncourse.judge.checks` — the base of every assignment's checks: comparisons,
  failure messages, the run's secret inputs, helpers for the student's objects;
* :mod:`~attncourse.judge.rules` — source rules (loops, fused attention, numpy only, one
  statement per output, the import rule), proved on the notebook's source;
* :mod:`~attncourse.judge.program` — the notebook's code parsed once, with every binding;
* :mod:`~attncourse.judge.resolve` — what an answer's code reaches, resolved statically,
  and the constructs the judge cannot resolve (:class:`Reach`), in parts:
  :mod:`~attncourse.judge.values` (the abstract values), :mod:`~attncourse.judge.walk` (the
  reached code walked), :mod:`~attncourse.judge.calls` (calls followed or refused),
  :mod:`~attncourse.judge.scopes` (names, bindings, attributes) and
  :mod:`~attncourse.judge.callgraph` (recursion);
* :mod:`~attncourse.judge.tampering` — what any student cell does to change an answer from
  outside it (patches, hooks, dynamic code);
* :mod:`~attncourse.judge.libraries` — what the judge knows of the libraries and builtins
  (the dangerous names are :mod:`attncourse.dangerous`'s, shared with the integrity scan).

``attncourse.grading.<assignment>`` builds on ``checks`` and ``rules``; nothing here imports
an assignment's module except :mod:`~attncourse.judge.verdict`, by name, at grading time.
"""
