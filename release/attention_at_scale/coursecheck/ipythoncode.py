# Generated from the course's judge by the release build: do not edit.
"""A cell's text as the Python IPython runs: magics and shell escapes turned into calls.

One transform for every reader of a student's source (the integrity scan, the judge's rule
prover, and the prover shipped to students): IPython's own ``TransformerManager``, then
``ast``, with line numbers the student sees (IPython drops a cell's leading blank lines).
"""

from __future__ import annotations

import ast
import functools

from IPython.core.inputtransformer2 import TransformerManager

from .pointing import leading_blank_lines

_transform = TransformerManager().transform_cell
# A grading process transforms each cell several times (the limits, the integrity scan, the
# judge's rules) and the course's own cells for every student: the transform of a text up to
# this size is kept, 256 of them at most (a few MB however hostile the cells).
CACHED_TEXT = 8_000


def cell_python(text: str) -> str | None:
    """The cell as IPython would run it (``%time x`` becomes ``get_ipython().run_line_magic(...)``,
    ``!ls`` a ``system`` call), or None when IPython cannot transform it."""
    if len(text) <= CACHED_TEXT:
        return _kept_python(text)
    return _python(text)


@functools.lru_cache(maxsize=256)
def _kept_python(text: str) -> str | None:
    return _python(text)


def _python(text: str) -> str | None:
    try:
        return _transform(text)
    except Exception:  # noqa: BLE001 - what IPython cannot transform, it cannot run either
        return None


def parse(source: str) -> ast.Module | None:
    """``source`` parsed, or None (a syntax error, a null byte, or nesting deeper than the
    parser or the interpreter's recursion goes)."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def cell_tree(text: str) -> ast.Module | None:
    """The cell as IPython would run it, parsed, its lines the ones the student sees; or None."""
    python = cell_python(text)
    tree = parse(python) if python is not None else None
    blank = leading_blank_lines(text)
    return ast.increment_lineno(tree, blank) if tree is not None and blank else tree
