"""Alternative correct answers and named wrong answers for assignment 1 (attention worksheet).

Each :class:`Case` replaces answer cells of the instructor's solution and says
which test cells must then fail (none for a correct alternative); every other
test cell must keep its full points. ``GROUPS`` ties answer cells to the test
cells that read them. The same table drives the fast in-process checks and the
slow run through ``nbgrader autograde`` (``tests/grading/test_assignments.py``).
"""

import numpy as np
from casetable import cases_table

from attncourse.constants import EXAMPLE_STUDENT
from attncourse.grading.attention_worksheet.references import instance_json, instance_of

ASSIGNMENT = "attention_worksheet"

# --------------------------------------------------------------------------- the table

GROUPS = {
    "q1a": (("q1a_answer",), ("q1a_projection_weight_shapes",)),
    "q1b": (("q1b_answer",), ("q1b_activation_shapes",)),
    "q1c": (("q1c_answer",), ("q1c_score_shapes",)),
    "q1d": (("q1d_answer",), ("q1d_output_shapes",)),
    "q2": (("q2_answer",), ("q2_projection_slots", "q2_activation_slots", "q2_combination_slots")),
    "q3a": (("q3a_answer",), ("q3a_toy_qkv",)),
    "q3b": (("q3b_answer",), ("q3b_toy_output",)),
    "q3c": (("q3c_answer",), ("q3c_linear_bridge",)),
    "q4c": (("q4c_answer",), ("q4c_chunk_after_projection", "q4c_project_per_head")),
    "q5a": (("q5a_answer",), ("q5a_head_splits",)),
    "q5b": (("q5b_answer",), ("q5b_concat_output",)),
}

# The course's figure of Q2 and the numerical demonstration of Q4(c): they only draw or print.
DISPLAY_ONLY = {"q2_figure", "q4c_demonstration"}

# The checks of the typed answers compare with the worksheet's own numbers: no random input.
FIXED_INPUTS = {
    "q2_projection_slots",
    "q2_activation_slots",
    "q2_combination_slots",
    "q3a_toy_qkv",
    "q3b_toy_output",
    "q5a_head_splits",
    "q5b_concat_output",
}


def QUESTION_OF(group):
    """q1a .. q1d are one question, as are q3a .. q3c and q5a, q5b."""
    return group[:2]


def shapes(name, body):
    """A Q1 answer cell: ``def name(B, n, d)`` returning ``body``."""
    return f"def {name}(B, n, d):\n    {body}\n"


def slots(**changes):
    """A Q2 answer: the solution's slots with ``changes`` (a value None drops the slot)."""
    base = {
        "A": "W_k_h",
        "B": "concat",
        "C": "K_h",
        "D": "W_v_h",
        "E": "Q_h",
        "F": "W_o",
        "G": "W_q_h",
        "H": "V_h",
        "I": "H_h",
    }
    base.update(changes)
    return f"SLOTS = { ({k: v for k, v in base.items() if v is not None})!r}\n"


# Typed answers are those of the id the case tables are graded under; OTHER is a classmate's.
EXAMPLE = instance_json(EXAMPLE_STUDENT)["answers"]
OTHER = instance_json("a-classmate")["answers"]


def typed(name, answers=EXAMPLE, typo=None, transpose=False):
    """``answers[name]`` as typed nested lists; ``typo`` (row, column, delta) changes one entry."""
    M = np.array(answers[name])
    M = M.T.copy() if transpose else M.copy()
    if typo:
        M[typo[0], typo[1]] += typo[2]
    return repr([[int(x) if x == int(x) else float(x) for x in row] for row in M])


def exact_y(decimals, student=EXAMPLE_STUDENT):
    """Q3(b)'s Y from the exact softmax of ``student``'s instance, rounded to ``decimals``."""
    d = instance_of(student)
    S = (d["X"] @ d["W_q"]) @ (d["X"] @ d["W_k"]).T / np.sqrt(2)
    A = np.exp(S) / np.exp(S).sum(axis=1, keepdims=True)
    return repr(np.round(A @ d["X"] @ d["W_v"] @ d["W_o"], decimals).tolist())


def for_student(source, student):
    """``source`` with the example's correctly typed answers replaced by ``student``'s own."""
    own = instance_json(student)["answers"]
    for name in EXAMPLE:
        source = source.replace(typed(name), typed(name, own))
    for decimals in (2, 3):
        source = source.replace(exact_y(decimals), exact_y(decimals, student))
    return source


FOR_STUDENT = for_student


def q5a_typed(answers=EXAMPLE, **changed):
    """Q5(a)'s six blocks typed; ``changed`` replaces a line's right-hand side by its name."""
    lines = {
        m: changed.get(m, f"{typed(f'{m}_0', answers)}, {typed(f'{m}_1', answers)}") for m in "QKV"
    }
    return "".join(f"{m}_0, {m}_1 = {rhs}\n" for m, rhs in lines.items())


def qkv(Q, K, V):
    return f"Q = {Q}\nK = {K}\nV = {V}\n"


def linear(body):
    return f"def linear_from_row_weight(W):\n    d_in, d_out = W.shape\n{body}\n"


def splits(chunk, per_head):
    return (
        "def chunk_after_projection(X, W, n_heads):\n"
        "    n, d = X.shape\n    d_h = d // n_heads\n"
        f"    {chunk}\n\n\n"
        "def project_per_head(X, W, n_heads):\n"
        "    d = W.shape[0]\n    d_h = d // n_heads\n"
        f"    {per_head}\n"
    )


SOL_CHUNK = "return (X @ W).view(n, n_heads, d_h).transpose(0, 1)"
SOL_PER_HEAD = "return X @ W.view(d, n_heads, d_h).transpose(0, 1)"

Q5A_TYPED = q5a_typed()

ROWS = [
    # Q1(a): shapes of the projection weights
    ("q1a", "repeated_tuple", shapes("projection_weight_shapes", "return ((d, d),) * 3"), ()),
    ("q1a", "lists", shapes("projection_weight_shapes", "return [[d, d], [d, d], [d, d]]"), ()),
    (
        "q1a",
        "torch_size",
        shapes("projection_weight_shapes", "s = torch.Size([d, d])\n    return s, s, s"),
        (),
    ),
    (
        "q1a",
        "numpy_ints",
        shapes("projection_weight_shapes", "w = (np.int64(d), np.int64(d))\n    return w, w, w"),
        (),
    ),
    (
        "q1a",
        "numpy_shape",
        shapes("projection_weight_shapes", "return (np.empty((d, d)).shape,) * 3"),
        (),
    ),
    ("q1a", "per_token_weight", shapes("projection_weight_shapes", "return ((n, d),) * 3"), True),
    ("q1a", "batched_weight", shapes("projection_weight_shapes", "return ((B, d, d),) * 3"), True),
    ("q1a", "vector_weight", shapes("projection_weight_shapes", "return ((d,),) * 3"), True),
    (
        "q1a",
        "float_entries",
        shapes("projection_weight_shapes", "return ((d * 1.0, d),) * 3"),
        True,
    ),
    ("q1a", "one_shape_only", shapes("projection_weight_shapes", "return (d, d)"), True),
    ("q1a", "hard_coded", shapes("projection_weight_shapes", "return ((5, 5),) * 3"), True),
    ("q1a", "strings", shapes("projection_weight_shapes", "return ('d x d',) * 3"), True),
    # Q1(b)
    ("q1b", "named", shapes("activation_shapes", "s = (B, n, d)\n    return s, s, s"), ()),
    ("q1b", "torch_size", shapes("activation_shapes", "return (torch.Size([B, n, d]),) * 3"), ()),
    ("q1b", "no_batch_axis", shapes("activation_shapes", "return ((n, d),) * 3"), True),
    ("q1b", "transposed", shapes("activation_shapes", "return ((B, d, n),) * 3"), True),
    ("q1b", "scores_shape", shapes("activation_shapes", "return ((B, n, n),) * 3"), True),
    # Q1(c)
    ("q1c", "named", shapes("score_shapes", "s = (B, n, n)\n    return s, s, s"), ()),
    ("q1c", "activation_shape", shapes("score_shapes", "return ((B, n, d),) * 3"), True),
    ("q1c", "unbatched", shapes("score_shapes", "return ((n, n),) * 3"), True),
    ("q1c", "feature_by_feature", shapes("score_shapes", "return ((B, d, d),) * 3"), True),
    (
        "q1c",
        "softmax_reduces",
        shapes("score_shapes", "return (B, n, n), (B, n, n), (B, n)"),
        True,
    ),
    # Q1(d)
    ("q1d", "lists", shapes("output_shapes", "return [B, n, d], [d, d], [B, n, d]"), ()),
    ("q1d", "batched_w_o", shapes("output_shapes", "return (B, n, d), (B, d, d), (B, n, d)"), True),
    ("q1d", "h_is_weights", shapes("output_shapes", "return (B, n, n), (d, d), (B, n, d)"), True),
    ("q1d", "no_batch", shapes("output_shapes", "return (n, d), (d, d), (n, d)"), True),
    ("q1d", "w_o_per_token", shapes("output_shapes", "return (B, n, d), (n, d), (B, n, d)"), True),
    # Q2: slot assignment
    ("q2", "lower_case_letters", slots().lower().replace("slots", "SLOTS"), ()),
    (
        "q2",
        "dict_call",
        "SLOTS = dict(A='W_k_h', B='concat', C='K_h', D='W_v_h', E='Q_h', F='W_o', G='W_q_h',"
        " H='V_h', I='H_h')\n",
        (),
    ),
    (
        "q2",
        "zip",
        "SLOTS = dict(zip('ABCDEFGHI', ['W_k_h', 'concat', 'K_h', 'W_v_h', 'Q_h', 'W_o', 'W_q_h',"
        " 'V_h', 'H_h']))\n",
        (),
    ),
    ("q2", "insertion_order", slots(I="H_h", A="W_k_h"), ()),
    (  # the worksheet's import rule: "Do not add imports" costs every test of the answer
        "q2",
        "ordered_dict_imported",
        "from collections import OrderedDict\n\n"
        + slots().replace("SLOTS = ", "SLOTS = OrderedDict(")[:-1]
        + ")\n",
        True,
    ),
    ("q2", "q_k_weights_swapped", slots(G="W_k_h", A="W_q_h"), ["q2_projection_slots"]),
    ("q2", "k_v_weights_swapped", slots(A="W_v_h", D="W_k_h"), ["q2_projection_slots"]),
    (
        "q2",
        "weight_and_activation_swapped",
        slots(G="Q_h", E="W_q_h"),
        ["q2_projection_slots", "q2_activation_slots"],
    ),
    ("q2", "q_k_activations_swapped", slots(E="K_h", C="Q_h"), ["q2_activation_slots"]),
    (
        "q2",
        "paths_read_q_k_v_left_to_right",
        slots(D="W_q_h", G="W_v_h", H="Q_h", E="V_h"),
        ["q2_projection_slots", "q2_activation_slots"],
    ),
    (
        "q2",
        "head_output_in_combine_slot",
        slots(I="concat", B="H_h"),
        ["q2_activation_slots", "q2_combination_slots"],
    ),
    ("q2", "concat_and_w_o_swapped", slots(B="W_o", F="concat"), ["q2_combination_slots"]),
    ("q2", "output_in_projection_slot", slots(F="Y"), ["q2_combination_slots"]),
    ("q2", "missing_slot", slots(I=None), ["q2_activation_slots"]),
    ("q2", "unknown_name", slots(I="softmax"), True),
    ("q2", "list_of_pairs", "SLOTS = [('A', 'W_k_h'), ('B', 'concat')]\n", True),
    (
        "q2",
        "numbered_slots",
        "SLOTS = dict(enumerate(['W_k_h', 'concat', 'K_h', 'W_v_h', 'Q_h', 'W_o', 'W_q_h',"
        " 'V_h', 'H_h']))\n",
        True,
    ),
    # Q3(a): Q, K, V typed or computed
    ("q3a", "typed_lists", qkv(typed("Q"), typed("K"), typed("V")), ()),
    (
        "q3a",
        "typed_arrays",
        qkv(*(f"np.array({typed(m)})" for m in "QKV")),
        (),
    ),
    (
        "q3a",
        "torch",
        "Q, K, V = (torch.tensor(X) @ torch.tensor(W) for W in (W_q, W_k, W_v))\n",
        (),
    ),
    ("q3a", "list_of_rows", qkv("list(X @ W_q)", "list(X @ W_k)", "list(X @ W_v)"), ()),
    ("q3a", "einsum", qkv(*(f"np.einsum('nd,de->ne', X, {w})" for w in ("W_q", "W_k", "W_v"))), ()),
    (
        "q3a",
        "float32_torch",
        "Q, K, V = (torch.from_numpy(X).float() @ torch.from_numpy(W).float()"
        " for W in (W_q, W_k, W_v))\n",
        (),
    ),
    ("q3a", "column_convention", qkv("W_q @ X", "W_k @ X", "W_v @ X"), True),
    ("q3a", "transposed_weights", qkv("X @ W_q.T", "X @ W_k.T", "X @ W_v.T"), True),
    ("q3a", "elementwise", qkv("X * W_q", "X * W_k", "X * W_v"), True),
    ("q3a", "x_transposed", qkv("X.T @ W_q", "X.T @ W_k", "X.T @ W_v"), True),
    ("q3a", "typo_in_k", qkv(typed("Q"), typed("K", typo=(1, 1, -1)), typed("V")), True),
    (
        "q3a",
        "a_classmates_numbers",
        'STUDENT_ID = "a-classmate"\n' + qkv(*(typed(m, OTHER) for m in "QKV")),
        True,
    ),
    ("q3a", "q_k_swapped", qkv("X @ W_k", "X @ W_q", "X @ W_v"), True),
    ("q3a", "v_without_projection", qkv("X @ W_q", "X @ W_k", "X"), True),
    (
        "q3a",
        "typed_transposed",
        qkv(typed("Q", transpose=True), typed("K"), typed("V")),
        True,
    ),
    # Q3(b): Y
    ("q3b", "typed_rounded", f"Y = {typed('Y')}\n", ()),
    ("q3b", "typed_two_decimals", f"Y = {exact_y(2)}\n", ()),
    ("q3b", "typed_three_decimals", f"Y = {exact_y(3)}\n", ()),
    (
        "q3b",
        "float32_softmax",
        "t = {k: torch.tensor(v, dtype=torch.float32) for k, v in dict(X=X, o=W_o).items()}\n"
        "S = t['X'] @ torch.tensor(W_q).float() @ (t['X'] @ torch.tensor(W_k).float()).T\n"
        "A = torch.softmax(S / torch.sqrt(torch.tensor(2.0)), dim=-1)\n"
        "Y = torch.einsum('nm,me,ef->nf', A, t['X'] @ torch.tensor(W_v).float(), t['o'])\n",
        (),
    ),
    ("q3b", "typo_of_a_half", f"Y = {typed('Y', typo=(0, 1, 0.5))}\n", True),
    ("q3b", "a_classmates_numbers", f"Y = {typed('Y', OTHER)}\n", True),
    (
        "q3b",
        "exact_softmax_numpy",
        "S = (X @ W_q) @ (X @ W_k).T / np.sqrt(2)\n"
        "A = np.exp(S) / np.exp(S).sum(axis=1, keepdims=True)\n"
        "Y = A @ (X @ W_v) @ W_o\n",
        (),
    ),
    (
        "q3b",
        "exact_softmax_torch",
        "t = {k: torch.tensor(v) for k, v in dict(X=X, q=W_q, k=W_k, v=W_v, o=W_o).items()}\n"
        "A = torch.softmax(t['X'] @ t['q'] @ (t['X'] @ t['k']).T / 2**0.5, dim=-1)\n"
        "Y = A @ t['X'] @ t['v'] @ t['o']\n",
        (),
    ),
    ("q3b", "forgot_output_projection", "Y = A_approx @ (X @ W_v)\n", True),
    ("q3b", "weights_transposed", "Y = A_approx.T @ (X @ W_v) @ W_o\n", True),
    ("q3b", "column_order_w_o", "Y = W_o @ (A_approx @ (X @ W_v))\n", True),
    ("q3b", "x_instead_of_v", "Y = A_approx @ X @ W_o\n", True),
    (
        "q3b",
        "softmax_over_columns",
        "S = (X @ W_q) @ (X @ W_k).T / np.sqrt(2)\n"
        "A = np.exp(S) / np.exp(S).sum(axis=0, keepdims=True)\n"
        "Y = A @ (X @ W_v) @ W_o\n",
        True,
    ),
    ("q3b", "typo", f"Y = {typed('Y', typo=(1, 1, 1))}\n", True),
    ("q3b", "forgot_v", "Y = A_approx @ W_o\n", True),
    ("q3b", "skipped_attention", "Y = X @ W_o\n", True),
    # Q3(c): nn.Linear from a row-convention weight
    (
        "q3c",
        "parameter",
        linear(
            "    layer = nn.Linear(d_in, d_out, bias=False)\n"
            "    layer.weight = nn.Parameter(W.T.contiguous())\n    return layer"
        ),
        (),
    ),
    (
        "q3c",
        "data_float32",
        linear(
            "    layer = nn.Linear(d_in, d_out, bias=False)\n"
            "    layer.weight.data = W.t().float()\n    return layer"
        ),
        (),
    ),
    (
        "q3c",
        "shape_unpacked",
        linear(
            "    layer = nn.Linear(*W.shape, bias=False)\n"
            "    layer.weight.data.copy_(W.transpose(0, 1))\n    return layer"
        ),
        (),
    ),
    (
        "q3c",
        "float64_layer",
        linear(
            "    layer = nn.Linear(d_in, d_out, bias=False, dtype=torch.float64)\n"
            "    with torch.no_grad():\n        layer.weight[:] = W.mT\n    return layer"
        ),
        (),
    ),
    (
        "q3c",
        "named_subclass",
        "class RowLinear(nn.Linear):\n    pass\n\n\n"
        + linear(
            "    layer = RowLinear(d_in, d_out, bias=False)\n"
            "    layer.weight.data = W.T.float()\n    return layer"
        ),
        (),
    ),
    (
        "q3c",
        "weight_not_transposed",
        linear(
            "    layer = nn.Linear(d_in, d_out, bias=False)\n"
            "    layer.weight = nn.Parameter(W.clone())\n    return layer"
        ),
        True,
    ),
    (
        "q3c",
        "bias_left_on",
        linear(
            "    layer = nn.Linear(d_in, d_out)\n    layer.weight.data = W.T.float()\n    return layer"
        ),
        True,
    ),
    ("q3c", "returns_tensor", linear("    return W.T"), True),
    (
        "q3c",
        "in_out_swapped",
        linear(
            "    layer = nn.Linear(d_out, d_in, bias=False)\n"
            "    layer.weight = nn.Parameter(W.T.contiguous())\n    return layer"
        ),
        True,
    ),
    ("q3c", "weight_never_set", linear("    return nn.Linear(d_in, d_out, bias=False)"), True),
    (
        "q3c",
        "pseudo_inverse",
        linear(
            "    layer = nn.Linear(d_in, d_out, bias=False)\n"
            "    layer.weight.data = torch.linalg.pinv(W).float()\n    return layer"
        ),
        True,
    ),
    (
        "q3c",
        "reshape_not_transpose",
        linear(
            "    layer = nn.Linear(d_in, d_out, bias=False)\n"
            "    layer.weight.data = W.reshape(d_out, d_in).float()\n    return layer"
        ),
        True,
    ),
    (
        "q3c",
        "subclass_forward",
        "class RowLinear(nn.Linear):\n    def forward(self, x):\n        return x @ self.W\n\n\n"
        + linear(
            "    layer = RowLinear(d_in, d_out, bias=False)\n    layer.W = W\n    return layer"
        ),
        True,
    ),
    (
        "q3c",
        "forward_overridden",
        "class ShiftedLinear(nn.Linear):\n    def forward(self, x):\n"
        "        return super().forward(x) + 1\n\n\n"
        + linear(
            "    layer = ShiftedLinear(d_in, d_out, bias=False)\n"
            "    layer.weight.data = W.T.float()\n    return layer"
        ),
        True,
    ),
    # Q4(c): block-matrix demonstration
    (
        "q4c",
        "einsum",
        splits(
            "return torch.einsum('nhe->hne', (X @ W).view(n, n_heads, d_h))",
            "return torch.einsum('nd,hde->hne', X, W.view(d, n_heads, d_h).permute(1, 0, 2))",
        ),
        (),
    ),
    (
        "q4c",
        "chunk_and_loop",
        splits(
            "return torch.stack(torch.chunk(X @ W, n_heads, dim=1))",
            "return torch.stack([X @ W[:, h * d_h : (h + 1) * d_h] for h in range(n_heads)])",
        ),
        (),
    ),
    (
        "q4c",
        "reshape_permute",
        splits(
            "return (X @ W).reshape(n, n_heads, -1).permute(1, 0, 2)",
            "return X @ torch.stack(W.split(d_h, dim=1))",
        ),
        (),
    ),
    (
        "q4c",
        "tensor_split",
        splits(
            "return torch.stack(torch.tensor_split(X @ W, n_heads, dim=-1), dim=0)",
            "return torch.stack(list(map(lambda w: X @ w, W.tensor_split(n_heads, dim=1))))",
        ),
        (),
    ),
    (
        "q4c",
        "float32_outer_split",
        splits(
            "return torch.stack((X.float() @ W.float()).split(d_h, dim=1))",
            "return torch.einsum('nd,dhe->hne', X.float(), W.float().view(d, n_heads, d_h))",
        ),
        (),
    ),
    (
        "q4c",
        "preallocated_in_place",
        splits(
            "out = torch.empty(n_heads, n, d_h, dtype=X.dtype)\n"
            "    torch.matmul(X, W.view(d, n_heads, d_h).transpose(0, 1), out=out)\n"
            "    return out",
            "out = X.new_zeros(n_heads, X.shape[0], d_h)\n"
            "    out.copy_(torch.bmm(X.expand(n_heads, -1, -1), W.view(d, n_heads, d_h).permute(1, 0, 2)))\n"
            "    return out",
        ),
        (),
    ),
    (
        "q4c",
        "reshape_mixes_rows",
        splits("return (X @ W).reshape(n_heads, n, d_h)", SOL_PER_HEAD),
        ["q4c_chunk_after_projection"],
    ),
    (
        "q4c",
        "interleaved_chunk",
        splits("return (X @ W).view(n, d_h, n_heads).permute(2, 0, 1)", SOL_PER_HEAD),
        ["q4c_chunk_after_projection"],
    ),
    (
        "q4c",
        "head_axis_not_moved",
        splits("return (X @ W).view(n, n_heads, d_h)", SOL_PER_HEAD),
        ["q4c_chunk_after_projection"],
    ),
    (
        "q4c",
        "chunk_rows",
        splits("return torch.stack(torch.chunk(X @ W, n_heads, dim=0))", SOL_PER_HEAD),
        ["q4c_chunk_after_projection"],
    ),
    (
        "q4c",
        "w_split_by_rows",
        splits(SOL_CHUNK, "return X @ W.view(n_heads, d_h, d)"),
        ["q4c_project_per_head"],
    ),
    (
        "q4c",
        "interleaved_columns",
        splits(SOL_CHUNK, "return X @ W.view(d, d_h, n_heads).permute(2, 0, 1)"),
        ["q4c_project_per_head"],
    ),
    (
        "q4c",
        "heads_reversed",
        splits(SOL_CHUNK, "return (X @ W.view(d, n_heads, d_h).transpose(0, 1)).flip(0)"),
        ["q4c_project_per_head"],
    ),
    (
        "q4c",
        "heads_not_stacked",
        splits(SOL_CHUNK, "return [X @ W[:, h * d_h : (h + 1) * d_h] for h in range(n_heads)]"),
        ["q4c_project_per_head"],
    ),
    (
        "q4c",
        "x_times_w_transposed",
        splits(
            "return (X @ W.T).view(n, n_heads, d_h).transpose(0, 1)",
            "return X @ W.T.reshape(d, n_heads, d_h).transpose(0, 1)",
        ),
        True,
    ),
    # Q5(a): per-head blocks
    ("q5a", "typed", Q5A_TYPED, ()),
    (
        "q5a",
        "hsplit",
        "Q_0, Q_1 = np.hsplit(Q_mha, 2)\nK_0, K_1 = np.hsplit(K_mha, 2)\nV_0, V_1 = np.hsplit(V_mha, 2)\n",
        (),
    ),
    (
        "q5a",
        "torch_chunk",
        "Q_0, Q_1 = torch.tensor(Q_mha).chunk(2, dim=1)\nK_0, K_1 = torch.tensor(K_mha).chunk(2, dim=1)\n"
        "V_0, V_1 = torch.tensor(V_mha).chunk(2, dim=1)\n",
        (),
    ),
    (
        "q5a",
        "reshape_transpose",
        "Q_0, Q_1 = Q_mha.reshape(2, 2, 2).transpose(1, 0, 2)\n"
        "K_0, K_1 = K_mha.reshape(2, 2, 2).transpose(1, 0, 2)\n"
        "V_0, V_1 = V_mha.reshape(2, 2, 2).transpose(1, 0, 2)\n",
        (),
    ),
    (
        "q5a",
        "heads_swapped",
        "Q_1, Q_0 = Q_mha[:, :2], Q_mha[:, 2:]\nK_1, K_0 = K_mha[:, :2], K_mha[:, 2:]\n"
        "V_1, V_0 = V_mha[:, :2], V_mha[:, 2:]\n",
        True,
    ),
    (
        "q5a",
        "interleaved",
        "Q_0, Q_1 = Q_mha[:, ::2], Q_mha[:, 1::2]\nK_0, K_1 = K_mha[:, ::2], K_mha[:, 1::2]\n"
        "V_0, V_1 = V_mha[:, ::2], V_mha[:, 1::2]\n",
        True,
    ),
    (
        "q5a",
        "split_rows",
        "Q_0, Q_1 = Q_mha[:1], Q_mha[1:]\nK_0, K_1 = K_mha[:1], K_mha[1:]\nV_0, V_1 = V_mha[:1], V_mha[1:]\n",
        True,
    ),
    (
        "q5a",
        "reshape_rows",
        "Q_0, Q_1 = Q_mha.reshape(2, 2, 2)\nK_0, K_1 = K_mha.reshape(2, 2, 2)\nV_0, V_1 = V_mha.reshape(2, 2, 2)\n",
        True,
    ),
    (
        "q5a",
        "k_copied_from_q",
        q5a_typed(K="Q_0, Q_1"),
        True,
    ),
    (
        "q5a",
        "typo_in_v_1",
        q5a_typed(V=f"{typed('V_0')}, {typed('V_1', typo=(1, 0, 2))}"),
        True,
    ),
    ("q5a", "a_classmates_numbers", 'STUDENT_ID = "a-classmate"\n' + q5a_typed(OTHER), True),
    (
        "q5a",
        "k_v_swapped",
        Q5A_TYPED.replace("K_0, K_1", "K_tmp")
        .replace("V_0, V_1", "K_0, K_1")
        .replace("K_tmp", "V_0, V_1"),
        True,
    ),
    (
        "q5a",
        "transposed_blocks",
        "Q_0, Q_1 = Q_mha[:, :2].T, Q_mha[:, 2:].T\nK_0, K_1 = K_mha[:, :2].T, K_mha[:, 2:].T\n"
        "V_0, V_1 = V_mha[:, :2].T, V_mha[:, 2:].T\n",
        True,
    ),
    # Q5(b): concatenation and output
    (
        "q5b",
        "typed",
        f"H_concat = {typed('H_concat')}\nY_mha = {typed('Y_mha')}\n",
        (),
    ),
    (
        "q5b",
        "a_classmates_numbers",
        f"H_concat = {typed('H_concat', OTHER)}\nY_mha = {typed('Y_mha', OTHER)}\n",
        True,
    ),
    ("q5b", "hstack", "H_concat = np.hstack([H_0, H_1])\nY_mha = np.dot(H_concat, W_o_mha)\n", ()),
    (
        "q5b",
        "torch_cat",
        "H_concat = torch.cat([torch.tensor(H_0), torch.tensor(H_1)], dim=-1)\n"
        "Y_mha = H_concat @ torch.tensor(W_o_mha)\n",
        (),
    ),
    (
        "q5b",
        "block_product",
        "H_concat = np.block([H_0, H_1])\nY_mha = H_0 @ W_o_mha[:2] + H_1 @ W_o_mha[2:]\n",
        (),
    ),
    (
        "q5b",
        "float32_einsum",
        "H_concat = torch.cat([torch.tensor(H_0), torch.tensor(H_1)], 1).float()\n"
        "Y_mha = torch.einsum('nk,kd->nd', H_concat, torch.tensor(W_o_mha, dtype=torch.float32))\n",
        (),
    ),
    (
        "q5b",
        "order_swapped",
        "H_concat = np.hstack([H_1, H_0])\nY_mha = H_concat @ W_o_mha\n",
        True,
    ),
    (
        "q5b",
        "stacked_rows",
        "H_concat = np.vstack([H_0, H_1])\nY_mha = " + typed("Y_mha") + "\n",
        True,
    ),
    ("q5b", "sum_of_heads", "H_concat = H_0 + H_1\nY_mha = " + typed("Y_mha") + "\n", True),
    (
        "q5b",
        "block_diagonal_projection",
        "H_concat = np.hstack([H_0, H_1])\n"
        "Y_mha = np.hstack([H_0 @ W_o_mha[:2, :2], H_1 @ W_o_mha[2:, 2:]])\n",
        True,
    ),
    (
        "q5b",
        "first_head_twice",
        "H_concat = np.hstack([H_0, H_0])\nY_mha = H_concat @ W_o_mha\n",
        True,
    ),
    ("q5b", "forgot_w_o", "H_concat = np.hstack([H_0, H_1])\nY_mha = H_concat\n", True),
    (
        "q5b",
        "interleaved_heads",
        "H_concat = np.stack([H_0, H_1], axis=2).reshape(2, 4)\nY_mha = H_concat @ W_o_mha\n",
        True,
    ),
    (
        "q5b",
        "typo_in_y",
        "H_concat = np.hstack([H_0, H_1])\nY_mha = " + typed("Y_mha", typo=(1, 3, -1)) + "\n",
        True,
    ),
]

