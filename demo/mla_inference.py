"""Demo students of mla_inference: answer overrides on top of the instructor's solution.

ada hands in a perfect notebook (her written answers are the model answers without the
mark scheme), cy the untouched release; ben makes two common mistakes — RoPE in the
rotate-half layout instead of neighbouring pairs (Part 1(a); the judge carries his rope
forward, so Parts 2 and 3 keep their points) and attention scores scaled by
1/sqrt(d_h) instead of 1/sqrt(d_h + d_R) (Part 2) — and writes a partial answer to
Part 1(c).
"""

import nbformat

from attncourse.course import ROOT, notebook_path
from attncourse.submissions import solution_answers

_SOLUTION = solution_answers(
    nbformat.read(notebook_path(ROOT, "source", "mla_inference"), as_version=4)
)
_WRITTEN = (
    "p1_why_no_absorption",
    "p4_absorption_compute",
    "p5_timing_interpretation",
    "p6_when_absorption_pays",
    "p6_without_decoupling",
    "p6_gqa_vs_mla",
)


def _model_answer(grade_id):
    """A written answer as a strong student would write it: the model answer, no mark scheme."""
    text = _SOLUTION[grade_id].split("**Mark scheme**")[0].strip()
    return text.replace("**Model answer.** ", "") + "\n"


def _changed(grade_id, old, new):
    assert old in _SOLUTION[grade_id], (grade_id, old)
    return _SOLUTION[grade_id].replace(old, new)


_ADA = {grade_id: _model_answer(grade_id) for grade_id in _WRITTEN}

STUDENTS = {
    "ada": _ADA,
    "ben": {
        **_ADA,
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
        "p1_why_no_absorption": (
            "With RoPE the query and the key are rotated by R_t and R_s, so the score is "
            "x^T W_Q^T R_t^T R_s W_UK c. The table shows that M changes with the positions, so "
            "we cannot merge W_Q and W_UK.\n"
        ),
    },
    "cy": "release",
}
