"""Demo students of attention_variants: answer overrides on top of the instructor's solution.

ada hands in a perfect notebook, cy the untouched release; ben makes three common
mistakes; eve makes one and tries to switch the checks off.
"""

import nbformat

from attncourse.course import ROOT, notebook_path
from attncourse.submissions import solution_answers

_SOLUTION = solution_answers(
    nbformat.read(notebook_path(ROOT, "source", "attention_variants"), as_version=4)
)


def _edit(grade_id, old, new):
    """The solution of ``grade_id`` with ``old`` replaced by ``new`` (which must occur)."""
    text = _SOLUTION[grade_id]
    if old not in text:
        raise ValueError(f"demo edit for {grade_id} no longer applies: {old!r} not found")
    return text.replace(old, new)


_UNSCALED_MHA = _edit("p5_mha", " / self.D_qk**0.5", "")

# Contiguous grouping (query head h uses key/value head h // (H/G)), the library convention.
_CONTIGUOUS_GQA = _edit(
    "p7_gqa",
    "q = self.W_Q(x).view(B, L_1, C, self.G, self.D_qk)",
    "q = self.W_Q(x).view(B, L_1, self.G, C, self.D_qk).transpose(2, 3)",
).replace(
    "o = o.reshape(B, L_1, self.H * self.D_v)",
    "o = o.transpose(2, 3).reshape(B, L_1, self.H * self.D_v)",
)

_LOOPED_GQA_2_MLA = _edit(
    "p10_gqa_2_mla",
    "np.tile(W_M_GQA, (D // r, 1))",
    "np.concatenate([W_M_GQA for _ in range(D // r)], axis=0)",
)

STUDENTS = {
    "ada": {},
    "ben": {"p5_mha": _UNSCALED_MHA, "p7_gqa": _CONTIGUOUS_GQA, "p10_gqa_2_mla": _LOOPED_GQA_2_MLA},
    "cy": "release",
    "eve": {
        "p5_mha": "torch.allclose = lambda *args, **kwargs: True\n"
        "torch.testing.assert_close = lambda *args, **kwargs: None\n\n" + _UNSCALED_MHA
    },
}
