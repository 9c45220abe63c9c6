"""Demo students of mla_inference: answer overrides on top of the instructor's solution.

ada hands in a perfect notebook and right written answers in her own words, cy the
untouched release; ben makes two common mistakes — RoPE in the
rotate-half layout instead of neighbouring pairs (Part 1(a); the judge carries his rope
forward, so Parts 2 and 3 keep their points) and attention scores scaled by
1/sqrt(d_h) instead of 1/sqrt(d_h + d_R) (Part 2) — and writes partly right written
answers, and wrong ones to Part 5 and Part 6(b).
"""

import nbformat

from attncourse.course import ROOT, notebook_path
from devtools.demo import PARTLY, RIGHT, WRONG, in_own_words
from devtools.submissions import solution_answers

_SOLUTION = solution_answers(
    nbformat.read(notebook_path(ROOT, "source", "mla_inference"), as_version=4)
)


def _changed(grade_id, old, new):
    assert old in _SOLUTION[grade_id], (grade_id, old)
    return _SOLUTION[grade_id].replace(old, new)


# Written answers in the demo students' own words: (right, partly right, wrong) per question.
WRITTEN = {
    "p1_why_no_absorption": (
        "With RoPE the score is $x_t^\\top W^{Q\\top}_h R_{s-t} W^{UK}_h c_s$: the matrix between "
        "query and latent depends on the offset $s - t$, so no single matrix can be folded into "
        "the query ahead of time, and the cached latents would need new keys every step.\n",
        "With RoPE the query and the key are rotated by R_t and R_s, so the score is "
        "x^T W_Q^T R_t^T R_s W_UK c. The table shows that M changes with the positions, so "
        "we cannot merge W_Q and W_UK.\n",
        "RoPE only changes the values, so absorption still works.\n",
    ),
    "p4_absorption_compute": (
        "Absorbed, each step compares the query with $r + d_R$ numbers per cached token in "
        "every head, about $r/d_h$ times the arithmetic of explicit keys, but it reads far less "
        "memory; at decoding the memory is the limit, so it wins.\n",
        "Absorption needs more multiplications per token, because r is bigger than d_h.\n",
        "Absorption saves compute because the keys are never built.\n",
    ),
    "p5_timing_interpretation": (
        "The time grows in line with the bytes read from the cache, not with the flops: "
        "decoding is memory bound, so the absorbed MLA cache (smallest per token) is fastest "
        "at long contexts even though it does more arithmetic.\n",
        "MLA is the fastest in my plot.\n",
        "The differences are noise; all three take the same time.\n",
    ),
    "p6_when_absorption_pays": (
        "It pays at decoding: one query per step against the whole cache, few operations per "
        "element read, so memory traffic dominates and reading $r + d_R$ instead of $2Hd_h$ "
        "numbers per token wins. In prefill many queries share each key, compute dominates, "
        "and the explicit form is cheaper.\n",
        "Absorption is good when the cache is long.\n",
        "Always: absorption is never slower than the explicit form.\n",
    ),
    "p6_without_decoupling": (
        "Rotating the whole key makes the middle matrix depend on the offset, so $W^{UK}_h$ can "
        "no longer be absorbed. Either cache the rotated keys ($H d_h$ numbers per token, most "
        "of MHA's cache) or rebuild them every step ($H d_h r$ operations per cached token). "
        "Decoupling adds one shared rotary key of $d_R$ numbers and keeps the content part "
        "absorbable.\n",
        "Without decoupling we would have to store the rotated keys for every head, which "
        "takes a lot of memory.\n",
        "Nothing breaks: RoPE and absorption are independent.\n",
    ),
    "p6_gqa_vs_mla": (
        "GQA caches $2Gd_h$ numbers per token by making the heads of a group read identical "
        "keys and values, which costs quality as $G$ shrinks. MLA caches $r + d_R$, yet every "
        "head keeps its own keys and values as different functions of the latent; it pays in "
        "arithmetic (absorption) and a more complex RoPE.\n",
        "Both make the cache smaller; MLA keeps more quality.\n",
        "GQA is better since it stores less than MLA at the same quality.\n",
    ),
}

STUDENTS = {
    "ada": in_own_words(WRITTEN, RIGHT),
    "ben": {
        **in_own_words(WRITTEN, PARTLY),
        "p5_timing_interpretation": WRITTEN["p5_timing_interpretation"][WRONG],
        "p6_without_decoupling": WRITTEN["p6_without_decoupling"][WRONG],
        "p1_rope_answer": _changed(
            "p1_rope_answer",
            "    a, b = x[..., 0::2], x[..., 1::2]  # (..., d/2): the two coordinates of every pair\n"
            "    rotated = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1)  # (..., d/2, 2)\n"
            "    return rotated.flatten(-2)  # (..., d): each pair back in its place",
            "    a, b = x[..., : d // 2], x[..., d // 2 :]  # (..., d/2): first and second half\n"
            "    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)  # (..., d)",
        ),
        "p2_mla_answer": _changed(
            "p2_mla_answer",
            "scores = (content + rotary) / (d_h + d_R) ** 0.5",
            "scores = (content + rotary) / d_h**0.5",
        ),
    },
    "cy": "release",
}
