"""Demo students of attention_at_scale: answer overrides on top of the instructor's solution.

ada hands in a perfect notebook and right written answers in her own words, cy the untouched
release; ben makes two common mistakes: his running sum is not rescaled when the maximum
changes (Part 3(a), tiled attention) and his split-cache decoding counts the padded slots of
the last chunk as keys (Part 5), and he writes partly right written answers, and a wrong one
to Part 4(c).
"""

import nbformat

from attncourse.course import ROOT, notebook_path
from devtools.demo import PARTLY, RIGHT, WRONG, in_own_words
from devtools.submissions import solution_answers

_SOLUTION = solution_answers(
    nbformat.read(notebook_path(ROOT, "source", "attention_at_scale"), as_version=4)
)


def _changed(grade_id, old, new):
    assert old in _SOLUTION[grade_id], (grade_id, old)
    return _SOLUTION[grade_id].replace(old, new)


# Written answers in the demo students' own words: (right, partly right, wrong) per question.
WRITTEN = {
    "p1_why_max": (
        "Without the shift my largest scores overflow float16 (anything above ln 65504 = 11.09), "
        "so the sum is inf and the softmax is NaN where the scores were large. Shifted, every "
        "exponent is at most 0 and the sum is between 1 and 5; the terms that underflow were "
        "below 2^-25, so the relative error is under 5 * 2^-25, far below float16's rounding. "
        "bfloat16 keeps float32's exponent range (up to 3.4e38) but only 8 significant bits.\n",
        "Subtracting the max stops exp from overflowing; bfloat16 has a bigger range.\n",
        "float16 and bfloat16 have the same range, so both overflow the same way.\n",
    ),
    "p2_exact": (
        "Rescaling a partial sum to another shift multiplies it by exp(c - c'); at the common "
        "maximum both partial sums and outputs add up to the sums over the union of the keys, "
        "so merge is exact, and since the result depends only on the union it is associative "
        "and commutative. The printed differences are about 1e-7: float32 rounding.\n",
        "Merging is exact because the maximum cancels; the differences are small.\n",
        "The merge is only approximate, the differences show the error of the method.\n",
    ),
    "p4_lab_interpretation": (
        "Plain attention's peak memory grows 4x per doubling (two L x L matrices), the tiled "
        "one's linearly (output plus a few blocks). Both times grow about 4x per doubling: the "
        "arithmetic is the same. A CPU has no program-managed fast memory and eager PyTorch "
        "does not fuse, so the slow-memory traffic of the IO argument is not measured here; a "
        "fused GPU kernel keeps the blocks in SRAM and saves HBM traffic and time.\n",
        "Tiled attention uses much less memory, and it is a bit faster for long sequences.\n",
        "The tiled version is slower, so FlashAttention does not help on any hardware.\n",
    ),
    "p6_what_the_plot_shows": (
        "At the same cache size the variants with fewer, wider key/value heads recall first: "
        "MQA reaches 0.73 at 16 elements per token where MHA's four narrow heads stay at chance, "
        "and GQA recalls from 32. Recall needs each head's key to be wide enough to tell the "
        "context's keys apart, so spending the cache on width beats spending it on heads. MLA "
        "needed 64 here and its result moved with the seed, so one run does not rank it.\n",
        "Bigger caches recall better, and MQA does best at the smallest cache.\n",
        "MHA is best at every size because it has the most heads.\n",
    ),
}

STUDENTS = {
    "ada": in_own_words(WRITTEN, RIGHT),
    "ben": {
        **in_own_words(WRITTEN, PARTLY),
        "p4_lab_interpretation": WRITTEN["p4_lab_interpretation"][WRONG],
        "p3_tiles_answer": _changed("p3_tiles_answer", "l = l * alpha + p.sum", "l = l + p.sum"),
        "p5_split_answer": _changed(
            "p5_split_answer",
            '    s = s.masked_fill(~real, float("-inf"))  # padded slots are no keys\n',
            "",
        ),
    },
    "cy": "release",
}
