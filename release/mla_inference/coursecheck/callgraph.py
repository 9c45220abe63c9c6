# Generated from the course's judge by the release build: do not edit.
"""The resolver's call graph: a cycle among the student's functions is iteration in disguise.

A part of :class:`~coursecheck.resolve.Reach`, run once the walk has recorded every
edge (caller -> callees).
"""

from __future__ import annotations

from .reachstate import ReachState


class CallGraph(ReachState):
    """Recursion found in ``self.edges`` (a part of :class:`~coursecheck.resolve.Reach`)."""

    def _recursion(self):
        """A cycle in the call graph of the student's functions is iteration in disguise."""
        state = {}

        def visit(node, stack):
            state[node] = 1
            for callee in sorted(self.edges.get(node, ()), key=lambda n: self.program.where(n)):
                if state.get(callee) == 1:
                    names = [getattr(n, "name", "a lambda") for n in stack[stack.index(callee) :]]
                    cycle = " -> ".join([*names, getattr(callee, "name", "a lambda")])
                    self.add("recursion", f"recursion ({cycle})", callee)
                elif callee not in state:
                    visit(callee, [*stack, callee])
            state[node] = 2

        for node in list(self.edges):
            if node not in state:
                visit(node, [node])
