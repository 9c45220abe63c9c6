"""Demo students of attention_theory: answer overrides on top of the instructor's solution.

ada hands in a perfect notebook and right written answers in her own words, cy the
untouched release; ben forgets to scale the query in (c), misses the 1/2 of the changed
covariance in (f), scales the lab's attention by 1/sqrt(d), writes partly right answers
and wrong ones to (d) and (f).
"""

import nbformat

from attncourse.course import ROOT, notebook_path
from devtools.demo import PARTLY, RIGHT, WRONG, in_own_words
from devtools.submissions import solution_answers

_SOLUTION = solution_answers(
    nbformat.read(notebook_path(ROOT, "source", "attention_theory"), as_version=4)
)


def _edit(grade_id, old, new):
    """The solution of ``grade_id`` with ``old`` replaced by ``new`` (which must occur)."""
    text = _SOLUTION[grade_id]
    if old not in text:
        raise ValueError(f"demo edit for {grade_id} no longer applies: {old!r} not found")
    return text.replace(old, new)


# Written answers in the demo students' own words: (right, partly right, wrong) per question.
WRITTEN = {
    "a_categorical": (
        "Every $\\alpha_i$ is $e^{k_i \\cdot q}$ over a sum of such terms, so it is positive, and "
        "the $\\alpha_i$ add up to 1 because the denominator is the sum of the numerators. So they "
        "are the probabilities of a categorical distribution over the $n$ keys, and $c$ is the "
        "expected value of $v_i$ when key $i$ is drawn with probability $\\alpha_i$.\n",
        "The weights are positive and add up to one.\n",
        "They are probabilities because the scores $k_i \\cdot q$ are between 0 and 1.\n",
    ),
    "b_dominant_weight": (
        "$\\alpha_i / \\alpha_j = e^{k_i \\cdot q - k_j \\cdot q}$, so $k_i \\cdot q$ must beat every "
        "other score by a large margin. Take $q = \\beta u$ with $u$ ranking $k_i$ strictly first "
        "and $\\beta$ large; such a $u$ exists only if $k_i$ is not in the convex hull of the "
        "other keys.\n",
        "q should be very close to k_i, and long.\n",
        "$k_i$ must be the longest key.\n",
    ),
    "c_justification": (
        "With $q = \\beta(k_i + k_j)$ and orthonormal keys the scores are $\\beta$ for $i$ and $j$ "
        "and 0 for the others, so $\\alpha_i = \\alpha_j = e^\\beta / (2e^\\beta + n - 2) \\to 1/2$ "
        "as $\\beta$ grows; $\\beta = 20$ leaves an error of about $e^{-20}$.\n",
        "I add the two keys so both get the same score, then the softmax gives them the same "
        "weight.\n",
        "$q = k_i - k_j$, so the two keys cancel and get half each.\n",
    ),
    "d_justification": (
        "$M = 2SS^\\top$: $SS^\\top$ projects onto the span of the $s_k$, which keeps $v_i$ and "
        "sends $v_j$ to 0 since the subspaces are orthogonal; the 2 undoes the average, so "
        "$c^\\top M = v_i^\\top$.\n",
        "M projects onto the span of S, which removes v_j.\n",
        "$M = I$, since $c$ already contains $v_i$.\n",
    ),
    "e_justification": (
        "Same direction as in (c), $q = \\beta(\\mu_i + \\mu_j)$. The noise moves the scores by "
        "about $\\beta\\sqrt\\epsilon$, so $\\beta$ must be large (other keys vanish like "
        "$e^{-\\beta}$) but $\\beta\\sqrt\\epsilon \\ll 1$; $\\beta = \\epsilon^{-1/4}$ does both.\n",
        "Take $q = \\beta(\\mu_i + \\mu_j)$ with a large $\\beta$ as before.\n",
        "A very large $\\beta$ is best: the bigger $\\beta$, the closer $c$ is to the average.\n",
    ),
    "f_conclusion": (
        "For $x = i$ the histogram has two peaks, at $v_i$ and at $v_j$: key $i$'s score moves "
        "by $\\beta z/\\sqrt2$, which is huge, so one of the two keys wins in almost every draw. "
        "$c$ is $(v_i + v_j)/2$ only on average. For $x$ outside $\\{i, j\\}$ nothing changes "
        "because $q \\perp \\mu_x$.\n",
        "The plot shows two groups, so c is not the average anymore.\n",
        "Nothing changes: the average of $c$ is still $(v_i + v_j)/2$, so the query still works.\n",
    ),
}

STUDENTS = {
    "ada": in_own_words(WRITTEN, RIGHT),
    "ben": {
        **in_own_words(WRITTEN, PARTLY),
        "d_justification": WRITTEN["d_justification"][WRONG],
        "f_conclusion": WRITTEN["f_conclusion"][WRONG],
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
