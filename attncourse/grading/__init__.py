"""Hidden-test logic of the course's assignments, one module per assignment.

A hidden test cell calls one function here with the student's namespace,
e.g. ``_av.check_mha_values(globals())``. Every check starts by undoing any
rebinding of torch, numpy, builtins or the course's helpers
(:func:`attncourse.checks.restore_pristine`), compares with references
computed in float64, and fails with a message that names the mistake.

Importing this package imports every module in it. ``attncourse.checks`` does
that when the grading kernel starts, before any student cell, so each module
captures pristine helpers and can protect its own globals.
"""

import contextlib
import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    # A module that fails here fails again, loudly, in the hidden test that imports it.
    with contextlib.suppress(Exception):
        importlib.import_module(f"{__name__}.{_module.name}")
