# Generated from the course's judge by the release build: do not edit.
"""A cell's text as the Python IPython runs: magics and shell escapes turned into calls.

One transform for every reader of a student's source (the integrity scan, the judge's rule
prover, and the prover shipped to students): IPython's own ``TransformerManager``, then
``ast``, with line numbers the student sees (IPython drops a cell's leading blank lines).
"""

from __future__ import annotations

import ast

from IPython.core.inputtransformer2 import TransformerManager

from .pointing import leading_blank_lines

_transform = TransformerManager().transform_cell


def cell_python(text: str) -> str | None:
    """The cell as IPython would run it (``%time x`` becomes ``get_ipython().run_line_magic(...)``,
    ``!ls`` a ``system`` call), or None when IPython cannot transform it."""
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
    return ast.increment_lineno(tree, leading_blank_lines(text)) if tree is not None else None
