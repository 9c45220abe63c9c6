"""A reply is bounded before it is parsed: no reply of the kernel can make the grader build
more than a bounded number of objects (``attncourse.judge.wire.parse_reply``).

The attack: a reply of many tiny items (``[{}, {}, ...]``, 26 MB of it cost the grader
+196 MB and 30 s of CPU when it was parsed first and checked after). The control: the
largest reply the agent really sends, a sequence of MAX_ITEMS arrays, parses.
"""

import json
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from attncourse.judge import wire
from attncourse.judge.remote import KernelFault, Session

MiB = 2**20


def peak_while(fn):
    """(result or the exception, peak bytes Python allocated while ``fn`` ran)."""
    tracemalloc.start()
    try:
        try:
            out = fn()
        except Exception as error:  # noqa: BLE001 - the refusal is the result
            out = error
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    "unit",
    ['{"t":"none"},', "{},", "[],", "1,", "[" * 64],
    ids=["items", "dicts", "lists", "ints", "deep"],
)
def test_a_256_mib_reply_of_tiny_items_is_refused_before_it_is_built(unit):
    text = '{"seq": 0, "value": {"t": "list", "items": [' + unit * (256 * MiB // len(unit)) + "]}}"
    out, peak = peak_while(lambda: wire.parse_reply(text))
    assert isinstance(out, wire.ReplyError), out
    assert peak < 1 * MiB, f"refusing cost {peak / MiB:.1f} MiB"


@pytest.mark.parametrize("seed", range(5))
def test_nesting_is_measured_across_chunks_and_other_characters(seed, monkeypatch):
    """The bracket scan (chunks of the text, its UTF-8 bytes) measures the nesting a plain
    walk over the characters measures, also where a chunk ends inside a level, and beside
    characters of several bytes; a reply nested one level too deep is refused."""
    monkeypatch.setattr(wire, "_CHUNK", 7)
    rng = np.random.default_rng(seed)
    text = "".join(rng.choice(list('[]{}ab,\u00e9\u20ac\U0001f600"')) for _ in range(500))
    depth = deepest = 0
    for char in text:
        depth += (char in "[{") - (char in "]}")
        deepest = max(deepest, depth)
    assert wire._depth(text) == deepest
    limit = 2 * wire.MAX_DEPTH + 6
    assert wire.parse_reply("[" * limit + "]" * limit) is not None
    with pytest.raises(wire.ReplyError, match="nested too deeply"):
        wire.parse_reply("[" * (limit + 1) + "]" * (limit + 1))


class Replies:
    def __init__(self, text):
        self.text = text

    def send(self, request, arrays=()):
        return self.text.replace('"seq": 0', f'"seq": {json.loads(request)["seq"]}'), []


def test_the_session_reports_a_refused_reply_as_a_kernel_fault():
    text = '{"seq": 0, "value": {"t": "list", "items": [' + "{}," * 100_000 + "]}}"
    with pytest.raises(KernelFault, match="containers in one reply"):
        Session(Replies(text)).request("get", name="x")


def test_the_largest_plain_reply_still_parses_within_a_bounded_cost():
    """MAX_ITEMS small arrays, as the agent encodes them: accepted, and cheap to build."""
    one = wire.encode(np.zeros(2))
    value = {"t": "list", "items": [one] * wire.MAX_ITEMS}
    text = json.dumps({"seq": 0, "value": value})
    out, peak = peak_while(lambda: wire.parse_reply(text))
    assert isinstance(out, dict), out
    assert peak < 64 * MiB, f"parsing cost {peak / MiB:.1f} MiB"


def test_the_grading_process_has_a_memory_limit_of_its_own():
    """What no bound on the wire foresaw fails one check with MemoryError, not the worker."""
    code = (
        "from attncourse.worker.grading import limit_memory\n"
        "limit_memory(512)\n"
        "try:\n    bytearray(1024 * 2**20)\nexcept MemoryError:\n    print('MemoryError')\n"
        "print(len(bytearray(64 * 2**20)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["MemoryError", str(64 * 2**20)]
