"""Run notebook cell sources in-process the way the grading kernel does.

IPython registers every cell's text in ``linecache`` under a fake file name, which
is how :mod:`attncourse.judge.rules` finds the source of a student's function. ``run_cell``
does the same, so the rules and the hidden checks can be exercised without a
kernel.
"""

import itertools
import linecache

import numpy as np
import torch
from torch import nn

_counter = itertools.count()


def fresh_namespace():
    """A namespace like the notebook's after its first (import) cell."""
    return {"__name__": "__main__", "torch": torch, "nn": nn, "np": np}


def run_cell(source, namespace):
    """Execute ``source`` in ``namespace`` with its text registered in linecache."""
    filename = f"<ipython-input-{next(_counter)}-cell>"
    lines = [line + "\n" for line in source.split("\n")]
    linecache.cache[filename] = (len(source), None, lines, filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace
