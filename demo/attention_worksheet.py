"""Demo students of attention_worksheet: answer overrides on top of the instructor's solution.

ada hands in a perfect notebook and right written answers in her own words, cy the
untouched release; ben makes three common mistakes (a softmax that drops an axis, the
column-vector habit, heads concatenated in the wrong order), writes a partial argument
for Q4(a) and a wrong one for Q4(b).
"""

from devtools.demo import PARTLY, RIGHT, WRONG, in_own_words

# Written answers in the demo students' own words: (right, partly right, wrong) per question.
WRITTEN = {
    "q4a_block_identity": (
        "Entry $(r, c)$ of $Q = XW^{(q)}$ is row $r$ of $X$ times column $c$ of $W^{(q)}$, so a "
        "column of $Q$ only uses the same column of $W^{(q)}$. The first $d_h$ columns of "
        "$W^{(q)}$ are $W_0^{(q)}$, hence $Q[:, :d_h] = XW_0^{(q)} = Q_0$, and the last $d_h$ give "
        "$Q_1 = XW_1^{(q)}$. Cutting $Q$ by columns gives exactly the per-head queries.\n",
        "Q = X W^(q), and W^(q) has two halves, so Q also has two halves, one for each head.\n",
        "The two are not the same: $Q_0$ is $X$ times a $d \\times d_h$ matrix, but the big "
        "product mixes both heads, so $Q[:, :d_h]$ also depends on $W_1^{(q)}$.\n",
    ),
    "q4b_same_for_k_v": (
        "Nothing in (a) was about queries: the same column argument gives $K = [K_0 \\mid K_1]$ "
        "and $V = [V_0 \\mid V_1]$. Every head then gets the same $Q_h, K_h, V_h$ either way, so "
        "its output, the concatenation and $Y$ are equal. One big product is faster than many "
        "small ones.\n",
        "It is the same for K and V because they are also X times a matrix.\n",
        "For $V$ it does not work, because the values are not split into heads before the "
        "softmax.\n",
    ),
}

STUDENTS = {
    "ada": in_own_words(WRITTEN, RIGHT),
    "ben": {
        **in_own_words(WRITTEN, PARTLY),
        "q4b_same_for_k_v": WRITTEN["q4b_same_for_k_v"][WRONG],
        "q1c_answer": (
            "def score_shapes(B, n, d):\n"
            '    """Shapes of Q K^T, of Q K^T / sqrt(d), and of the attention weights."""\n'
            "    return (B, n, n), (B, n, n), (B, n)\n"
        ),
        "q3a_answer": "Q = W_q @ X\nK = W_k @ X\nV = W_v @ X\n",
        "q5b_answer": "H_concat = np.concatenate([H_1, H_0], axis=1)\nY_mha = H_concat @ W_o_mha\n",
    },
    "cy": "release",
}
