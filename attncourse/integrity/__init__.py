"""Integrity scan of submitted notebooks, outside the kernel, before any cell runs.

Scores never depend on it: the judge (``attncourse.judge``) decides every test
outside the kernel. This scan makes an attempt on the grader, or code that is
not allowed, visible to the graders, who decide what it costs.
It reads each cell's source — never runs it — and reports:

- ``import``: an import beyond the course's (``import``/``from … import``,
  ``__import__``, ``importlib``); repeating an import of the first cell (``torch``,
  ``nn``, ``np``) or of another provided cell (``matplotlib.pyplot as plt``) is allowed;
- ``rebinding``: assigning or deleting attributes of ``torch``, ``np``, ``nn``,
  ``builtins``, ``attncourse`` or anything else the course's cells define
  (``torch.allclose = …``, ``setattr(torch, …)``, ``torch.Tensor.__eq__ = …``),
  also through an alias (``T = torch.Tensor; T.__eq__ = …``) or ``type(x)``;
  rebinding those names, or ``isinstance``, ``AssertionError`` and the other
  builtins a test relies on, at the top level of a cell (or via ``global``);
  defining comparison or dispatch hooks (``__eq__``, ``__torch_function__``, …)
  or subclassing ``Tensor``/``ndarray``;
- ``interpreter``: reaching the interpreter's internals — ``sys``/``os``/``gc``/
  ``ctypes``/``inspect``/``builtins``/``__builtins__``/``linecache``, frames and
  code objects, ``globals()``/``locals()``/``vars()``, ``get_ipython`` and
  shell/IPython magics other than ``%time``/``%timeit``/``%capture``/``%matplotlib``
  (whose code is scanned like the rest);
- ``dynamic code``: ``exec``, ``eval``, ``compile``;
- ``locked cell edited``: a locked cell whose source differs from the gradebook's
  (nbgrader restores the cell before running it, but the edit is still a finding).

Only student code is scanned for the rules: answer cells, and cells the
student added or whose nbgrader metadata was stripped. A cell whose source is
exactly a course cell's (as released, or as recorded in the gradebook) is
trusted, wherever it sits.

**Parts.** Each finding is charged to a *part*: the answer cell it is in (or
the closest answer cell above it in the submission; above the first answer
cell, the first one), together with the graded cells that follow that answer
cell in the source notebook up to the next answer cell — the tests of that
answer. The order comes from the instructor's notebook, not the submission,
so moving cells around does not move points.
:class:`~attncourse.preprocessors.flagintegrity.FlagIntegrity` flags the
part's autograded cells for review in formgrader and writes the findings as
the comment of the part's answer cell, which formgrader and the feedback show.
Scores do not depend on the scan: the judge computes every verdict outside the
student's kernel, so a finding is something for a grader to read (copied code,
an attempt on the grader), and the grader decides, with a manual score where
the answer does not deserve the tests' points.

Modules:

* :mod:`~attncourse.integrity.scanner` — the rules, applied to the source of one cell (its
  dangerous names are :mod:`attncourse.dangerous`'s and its cell transform
  :mod:`attncourse.ipythoncode`'s, both shared with the judge's rule prover);
* :mod:`~attncourse.integrity.coursenotebook` — the course's trusted cells, parts, allowed
  imports and protected names, from the gradebook or a notebook;
* :mod:`~attncourse.integrity.findings` — a notebook's findings, stored in and read from
  its metadata, and the comment a flagged part gets;
* :mod:`~attncourse.integrity.command` — ``attncourse scan``: the findings of every
  submitted notebook of an assignment, printed.

The nbgrader plugins that run the scan and flag parts are
:mod:`attncourse.preprocessors.integrityscan` and :mod:`attncourse.preprocessors.flagintegrity`.
"""
