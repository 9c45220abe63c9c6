"""Demo students of attention_worksheet: answer overrides on top of the instructor's solution.

ada hands in a perfect notebook (her written answers are the model answers without
the mark scheme), cy the untouched release; ben makes three common mistakes
(a softmax that drops an axis, the column-vector habit, heads concatenated in the
wrong order) and writes a partial argument for Q4(a).
"""

import nbformat

from attncourse.course import ROOT, notebook_path
from attncourse.submissions import solution_answers

_SOLUTION = solution_answers(
    nbformat.read(notebook_path(ROOT, "source", "attention_worksheet"), as_version=4)
)
_WRITTEN = ("q4a_block_identity", "q4b_same_for_k_v")


def _model_answer(grade_id):
    """A written answer as a strong student would write it: the model answer, no mark scheme."""
    return _SOLUTION[grade_id].split("**Mark scheme**")[0].strip() + "\n"


_ADA = {grade_id: _model_answer(grade_id) for grade_id in _WRITTEN}

STUDENTS = {
    "ada": _ADA,
    "ben": {
        **_ADA,
        "q1c_answer": (
            "def score_shapes(B, n, d):\n"
            '    """Shapes of Q K^T, of Q K^T / sqrt(d), and of the attention weights."""\n'
            "    return (B, n, n), (B, n, n), (B, n)\n"
        ),
        "q3a_answer": "Q = W_q @ X\nK = W_k @ X\nV = W_v @ X\n",
        "q5b_answer": "H_concat = np.concatenate([H_1, H_0], axis=1)\nY_mha = H_concat @ W_o_mha\n",
        "q4a_block_identity": (
            "Q = X W^(q), and W^(q) has two halves, so Q also has two halves, one for each head.\n"
        ),
    },
    "cy": "release",
}
