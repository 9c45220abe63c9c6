"""What an answer's code can reach, resolved statically from the notebook's source.

The source rules (:mod:`attncourse.judge.rules`) are proofs over this module's result.
Starting from the definition of an answer, every name its code uses is resolved, the way a
type checker would: to a ``def`` or ``class`` of the student's cells (analysed in turn), to a
library object the course's own cells import (known by its dotted module path), to a builtin,
or to a value the code computes (a tensor, an array, a number), whose methods must be known
methods of such values. Whatever cannot be resolved this way is recorded as a
:class:`Finding` with its cell and line, never guessed: a call through a subscript or a
computed ``getattr``, ``exec``, dynamic imports, a value passed in and called, implicit calls
(operators and iteration of the student's own classes, metaclasses). Loops, higher-order
iteration (``map``, ``functools.reduce``, ``torch.vmap``...), generators and recursion (a cycle
in the call graph) are findings too, and so is every library object used, for the rules to
judge by its path.

Separately, :mod:`attncourse.judge.tampering` lists what any student cell does that can change what
an answer computes when it is called, wherever it sits: rebinding attributes of library
modules or classes, hooks, dynamic code, introspection of frames and globals, imports of
modules the judge cannot read. Nothing here runs the student's code or asks the kernel.

The resolver is one class, :class:`Reach`, in parts a reader can hold: the walk over the
reached code (:mod:`~attncourse.judge.walk`), calls (:mod:`~attncourse.judge.calls`), names,
scopes and attributes (:mod:`~attncourse.judge.scopes`), the call graph's cycles
(:mod:`~attncourse.judge.callgraph`), over the abstract values of
:mod:`~attncourse.judge.values`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from attncourse.judge.callgraph import CallGraph
from attncourse.judge.calls import Calls
from attncourse.judge.program import Program
from attncourse.judge.reachstate import ReachState
from attncourse.judge.scopes import Scopes
from attncourse.judge.values import Cls, Fn
from attncourse.judge.walk import Walk


def reach(program: Program, name: str, skip: Iterable[str] = frozenset()) -> Reach:
    """Everything the answer ``name`` reaches (``skip``: definitions graded elsewhere),
    resolved once per program: every check of a notebook reads the same result (the rules
    only read a Reach; the rule of the footprint evaluates bases on a passive one)."""
    skip = frozenset(skip)
    return program.once(("reach", name, skip), lambda: Reach(program, name, skip))


def reach_cell(program: Program, index: int) -> Reach:
    """What the module-level code of cell ``index`` reaches (an answer cell as a whole),
    resolved once per program."""
    return program.once(("cell", index), lambda: Reach(program, None, cell=index))


class Reach(Walk, Calls, Scopes, CallGraph, ReachState):
    """Everything the answer ``name`` reaches, and the findings on the way."""

    def __init__(
        self,
        program: Program,
        name: str | None = None,
        skip: frozenset[str] = frozenset(),
        cell: int | None = None,
        passive: bool = False,
    ) -> None:
        self.program = program
        self.passive = passive
        self.name = name
        self.skip = skip
        self.findings = []
        self.units = []
        self.statements = []
        self.edges = {}
        self._seen = set()
        self._walked = set()
        self._evaluating = set()
        self._todo = []
        self.roots = []
        if passive:
            return
        if cell is not None:
            tree = program.trees.get(cell)
            if tree is not None:
                for stmt in tree.body:
                    self._statement(stmt, program.module)
        else:
            self.roots = sorted(self._global(name, None), key=repr)
            for value in self.roots:
                self._use(value, None, None)
        while self._todo:
            self._analyse(self._todo.pop(0))
        self._recursion()

    @property
    def primary(self) -> ast.AST | None:
        """The last ``def``/``class`` of the answer's own name, else the definition an alias
        of that name refers to (None when the source shows none)."""
        defs = self.program.definitions(self.name) if self.name else []
        if defs:
            return defs[-1]
        nodes = [v.node for v in self.roots if isinstance(v, (Fn, Cls))]
        nodes = [n for n in nodes if not isinstance(n, ast.Lambda)]
        return max(nodes, key=self.program.where) if nodes else None