CASES = cases_table(GROUPS, ROWS)

MESSAGES = {
    "q3a:a_classmates_numbers": ("q3a_toy_qkv", "answers match student 'a-classmate'"),
    "q5a:a_classmates_numbers": ("q5a_head_splits", "not your own (graded as 'example')"),
}

# Wrong cases no visible check of their part catches (tests/grading/test_visible_checks.py), and why.
VISIBLE_EXCEPTIONS = {
    "q2:paths_read_q_k_v_left_to_right": "which path carries queries, keys and values is what "
    "Q2 asks; the visible checks see only the figure's structure (weights beside the Linears, "
    "one kind per path), which this consistent relabelling keeps",
}

# Visible checks name the likely cause on evidence: case id -> (visible test cell, words).
VISIBLE_MESSAGES = {
    "q2:q_k_weights_swapped": ("q2_activation_slots", "are one path"),
    "q3a:column_convention": ("q3a_toy_qkv", "the column-vector convention"),
    "q3a:a_classmates_numbers": ("q3a_toy_qkv", "STUDENT_ID is 'a-classmate'"),
    "q3b:forgot_output_projection": ("q3b_toy_output", "the output projection W^(o) is missing"),
    "q3b:softmax_over_columns": ("q3b_toy_output", "the softmax taken over the columns"),
    "q3c:reshape_not_transpose": ("q3c_linear_bridge", "keeps the memory order"),
    "q4c:reshape_mixes_rows": ("q4c_chunk_after_projection", "rows get mixed across heads"),
    "q4c:interleaved_columns": ("q4c_project_per_head", "interleaved split"),
    "q5a:heads_swapped": ("q5a_head_splits", "heads swapped"),
    "q5b:block_diagonal_projection": ("q5b_concat_output", "its own diagonal block of W^(o)"),
}
