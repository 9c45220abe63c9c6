"""Demo students of attention_theory: answer overrides on top of the instructor's solution.

ada hands in a perfect notebook (her written answers are the model answers without
the mark scheme), cy the untouched release; ben forgets to scale the query in (c),
misses the 1/2 of the changed covariance in (f), scales the lab's attention by
1/sqrt(d) and writes short answers to (a) and (b).
"""

import nbformat

from attncourse.course import ROOT, notebook_path
from attncourse.submissions import solution_answers

_SOLUTION = solution_answers(
    nbformat.read(notebook_path(ROOT, "source", "attention_theory"), as_version=4)
)
_WRITTEN = (
    "a_categorical",
    "b_dominant_weight",
    "c_justification",
    "d_justification",
    "e_justification",
    "f_conclusion",
)


def _model_answer(grade_id):
    """A written answer as a strong student would write it: the model answer, no mark scheme."""
    text = _SOLUTION[grade_id].split("**Mark scheme**")[0]
    return text.split("*Instructor note.*")[0].strip() + "\n"


def _edit(grade_id, old, new):
    """The solution of ``grade_id`` with ``old`` replaced by ``new`` (which must occur)."""
    text = _SOLUTION[grade_id]
    if old not in text:
        raise ValueError(f"demo edit for {grade_id} no longer applies: {old!r} not found")
    return text.replace(old, new)


_ADA = {grade_id: _model_answer(grade_id) for grade_id in _WRITTEN}

STUDENTS = {
    "ada": _ADA,
    "ben": {
        **_ADA,
        "a_categorical": "The weights are positive and add up to one.\n",
        "b_dominant_weight": "q should be very close to k_i.\n",
        "c_answer": _edit("c_answer", "beta = 20.0", "beta = 1.0"),
        "f_answer": _edit("f_answer", "z * mu[x] / 2**0.5", "z * mu[x]"),
        "lab_attention_answer": _edit(
            "lab_attention_answer",
            "scores = Q @ K.transpose(-2, -1)",
            "scores = Q @ K.mT / Q.shape[-1] ** 0.5",
        ),
    },
    "cy": "release",
}
