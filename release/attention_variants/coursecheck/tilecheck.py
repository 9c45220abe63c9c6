# Generated from the course's judge by the release build: do not edit.
"""The student's visible footprint check: the grader's recorder and verdict, on public sizes.

``check_tiles(flash_forward)`` in a visible test cell (shipped in ``coursecheck``) calls the
student's forward four times in the notebook's own process under the same recorder the
kernel's agent uses (:class:`coursecheck.agent.Recorder`) and judges each record with
:func:`coursecheck.tiling.judge_tiles`, on sizes drawn from a public seed. It is for
feedback only: the grader proves the footprint rule and records again on secret sizes.
"""

import random
from collections.abc import Callable

from .footprint import from_wire
from .tiling import judge_tiles, tile_sizes


def check_tiles(
    func: Callable[..., object], part: str = "Part 3", name: str = "flash_forward", seed: int = 0
) -> None:
    """Raise when ``func``'s record shows more than a tiled forward forms (GradingError)."""
    import torch

    from .agent import Recorder

    rng = random.Random(seed)
    draw = torch.Generator().manual_seed(seed)
    d = rng.choice([2, 3])
    for wide_queries in (True, False):
        for causal in (False, True):
            t = tile_sizes(rng, d, wide_queries, causal)
            Q, K, V = (
                torch.randn(t.B, t.H, t.L, t.d, generator=draw, dtype=torch.float64)
                for _ in range(3)
            )
            with torch.no_grad(), Recorder() as recorder:
                func(Q, K, V, t.block_q, t.block_k, causal)
            judge_tiles(from_wire(recorder.record()), t, part, name)
    print(f"{part}: {name} forms only tiles on these sizes (the grader records it again)")
