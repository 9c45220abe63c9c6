"""Part 4 of ``attention_at_scale``: slow-memory accesses of standard and tiled attention, and
each student's own N, d, M."""

import math

from attncourse.judge.checks import answer, call, fail, integer, rng_for
from attncourse.judge.remote import StudentNamespace

from .references import block_rows, standard_io, tiled_io
from .softmax import check_own

PART = "Part 4(a)"


def _count(fn, args, what):
    return integer(call(fn, args, what), what, "an integer count")


def check_io_counts(ns: StudentNamespace) -> None:
    """Part 4(a): standard_io, tiled_io and block_rows on drawn sizes."""
    standard, tiled, rows = (answer(ns, n, PART) for n in ("standard_io", "tiled_io", "block_rows"))
    rng = rng_for("p4_io_counts")
    for _ in range(3):
        N, d = rng.randint(100, 20_000), rng.choice([32, 48, 64, 80, 128])
        block_q = rng.randint(16, 200)
        M = rng.randint(8_000, 200_000)
        what = f"{PART}: standard_io({N}, {d})"
        got, expected = _count(standard, (N, d), what), standard_io(N, d)
        if got != expected:
            causes = {
                2 * N * d + 2 * N * N: "S and P each counted once: each is written, then read"
            }
            fail(f"{what}: wrong count", expected, got, causes.get(got))
        what = f"{PART}: tiled_io({N}, {d}, {block_q})"
        got, expected = _count(tiled, (N, d, block_q), what), tiled_io(N, d, block_q)
        if got != expected:
            causes = {
                4 * N * d + N: "K and V counted once: they are read once per query block",
                2 * N * d
                + 2 * N * d * (N // block_q)
                + N: "the last, shorter query block left out",
                2 * N * d + 2 * N * d * math.ceil(N / block_q): "lse's N elements left out",
            }
            fail(f"{what}: wrong count", expected, got, causes.get(got))
        what = f"{PART}: block_rows({M}, {d})"
        got, expected = _count(rows, (M, d), what), block_rows(M, d)
        if got != expected:
            causes = {M // (2 * d): "two blocks counted: Q_i, O_i, K_j and V_j are four"}
            fail(f"{what}: wrong count", expected, got, causes.get(got))


def check_io_mine(ns: StudentNamespace) -> None:
    """Part 4(b): B and the ratio of accesses for the id's own N, d, M."""
    check_own(ns, ("B_mine", "io_ratio_mine"), "Part 4(b)")
