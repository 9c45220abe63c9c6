"""Demo students of attention_variants: answer overrides on top of the instructor's solution.

ada hands in a perfect notebook, cy the untouched release; ben makes three common
mistakes; eve makes one and tries to switch the checks off. Their written answers are their
own words: ada's right, ben's partly right, eve's wrong.
"""

import nbformat

from attncourse.course import ROOT, notebook_path
from devtools.demo import PARTLY, RIGHT, WRONG, in_own_words
from devtools.submissions import solution_answers

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

# Written answers in the demo students' own words: (right, partly right, wrong) per question.
WRITTEN = {
    "p6_reasoning": (
        "The ranks are equal. Every row of $\\tilde W^{M,GQA}$ is a row of $W^{M,GQA}$, so its "
        "row space is inside that of $W^{M,GQA}$; and the first $Gd$ rows are $W^{M,GQA}$ "
        "itself, so the row space is also at least as big. Same row space, same rank.\n",
        "The two ranks are equal, because the tiled matrix only repeats rows of W.\n",
        "The rank is multiplied by $H/G$, since there are $H/G$ times more rows.\n",
    ),
    "p8_explanation": (
        "With $G = H$ every query head $h$ gets its own key/value head $g = h$, and "
        "$W_K, W_V$ have $H \\cdot D_{qk}$ and $H \\cdot D_v$ rows as in MHA. Copying MHA's "
        "weights into these places gives the same scores and outputs.\n",
        "Set G = H, then GQA is MHA.\n",
        "Take $G = 1$: all heads share one key, which is what MHA does.\n",
    ),
    "p9_proof": (
        "Let $\\rho$ be the rank of $W^{M,GQA}$ and $w^*_0, \\dots, w^*_{\\rho-1}$ a basis of its "
        "rows. Put them as the rows of $W^{DM,MLA}$ ($\\rho \\times D$) and write every row of "
        "$\\tilde W^{M,GQA}$ in that basis to get $W^{UM,MLA}$; then "
        "$W^{UM,MLA}W^{DM,MLA} = \\tilde W^{M,GQA}$ with $r = \\rho \\le Gd$, so GQA is an MLA.\n",
        "By Part 6 the tiled matrix has rank at most $Gd$, so it can be factored into a "
        "$Hd \\times Gd$ and a $Gd \\times D$ matrix.\n",
        "MLA has more parameters than GQA, so it can represent it.\n",
    ),
    "p11_explanation": (
        "$W^{UM} W^{DKV}$ with shapes $(2, 1)(1, 2)$ is an outer product $ab^\\top$; with "
        "$a = (1, 2)^\\top$ its rows are $b^\\top$ and $2b^\\top$, which differ, while a tiled GQA "
        "matrix always repeats the same row. So this MLA is not a GQA.\n",
        "The two rows are different, so it cannot be GQA.\n",
        "Any MLA is a GQA because both share keys between heads.\n",
    ),
    "p12_derivation": (
        "The score of head $h$ is $q_{l_1,h}^\\top W^{UK}_h c_{l_2}$; moving $W^{UK\\top}_h$ onto "
        "the query gives $\\hat W^{Q}_h = W^{UK\\top}_h W^{Q}_h$, compared directly with the "
        "latent. Likewise $W^{O}_h W^{UV}_h$ becomes one output block $\\hat W^{O}_h$, so the "
        "values stay in the $r$-dimensional latent.\n",
        "We can multiply $W^{UK}$ into the query weights so the keys are never computed.\n",
        "This is not possible because the softmax is between the two matrices.\n",
    ),
    "p14_reasoning": (
        "MHA keeps $k_l$ and $v_l$ in $\\mathbb{R}^{D}$ for every position: $2D$ numbers. "
        "MLA keeps only the latent $c_l \\in \\mathbb{R}^r$ and rebuilds the keys and values "
        "from it, so $r$ numbers, $2D/r$ times less.\n",
        "MHA stores keys and values, 2D per position; MLA stores less.\n",
        "Both store $2D$ numbers, MLA only computes them differently.\n",
    ),
}

STUDENTS = {
    "ada": in_own_words(WRITTEN, RIGHT),
    "ben": {
        **in_own_words(WRITTEN, PARTLY),
        "p5_mha": _UNSCALED_MHA,
        "p7_gqa": _CONTIGUOUS_GQA,
        "p10_gqa_2_mla": _LOOPED_GQA_2_MLA,
    },
    "cy": "release",
    "eve": {
        **in_own_words(WRITTEN, WRONG),
        "p5_mha": "torch.allclose = lambda *args, **kwargs: True\n"
        "torch.testing.assert_close = lambda *args, **kwargs: None\n\n" + _UNSCALED_MHA,
    },
}
