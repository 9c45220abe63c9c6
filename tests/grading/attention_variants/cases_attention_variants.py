"""Mutation table of the ``attention_variants`` assignment (the toolkit: ``casetable``).

Each :class:`~casetable.Case` replaces answer cells (by ``grade_id``) of the instructor's
solution and says which autograded test cells must then score 0 (``fails``); every other
autograded cell must keep its full points. Correct alternatives have no ``fails``. A
case's group is the part of its cells (``p5`` for ``p5_mha``); ``GROUPS`` ties each part's
answer cells to its test cells, read from the source notebook. Where one part's answer
feeds another part's test, ``DEPENDS`` says so, ``fails`` names that dependency too and
``note`` says why:

* ``p13_experiment_test`` runs the student's ``MyMHA`` (Part 5) and
  ``reduced_matrices`` (Part 13), so a Part 5 or Part 13 answer that computes
  wrong values also costs the experiment's 2 points (its outputs are wrong); a
  MyMHA that fails only in float64 does not (the experiment runs in float32);
* ``p8_mha_as_gqa_test`` builds the student's ``MyGQA`` (Part 7) with G = H; a
  Part 7 mistake costs Part 7 only (an answer that fails exactly as
  ``MyGQA(..., H, H)`` fails keeps Part 8's point), so no Part 7 case fails it.

Rule violations (loops, torch in Part 10, multi-statement outputs) cost only the
rule cell of their part; handing the attention to a fused kernel costs the
values cell (the values are then not the student's work).

Tampering cases (``alone``) rebind torch, numpy, builtins or the course's
helpers in the kernel. The judge, in the grader's own process, is not fooled by
them: each loses the tests its answer fails, and every rule-bound test (``RULES``:
no rule can be proved next to code that changes the libraries). The integrity scan of the grading
pipeline flags the part for review, but the scores stand. A rebinding stays in
force in the kernel, so the student's own code after it runs with it and loses
what it breaks there (``nn.Linear.forward`` zeroed also zeroes MyGQA's outputs);
the course's helpers cannot be imported in a sandboxed kernel at all. They run
only in the autograded run, in sandboxed kernels: in process they would rebind
the test process's own torch and builtins.
"""

import textwrap

from casetable import Case, source_notebook

from attncourse.cells import grade_id, is_answer, is_test_cell

ASSIGNMENT = "attention_variants"
SOURCE = source_notebook(ASSIGNMENT)


def part(gid):
    """The part a cell belongs to: the prefix of its grade_id (``p13`` for ``p13_experiment``)."""
    return gid.split("_")[0]


def _parts():
    """part -> (its code answer cells, its test cells), in notebook order."""
    groups = {}
    for cell in SOURCE.cells:
        if cell.cell_type == "code" and (is_answer(cell) or is_test_cell(cell)):
            answers, tests = groups.setdefault(part(grade_id(cell)), ([], []))
            (tests if is_test_cell(cell) else answers).append(grade_id(cell))
    return {p: (tuple(answers), tuple(tests)) for p, (answers, tests) in groups.items()}


GROUPS = _parts()

# Test cells that read answer cells of another part (see the module docstring).
DEPENDS = {"p13_experiment_test": {"p5_mha"}, "p8_mha_as_gqa_test": {"p7_gqa"}}

# The course's figures: they only draw (underscored names), and no check reads them.
DISPLAY_ONLY = {"fig_attention_heatmap", "fig_gqa_singular_values", "fig_kv_cache"}

# The Part 13 experiment runs at the task's full size (seconds): in process it is judged for
# the cases that change the experiment cell and for those whose mistake elsewhere must cost
# it; the autograded run judges it for all.
IN_PROCESS_STUBS = {"p13_experiment": ("pass", ("p13_experiment_test",))}

# Part 11's answer is two small typed arrays: its check looks them up, nothing is called.
FIXED_INPUTS = {"p11_mla_example_test"}

# Named mistakes, with the test whose failure message must name them in the student's words.
MESSAGES = {
    "p3:p3_missing_scale": ("p3_softmax_argument_values_test", "missing the 1/sqrt(D_qk) scaling"),
    "p5:p5_merge_without_moving_head_axis": (
        "p5_mha_values_test",
        "heads merged without moving the head axis",
    ),
    "p5:p5_heads_split_the_wrong_way": ("p5_mha_values_test", "heads split the wrong way"),
    "p5:p5_loop_over_heads": ("p5_mha_no_loops_test", "a for loop"),
    "p5:p5_fused_attention": ("p5_mha_values_test", "build the attention by hand"),
    "p5:p5_float32_softmax_not_cast_back": ("p5_mha_values_test", "must be cast back"),
    "p7:p7_bias_present": ("p7_gqa_attributes_test", "bias present"),
    "p7:p7_contiguous_repeat_interleave": ("p7_gqa_interleaved_heads_test", "contiguous grouping"),
    "p7:p7_weight_copies": ("p7_gqa_attributes_test", "copies of the K projection"),
    "p10:p10_np_repeat": ("p10_gqa_2_mla_reconstruction_test", "np.repeat"),
    "p10:p10_torch_svd": ("p10_gqa_2_mla_rules_test", "numpy only"),
    "p13:p13_missing_sqrt_r_over_d": ("p13_reduced_matrices_test", "missing the sqrt(r/d) factor"),
    "p13:p13_wrong_head_split_of_W_UK": ("p13_reduced_matrices_test", "wrong head split of W_UK"),
    "p13:p13_wrong_head_split_of_W_O": ("p13_reduced_matrices_test", "wrong head split of W_O"),
    "p13:p13_intermediate_tensor": (
        "p13_reduced_matrices_rules_test",
        "an intermediate computed on line",
    ),
    "p13:p13_class_instead_of_function": (
        "p13_reduced_matrices_rules_test",
        "reduced_matrices must be a function",
    ),
    "p13:p13x_mse_not_square_rooted": ("p13_experiment_test", "not its square root"),
    "p13:p13x_query_and_key_swapped": ("p13_experiment_test", "W_Q holds the key projection"),
    "p13:p13x_reduced_output_copied": ("p13_experiment_test", "a copy of output_vanilla"),
    "p13:p13x_outputs_before_loading": (
        "p13_experiment_test",
        "computed after the weights were loaded",
    ),
    "p14:p14_latent_twice": ("p14_kv_cache_test", "cached once"),
}

# What a visible check says, for the student to read before handing in: case id -> (the
# visible test cell, words its failure message must contain).
VISIBLE_MESSAGES = {
    "p3:p3_missing_scale": ("p3_softmax_argument_values_test", "1/sqrt(D_qk) scale is missing"),
    "p5:p5_missing_scale": ("p5_mha_values_test", "1/sqrt(D_qk) scaling of the logits is missing"),
    "p7:p7_missing_scale": (
        "p7_gqa_interleaved_heads_test",
        "1/sqrt(D_qk) scaling of the logits is missing",
    ),
    "p7:p7_contiguous_index": ("p7_gqa_interleaved_heads_test", "contiguous grouping"),
    "p13:p13_missing_sqrt_r_over_d": ("p13_reduced_matrices_test", "equation (1)"),
    "p5:p5_reshape_without_transpose": ("p5_mha_values_test", "heads mixed: with H = 1"),
    "p5:p5_heads_split_the_wrong_way": ("p5_mha_values_test", "heads mixed"),
    "p5:p5_causal_mask": ("p5_mha_values_test", "likely cause: a causal mask"),
    "p5:p5_scale_D_v": ("p5_mha_values_test", "divided by sqrt(D_v) instead of sqrt(D_qk)"),
    "p5:p5_softmax_over_queries": ("p5_mha_values_test", "over the query axis (L_1)"),
    "p5:p5_keys_from_x": (
        "p5_mha_values_test",
        "Part 5: MyMHA(9, 5, 4, 7, 3).forward(x, y) raised RuntimeError",
    ),
    "p7:p7_contiguous_repeat_interleave": ("p7_gqa_interleaved_heads_test", "contiguous grouping"),
    "p7:p7_causal_mask": ("p7_gqa_interleaved_heads_test", "likely cause: a causal mask"),
    "p7:p7_merge_without_moving_head_axis": ("p7_gqa_interleaved_heads_test", "heads mixed"),
}

CASES = []


def correct(name, **cells):
    CASES.append(Case(part(next(iter(cells))), name, cells))


def wrong(name, lose, note="", alone=False, **cells):
    CASES.append(Case(part(next(iter(cells))), name, cells, tuple(lose.split()), note, alone))


def provided_part(gid):
    """The text of answer cell ``gid`` of the source notebook above its solution region."""
    cell = next(c for c in SOURCE.cells if grade_id(c) == gid)
    return cell.source.split("### BEGIN SOLUTION")[0].strip("\n")


def dedent(text):
    return textwrap.dedent(text).strip("\n")


def indent(text, spaces):
    return textwrap.indent(dedent(text), " " * spaces)


# A class whose instances claim to equal anything.
ALWAYS_EQUAL = """
class _Anything:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __len__(self):
        return 2

    def __iter__(self):
        return iter((1, 1))
"""

# ------------------------------------------------------------------------- Part 1


def head_shapes(body):
    return "def head_shapes(D_1, D_2, D_qk, D_v, H):\n" + indent(body, 4)


P1 = "p1_head_shapes_test"
correct("p1_lists", p1_head_shapes=head_shapes("return [D_qk, D_1], [D_qk, D_2], [D_v, D_2]"))
correct(
    "p1_torch_size",
    p1_head_shapes=head_shapes(
        "return torch.Size([D_qk, D_1]), torch.Size([D_qk, D_2]), torch.Size([D_v, D_2])"
    ),
)
correct(
    "p1_from_linear_weights",
    p1_head_shapes=head_shapes(
        """
        return (
            tuple(nn.Linear(D_1, D_qk, bias=False).weight.shape),
            tuple(nn.Linear(D_2, D_qk, bias=False).weight.shape),
            tuple(nn.Linear(D_2, D_v, bias=False).weight.shape),
        )
        """
    ),
)
correct(
    "p1_numpy_ints",
    p1_head_shapes=head_shapes(
        "return (np.int64(D_qk), np.int64(D_1)), (np.int64(D_qk), D_2), (D_v, np.int32(D_2))"
    ),
)
correct(
    "p1_shapes_of_zero_tensors",
    p1_head_shapes=head_shapes(
        "return tuple(torch.zeros(D_qk, D_1).shape), tuple(torch.zeros(D_qk, D_2).shape), "
        "tuple(np.zeros((D_v, D_2)).shape)"
    ),
)
correct(
    "p1_named_lookup",
    p1_head_shapes=head_shapes(
        """
        shapes = {"Q": (D_qk, D_1), "K": (D_qk, D_2), "V": (D_v, D_2)}
        return shapes["Q"], shapes["K"], shapes["V"]
        """
    ),
)
wrong(
    "p1_transposed", P1, p1_head_shapes=head_shapes("return (D_1, D_qk), (D_2, D_qk), (D_2, D_v)")
)
wrong(
    "p1_all_heads_stacked",
    P1,
    p1_head_shapes=head_shapes("return (H * D_qk, D_1), (H * D_qk, D_2), (H * D_v, D_2)"),
)
wrong(
    "p1_key_from_x", P1, p1_head_shapes=head_shapes("return (D_qk, D_1), (D_qk, D_1), (D_v, D_2)")
)
wrong(
    "p1_key_with_D_v", P1, p1_head_shapes=head_shapes("return (D_qk, D_1), (D_v, D_2), (D_v, D_2)")
)
wrong(
    "p1_value_with_D_qk",
    P1,
    p1_head_shapes=head_shapes("return (D_qk, D_1), (D_qk, D_2), (D_qk, D_2)"),
)
wrong(
    "p1_value_from_x", P1, p1_head_shapes=head_shapes("return (D_qk, D_1), (D_qk, D_2), (D_v, D_1)")
)
wrong(
    "p1_hard_coded_visible_example",
    P1,
    p1_head_shapes=head_shapes("return (7, 3), (7, 5), (11, 5)"),
)
wrong(
    "p1_strings",
    P1,
    p1_head_shapes=head_shapes('return "(D_qk, D_1)", "(D_qk, D_2)", "(D_v, D_2)"'),
)
wrong(
    "p1_always_equal_objects",
    P1,
    p1_head_shapes=ALWAYS_EQUAL
    + "\n\n"
    + head_shapes("return _Anything(), _Anything(), _Anything()"),
)
wrong("p1_two_shapes_only", P1, p1_head_shapes=head_shapes("return (D_qk, D_1), (D_qk, D_2)"))

# ------------------------------------------------------------------------- Part 2


def stacked(body):
    return "def stacked_shapes(D_1, D_2, D_qk, D_v, H):\n" + indent(body, 4)


P2 = "p2_stacked_shapes_test"
STACKED = "(H * D_qk, D_1), (H * D_qk, D_2), (H * D_v, D_2), (H * D_qk,), (H * D_qk,), (H * D_v,)"
correct(
    "p2_lists", p2_stacked_shapes=stacked(f"return [{STACKED.replace('(', '[').replace(')', ']')}]")
)
correct(
    "p2_ints_for_vectors",
    p2_stacked_shapes=stacked(
        "return (H * D_qk, D_1), (H * D_qk, D_2), (H * D_v, D_2), H * D_qk, H * D_qk, H * D_v"
    ),
)
correct(
    "p2_shapes_of_stacked_tensors",
    p2_stacked_shapes=stacked(
        """
        W_Q = torch.cat([torch.zeros(D_qk, D_1)] * H)  # (H*D_qk, D_1)
        W_K = torch.cat([torch.zeros(D_qk, D_2)] * H)  # (H*D_qk, D_2)
        W_V = torch.cat([torch.zeros(D_v, D_2)] * H)  # (H*D_v, D_2)
        return W_Q.shape, W_K.shape, W_V.shape, W_Q[:, 0].shape, W_K[:, 0].shape, W_V[:, 0].shape
        """
    ),
)
correct(
    "p2_numpy_vstack",
    p2_stacked_shapes=stacked(
        """
        q = np.concatenate([np.zeros(D_qk)] * H).shape
        v = np.concatenate([np.zeros(D_v)] * H).shape
        return (q[0], D_1), (q[0], D_2), (v[0], D_2), q, q, v
        """
    ),
)
wrong(
    "p2_one_head_only",
    P2,
    p2_stacked_shapes=stacked(
        "return (D_qk, D_1), (D_qk, D_2), (D_v, D_2), (D_qk,), (D_qk,), (D_v,)"
    ),
)
wrong(
    "p2_head_axis_kept",
    P2,
    p2_stacked_shapes=stacked(
        "return (H, D_qk, D_1), (H, D_qk, D_2), (H, D_v, D_2), (H, D_qk), (H, D_qk), (H, D_v)"
    ),
)
wrong(
    "p2_stacked_along_axis_1",
    P2,
    p2_stacked_shapes=stacked(
        "return (D_qk, H * D_1), (D_qk, H * D_2), (D_v, H * D_2), (H * D_qk,), (H * D_qk,), (H * D_v,)"
    ),
)
wrong(
    "p2_column_vectors",
    P2,
    p2_stacked_shapes=stacked(
        "return (H * D_qk, D_1), (H * D_qk, D_2), (H * D_v, D_2), (H * D_qk, 1), (H * D_qk, 1), (H * D_v, 1)"
    ),
)
wrong(
    "p2_key_with_D_v",
    P2,
    p2_stacked_shapes=stacked(
        "return (H * D_qk, D_1), (H * D_v, D_2), (H * D_v, D_2), (H * D_qk,), (H * D_v,), (H * D_v,)"
    ),
)
wrong(
    "p2_query_of_length_D_1",
    P2,
    p2_stacked_shapes=stacked(
        "return (H * D_qk, D_1), (H * D_qk, D_2), (H * D_v, D_2), (D_1,), (H * D_qk,), (H * D_v,)"
    ),
)
wrong(
    "p2_transposed_matrices",
    P2,
    p2_stacked_shapes=stacked(
        "return (D_1, H * D_qk), (D_2, H * D_qk), (D_2, H * D_v), (H * D_qk,), (H * D_qk,), (H * D_v,)"
    ),
)
wrong(
    "p2_always_equal_objects",
    P2,
    p2_stacked_shapes=ALWAYS_EQUAL
    + "\n\n"
    + stacked("return tuple(_Anything() for _ in range(6))"),
)


def projections(q, k, v):
    return dedent(
        f"""
        def query_vector(W_Q, x):
            return {q}


        def key_vector(W_K, y):
            return {k}


        def value_vector(W_V, y):
            return {v}
        """
    )


P2P = "p2_projections_test"
correct(
    "p2p_matmul_function",
    p2_projections=projections(
        "torch.matmul(W_Q, x)", "torch.matmul(W_K, y)", "torch.matmul(W_V, y)"
    ),
)
correct(
    "p2p_einsum",
    p2_projections=projections(
        'torch.einsum("ij,j->i", W_Q, x)',
        'torch.einsum("ij,j->i", W_K, y)',
        'torch.einsum("ij,j->i", W_V, y)',
    ),
)
correct("p2p_row_vector_form", p2_projections=projections("x @ W_Q.T", "y @ W_K.T", "y @ W_V.T"))
correct(
    "p2p_mv_and_linear",
    p2_projections=projections("W_Q.mv(x)", "nn.functional.linear(y, W_K)", "(W_V * y).sum(1)"),
)
correct(
    "p2p_numpy_result",
    p2_projections=projections(
        "W_Q.numpy() @ x.numpy()", "W_K.numpy() @ y.numpy()", "np.dot(W_V.numpy(), y.numpy())"
    ),
)
correct(
    "p2p_float32_matmuls_cast_back",  # the text asks for no precision
    p2_projections=projections(
        "(W_Q.float() @ x.float()).to(x.dtype)",
        "torch.mv(W_K.float(), y.float()).double()",
        "(W_V.float() @ y.float()).to(W_V.dtype)",
    ),
)
correct(
    "p2p_preallocated_out",
    p2_projections=projections(
        "torch.mv(W_Q, x, out=torch.empty(W_Q.shape[0], dtype=x.dtype))",
        "torch.matmul(W_K, y, out=torch.zeros(W_K.shape[0], dtype=y.dtype))",
        "torch.addmv(torch.zeros(W_V.shape[0], dtype=y.dtype), W_V, y)",
    ),
)
correct(
    "p2p_tensordot_and_column",
    p2_projections=projections(
        "torch.tensordot(W_Q, x, dims=1)",
        "(W_K @ y[:, None]).squeeze(1)",
        "(y[None, :] @ W_V.mT)[0]",
    ),
)
wrong("p2p_vector_times_matrix", P2P, p2_projections=projections("x @ W_Q", "y @ W_K", "y @ W_V"))
wrong(
    "p2p_transposed_matrix", P2P, p2_projections=projections("W_Q.T @ x", "W_K.T @ y", "W_V.T @ y")
)
wrong(
    "p2p_scaled_by_sqrt_dim",
    P2P,
    p2_projections=projections("W_Q @ x / len(x) ** 0.5", "W_K @ y / len(y) ** 0.5", "W_V @ y"),
)
wrong("p2p_relu", P2P, p2_projections=projections("torch.relu(W_Q @ x)", "W_K @ y", "W_V @ y"))
wrong(
    "p2p_sum_over_rows",
    P2P,
    p2_projections=projections("(W_Q.T * x[None, :].T).sum(0)", "W_K @ y", "(W_V * y).sum(0)"),
)
wrong(
    "p2p_row_matrix_output",
    P2P,
    p2_projections=projections("(W_Q @ x)[None, :]", "W_K @ y", "W_V @ y"),
)
wrong(
    "p2p_key_uses_value_convention",
    P2P,
    p2_projections=projections("W_Q @ x", "W_K[:, : len(y)] @ y * 0", "W_V @ y"),
)
wrong("p2p_returns_input", P2P, p2_projections=projections("W_Q @ x", "y", "W_V @ y"))

# ------------------------------------------------------------------------- Part 3


def softmax_argument(body):
    return "def softmax_argument(q, K):\n" + indent(body, 4)


P3S, P3V = "p3_softmax_argument_shape_test", "p3_softmax_argument_values_test"
correct(
    "p3_einsum",
    p3_softmax_argument=softmax_argument(
        'return torch.einsum("d,ld->l", q, K) / q.shape[0] ** 0.5'
    ),
)
correct(
    "p3_row_times_matrix",
    p3_softmax_argument=softmax_argument("return (q[None, :] @ K.T).squeeze(0) / np.sqrt(len(q))"),
)
correct(
    "p3_broadcast_sum",
    p3_softmax_argument=softmax_argument("return (K * q).sum(-1) / K.shape[1] ** 0.5"),
)
correct(
    "p3_float32_scale_constant",
    p3_softmax_argument=softmax_argument("return q @ K.T / torch.sqrt(torch.tensor(q.shape[0]))"),
)
correct(
    "p3_rsqrt",
    p3_softmax_argument=softmax_argument(
        "return torch.mv(K, q) * torch.rsqrt(torch.tensor(float(q.numel()), dtype=q.dtype))"
    ),
)
correct(
    "p3_power_minus_half",
    p3_softmax_argument=softmax_argument("return (K @ q) * q.shape[0] ** -0.5"),
)
correct(
    "p3_query_scaled_first",
    p3_softmax_argument=softmax_argument("return K @ (q / np.sqrt(q.shape[0]))"),
)
correct(
    "p3_float32_matmul_cast_back",  # the text asks for no precision
    p3_softmax_argument=softmax_argument(
        "return (K.float() @ q.float() / torch.sqrt(torch.tensor(float(q.numel())))).to(q.dtype)"
    ),
)
correct(
    "p3_preallocated_out",
    p3_softmax_argument=softmax_argument(
        """
        out = torch.empty(K.shape[0], dtype=K.dtype)  # (L_2,)
        torch.mv(K, q, out=out)
        return out.div_(q.shape[0] ** 0.5)
        """
    ),
)
correct(
    "p3_bmm",
    p3_softmax_argument=softmax_argument(
        "return torch.bmm(K[None], q[None, :, None]).flatten() / q.shape[-1] ** 0.5"
    ),
)
wrong("p3_missing_scale", P3V, p3_softmax_argument=softmax_argument("return K @ q"))
wrong("p3_divided_by_D_qk", P3V, p3_softmax_argument=softmax_argument("return K @ q / q.shape[0]"))
wrong(
    "p3_multiplied_by_sqrt",
    P3V,
    p3_softmax_argument=softmax_argument("return K @ q * q.shape[0] ** 0.5"),
)
wrong("p3_sqrt_L_2", P3V, p3_softmax_argument=softmax_argument("return K @ q / K.shape[0] ** 0.5"))
wrong(
    "p3_softmax_applied",
    P3V,
    p3_softmax_argument=softmax_argument("return torch.softmax(K @ q / q.shape[0] ** 0.5, dim=0)"),
)
wrong(
    "p3_negated", P3V, p3_softmax_argument=softmax_argument("return -(K @ q) / q.shape[0] ** 0.5")
)
wrong(
    "p3_row_vector_shape",
    P3S,
    note="a (1, L_2) result has the right values: only the shape test fails",
    p3_softmax_argument=softmax_argument("return q[None, :] @ K.T / q.shape[0] ** 0.5"),
)
wrong(
    "p3_column_vector_shape",
    P3S,
    p3_softmax_argument=softmax_argument("return (K @ q / q.shape[0] ** 0.5).unsqueeze(1)"),
)
wrong(
    "p3_vector_times_K",
    f"{P3S} {P3V}",
    p3_softmax_argument=softmax_argument("return q @ K / q.shape[0] ** 0.5"),
)
wrong(
    "p3_summed_keys",
    f"{P3S} {P3V}",
    p3_softmax_argument=softmax_argument("return K.sum(0) @ q / q.shape[0] ** 0.5"),
)
wrong(
    "p3_tensor_subclass_equal_to_anything",
    f"{P3S} {P3V}",
    p3_softmax_argument=dedent(
        """
        class _Equal(torch.Tensor):
            def __eq__(self, other):
                return True


        def softmax_argument(q, K):
            return (K @ q).as_subclass(_Equal)
        """
    ),
)

# ------------------------------------------------------------------------- Part 4


def output_shapes(body):
    return "def output_shapes(D_1, D_2, D_qk, D_v, H):\n" + indent(body, 4)


P4 = "p4_output_shapes_test"
correct(
    "p4_lists",
    p4_output_shapes=output_shapes("return [D_v], [H * D_v], [D_1, D_v], [D_1, H * D_v]"),
)
correct(
    "p4_ints_for_vectors",
    p4_output_shapes=output_shapes("return D_v, H * D_v, (D_1, D_v), (D_1, H * D_v)"),
)
correct(
    "p4_torch_shapes",
    p4_output_shapes=output_shapes(
        """
        W_O = nn.Linear(H * D_v, D_1, bias=False).weight  # (D_1, H*D_v)
        return W_O[0, :D_v].shape, W_O[0].shape, W_O[:, :D_v].shape, W_O.shape
        """
    ),
)
correct(
    "p4_numpy_shapes",
    p4_output_shapes=output_shapes(
        "return np.zeros(D_v).shape, np.zeros(H * D_v).shape, np.zeros((D_1, D_v)).shape, "
        "np.hstack([np.zeros((D_1, D_v))] * H).shape"
    ),
)
correct(
    "p4_sizes_of_tensors",
    p4_output_shapes=output_shapes(
        "return (\n"
        "    tuple(torch.empty(D_v).shape),\n"
        "    tuple(torch.empty(H, D_v).flatten().shape),\n"
        "    tuple(torch.empty(D_1, D_v).shape),\n"
        "    tuple(torch.empty(D_1, H, D_v).flatten(1).shape),\n"
        ")"
    ),
)
wrong(
    "p4_o_with_D_qk",
    P4,
    p4_output_shapes=output_shapes("return (D_qk,), (H * D_qk,), (D_1, D_qk), (D_1, H * D_qk)"),
)
wrong(
    "p4_o_stacked_2d",
    P4,
    p4_output_shapes=output_shapes("return (D_v,), (H, D_v), (D_1, D_v), (D_1, H * D_v)"),
)
wrong(
    "p4_W_O_transposed",
    P4,
    p4_output_shapes=output_shapes("return (D_v,), (H * D_v,), (D_v, D_1), (H * D_v, D_1)"),
)
wrong(
    "p4_W_O_to_D_2",
    P4,
    p4_output_shapes=output_shapes("return (D_v,), (H * D_v,), (D_2, D_v), (D_2, H * D_v)"),
)
wrong(
    "p4_W_O_one_block",
    P4,
    p4_output_shapes=output_shapes("return (D_v,), (H * D_v,), (D_1, D_v), (D_1, D_v)"),
)
wrong(
    "p4_W_O_h_whole",
    P4,
    p4_output_shapes=output_shapes("return (D_v,), (H * D_v,), (D_1, H * D_v), (D_1, H * D_v)"),
)
wrong(
    "p4_o_h_stacked",
    P4,
    p4_output_shapes=output_shapes("return (H * D_v,), (H * D_v,), (D_1, D_v), (D_1, H * D_v)"),
)
wrong(
    "p4_always_equal_objects",
    P4,
    p4_output_shapes=ALWAYS_EQUAL
    + "\n\n"
    + output_shapes("return _Anything(), _Anything(), _Anything(), _Anything()"),
)

# ------------------------------------------------------------------------- Part 5

MHA_INIT = """
self.D_1, self.D_2, self.D_qk, self.D_v, self.H = D_1, D_2, D_qk, D_v, H
self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)
self.W_K = nn.Linear(D_2, H * D_qk, bias=False)
self.W_V = nn.Linear(D_2, H * D_v, bias=False)
self.W_O = nn.Linear(H * D_v, D_1, bias=False)
"""

MHA_FORWARD = """
B, L_1, _ = x.shape
L_2 = y.shape[1]
q = self.W_Q(x).view(B, L_1, self.H, self.D_qk).transpose(1, 2)  # (B, H, L_1, D_qk)
k = self.W_K(y).view(B, L_2, self.H, self.D_qk).transpose(1, 2)  # (B, H, L_2, D_qk)
v = self.W_V(y).view(B, L_2, self.H, self.D_v).transpose(1, 2)  # (B, H, L_2, D_v)
a = torch.softmax(q @ k.transpose(-2, -1) / self.D_qk ** 0.5, dim=-1)  # (B, H, L_1, L_2)
o = (a @ v).transpose(1, 2).reshape(B, L_1, self.H * self.D_v)  # (B, L_1, H*D_v)
return self.W_O(o)  # (B, L_1, D_1)
"""


def mha(forward=MHA_FORWARD, init=MHA_INIT, before=""):
    return (
        dedent(before)
        + "\n\n\nclass MyMHA(nn.Module):\n"
        + "    def __init__(self, D_1, D_2, D_qk, D_v, H):\n"
        + "        super().__init__()\n"
        + indent(init, 8)
        + "\n\n    def forward(self, x, y):\n"
        + indent(forward, 8)
    ).strip("\n")


def mha_with(*pairs):
    forward = dedent(MHA_FORWARD)
    for old, new in zip(pairs[::2], pairs[1::2], strict=True):
        assert old in forward, old
        forward = forward.replace(old, new)
    return mha(forward)


P5A, P5V, P5L = "p5_mha_attributes_test", "p5_mha_values_test", "p5_mha_no_loops_test"
EXP = "p13_experiment_test"
DEP5 = "the experiment of Part 13 runs this MyMHA"
correct("p5_view_transpose", p5_mha=mha())
correct(
    "p5_einsum",
    p5_mha=mha(
        """
        B, L_1, _ = x.shape
        q = self.W_Q(x).reshape(B, L_1, self.H, self.D_qk)  # (B, L_1, H, D_qk)
        k = self.W_K(y).reshape(B, -1, self.H, self.D_qk)  # (B, L_2, H, D_qk)
        v = self.W_V(y).reshape(B, -1, self.H, self.D_v)  # (B, L_2, H, D_v)
        a = torch.einsum("bihd,bjhd->bhij", q, k).div(self.D_qk ** 0.5).softmax(-1)  # (B, H, L_1, L_2)
        o = torch.einsum("bhij,bjhd->bihd", a, v)  # (B, L_1, H, D_v)
        return self.W_O(o.reshape(B, L_1, -1))  # (B, L_1, D_1)
        """
    ),
)
correct(
    "p5_per_head_weight_views",
    p5_mha=mha(
        """
        Wq = self.W_Q.weight.view(self.H, self.D_qk, self.D_1)  # (H, D_qk, D_1)
        Wk = self.W_K.weight.view(self.H, self.D_qk, self.D_2)  # (H, D_qk, D_2)
        Wv = self.W_V.weight.view(self.H, self.D_v, self.D_2)  # (H, D_v, D_2)
        Wo = self.W_O.weight.view(self.D_1, self.H, self.D_v)  # (D_1, H, D_v)
        q = torch.einsum("bie,hde->bhid", x, Wq)  # (B, H, L_1, D_qk)
        k = torch.einsum("bje,hde->bhjd", y, Wk)  # (B, H, L_2, D_qk)
        v = torch.einsum("bje,hde->bhjd", y, Wv)  # (B, H, L_2, D_v)
        a = torch.softmax(torch.einsum("bhid,bhjd->bhij", q, k) / self.D_qk ** 0.5, -1)
        return torch.einsum("bhij,bhjd,ehd->bie", a, v, Wo)  # (B, L_1, D_1)
        """
    ),
)
correct(
    "p5_unflatten_flatten_and_float32_scale",
    p5_mha=mha(
        """
        q = self.W_Q(x).unflatten(-1, (self.H, self.D_qk)).permute(0, 2, 1, 3)
        k = self.W_K(y).unflatten(-1, (self.H, self.D_qk)).permute(0, 2, 3, 1)  # (B, H, D_qk, L_2)
        v = self.W_V(y).unflatten(-1, (self.H, self.D_v)).permute(0, 2, 1, 3)
        scale = torch.rsqrt(torch.tensor(float(self.D_qk)))  # float32 constant
        a = nn.functional.softmax(torch.matmul(q, k) * scale, dim=3)
        return self.W_O(torch.matmul(a, v).permute(0, 2, 1, 3).flatten(2))
        """
    ),
)
correct(
    "p5_loop_free_helper",
    p5_mha=mha(
        """
        q = split_heads(self.W_Q(x), self.H)
        k = split_heads(self.W_K(y), self.H)
        v = split_heads(self.W_V(y), self.H)
        a = (q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5).softmax(-1)
        o = a @ v
        return self.W_O(o.transpose(1, 2).flatten(2))
        """,
        before="""
        def split_heads(t, H):
            B, L, F = t.shape
            return t.view(B, L, H, F // H).transpose(1, 2)  # (B, H, L, F/H)
        """,
    ),
)
correct(
    "p5_float32_softmax",
    p5_mha=mha_with(
        "a = torch.softmax(q @ k.transpose(-2, -1) / self.D_qk ** 0.5, dim=-1)",
        "a = torch.softmax((q @ k.transpose(-2, -1)).float() / self.D_qk ** 0.5, dim=-1).to(v.dtype)",
    ),
)
correct(
    "p5_bmm_query_scaled_first",
    p5_mha=mha(
        """
        B, L_1, _ = x.shape
        L_2 = y.shape[1]
        # (B, L, H*n) -> (B*H, L, n): the heads join the batch for torch.bmm
        q = (self.W_Q(x) / self.D_qk ** 0.5).view(B, L_1, self.H, self.D_qk).permute(0, 2, 1, 3).reshape(B * self.H, L_1, self.D_qk)
        k = self.W_K(y).view(B, L_2, self.H, self.D_qk).permute(0, 2, 1, 3).reshape(B * self.H, L_2, self.D_qk)
        v = self.W_V(y).view(B, L_2, self.H, self.D_v).permute(0, 2, 1, 3).reshape(B * self.H, L_2, self.D_v)
        a = torch.bmm(q, k.transpose(1, 2)).softmax(dim=-1)  # (B*H, L_1, L_2)
        o = torch.bmm(a, v).view(B, self.H, L_1, self.D_v).permute(0, 2, 1, 3).contiguous()  # (B, L_1, H, D_v)
        return self.W_O(o.view(B, L_1, self.H * self.D_v))  # (B, L_1, D_1)
        """
    ),
)
correct(
    "p5_scale_folded_into_query_weight",  # a float32 constant, the scale in W^Q
    p5_mha=mha_with(
        "q = self.W_Q(x)",
        "q = nn.functional.linear(x, self.W_Q.weight * torch.rsqrt(torch.tensor(self.D_qk)))",
        " / self.D_qk ** 0.5",
        "",
    ),
)
correct(
    "p5_float32_attention_cast_back",  # scores, softmax and weighted sum in float32
    p5_mha=mha_with(
        "a = torch.softmax(q @ k.transpose(-2, -1) / self.D_qk ** 0.5, dim=-1)",
        "a = torch.softmax(q.float() @ k.float().transpose(-2, -1) / torch.sqrt(torch.tensor(self.D_qk)), dim=-1, dtype=torch.float32)",
        "o = (a @ v)",
        "o = (a @ v.float()).to(x.dtype)",
    ),
)
wrong(
    "p5_float32_softmax_not_cast_back",
    f"{P5A} {P5V}",
    "works in float32 only (the text asks for float64 too): costs Part 5, not the float32 "
    "experiment of Part 13",
    p5_mha=mha_with(
        "a = torch.softmax(q @ k.transpose(-2, -1) / self.D_qk ** 0.5, dim=-1)",
        "a = torch.softmax(q @ k.transpose(-2, -1) / self.D_qk ** 0.5, dim=-1, dtype=torch.float32)",
    ),
)
wrong("p5_missing_scale", f"{P5V} {EXP}", DEP5, p5_mha=mha_with(" / self.D_qk ** 0.5", ""))
wrong(
    "p5_scale_D_v",
    P5V,
    "the experiment has D_qk = D_v, where this mistake computes the right thing",
    p5_mha=mha_with("self.D_qk ** 0.5", "self.D_v ** 0.5"),
)
wrong(
    "p5_scale_D_qk_not_sqrt", f"{P5V} {EXP}", DEP5, p5_mha=mha_with("self.D_qk ** 0.5", "self.D_qk")
)
wrong("p5_softmax_over_queries", f"{P5V} {EXP}", DEP5, p5_mha=mha_with("dim=-1", "dim=-2"))
wrong(
    "p5_merge_without_moving_head_axis",
    f"{P5V} {EXP}",
    DEP5,
    p5_mha=mha_with("(a @ v).transpose(1, 2).reshape", "(a @ v).reshape"),
)
wrong(
    "p5_heads_split_the_wrong_way",
    f"{P5V} {EXP}",
    DEP5,
    p5_mha=mha_with(
        "view(B, L_1, self.H, self.D_qk).transpose(1, 2)",
        "view(B, L_1, self.D_qk, self.H).permute(0, 3, 1, 2)",
        "view(B, L_2, self.H, self.D_qk).transpose(1, 2)",
        "view(B, L_2, self.D_qk, self.H).permute(0, 3, 1, 2)",
        "view(B, L_2, self.H, self.D_v).transpose(1, 2)",
        "view(B, L_2, self.D_v, self.H).permute(0, 3, 1, 2)",
        "(a @ v).transpose(1, 2).reshape",
        "(a @ v).permute(0, 2, 3, 1).reshape",
    ),
)
wrong(
    "p5_reshape_without_transpose",
    f"{P5V} {EXP}",
    DEP5,
    p5_mha=mha_with(
        "view(B, L_1, self.H, self.D_qk).transpose(1, 2)",
        "reshape(B, self.H, L_1, self.D_qk)",
        "view(B, L_2, self.H, self.D_qk).transpose(1, 2)",
        "reshape(B, self.H, L_2, self.D_qk)",
        "view(B, L_2, self.H, self.D_v).transpose(1, 2)",
        "reshape(B, self.H, L_2, self.D_v)",
        "(a @ v).transpose(1, 2).reshape",
        "(a @ v).reshape",
    ),
)
wrong(
    "p5_bias_present",
    f"{P5A} {EXP}",
    "the values test zeroes a bias, so only the attribute test fails; the experiment keeps the "
    "random biases, so its outputs are not the MLA's",
    p5_mha=mha(init=MHA_INIT.replace("bias=False", "bias=True")),
)
wrong(
    "p5_transposed_out_projection",
    f"{P5A} {P5V} {EXP}",
    DEP5,
    p5_mha=mha(
        init=MHA_INIT.replace(
            "nn.Linear(H * D_v, D_1, bias=False)", "nn.Linear(D_1, H * D_v, bias=False)"
        ),
        forward=dedent(MHA_FORWARD).replace("self.W_O(o)", "o @ self.W_O.weight"),
    ),
)
wrong(
    "p5_loop_over_heads",
    P5L,
    p5_mha=mha(
        """
        B, L_1, _ = x.shape
        L_2 = y.shape[1]
        q = self.W_Q(x).view(B, L_1, self.H, self.D_qk)
        k = self.W_K(y).view(B, L_2, self.H, self.D_qk)
        v = self.W_V(y).view(B, L_2, self.H, self.D_v)
        outs = []
        for h in range(self.H):
            a = torch.softmax(q[:, :, h] @ k[:, :, h].transpose(1, 2) / self.D_qk ** 0.5, -1)
            outs.append(a @ v[:, :, h])
        return self.W_O(torch.cat(outs, dim=-1))
        """
    ),
)
wrong(
    "p5_comprehension_over_heads",
    P5L,
    p5_mha=mha(
        """
        B, L_1, _ = x.shape
        q = self.W_Q(x).view(B, L_1, self.H, self.D_qk)
        k = self.W_K(y).view(B, -1, self.H, self.D_qk)
        v = self.W_V(y).view(B, -1, self.H, self.D_v)
        heads = [
            torch.softmax(q[:, :, h] @ k[:, :, h].transpose(1, 2) / self.D_qk ** 0.5, -1) @ v[:, :, h]
            for h in range(self.H)
        ]
        return self.W_O(torch.cat(heads, dim=-1))
        """
    ),
)
wrong(
    "p5_helper_with_loop",
    P5L,
    p5_mha=mha(
        dedent(MHA_FORWARD).replace("torch.softmax(", "my_softmax("),
        before="""
        def my_softmax(z, dim):
            e = torch.exp(z - z.amax(dim, keepdim=True))
            total = torch.zeros_like(e.select(dim, 0))
            for j in range(e.shape[dim]):
                total = total + e.select(dim, j)
            return e / total.unsqueeze(dim)
        """,
    ),
)
wrong(
    "p5_fused_attention",
    P5V,
    "fused attention computes the right values, but they are not built by hand",
    p5_mha=mha_with(
        "a = torch.softmax(q @ k.transpose(-2, -1) / self.D_qk ** 0.5, dim=-1)  # (B, H, L_1, L_2)\n"
        "o = (a @ v)",
        "o = nn.functional.scaled_dot_product_attention(q, k, v)",
    ),
)
wrong(
    "p5_keys_from_x",
    f"{P5A} {P5V} {P5L} {EXP}",
    "the forward fails whenever L_1 != L_2, and the no-loop points need a forward that runs; "
    + DEP5,
    p5_mha=mha(
        init=MHA_INIT.replace("nn.Linear(D_2, H * D_qk", "nn.Linear(D_1, H * D_qk"),
        forward=dedent(MHA_FORWARD).replace("self.W_K(y).view(B, L_2", "self.W_K(x).view(B, L_1"),
    ),
)

# A helper of the student's own, named as public courses name it: no rule forbids the name.
OWN_SDPA = """
def scaled_dot_product_attention(q, k, v):
    a = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)  # (B, H, L_1, L_2)
    return a @ v  # (B, H, L_1, D_v)
"""
correct(
    "p5_own_helper_named_scaled_dot_product_attention",
    p5_mha=mha(
        dedent(MHA_FORWARD).replace(
            "a = torch.softmax(q @ k.transpose(-2, -1) / self.D_qk ** 0.5, dim=-1)  # (B, H, L_1, L_2)\n"
            "o = (a @ v)",
            "o = scaled_dot_product_attention(q, k, v)",
        ),
        before=OWN_SDPA,
    ),
)
CAUSAL = (
    "a = torch.softmax(q @ k.transpose(-2, -1) / self.D_qk ** 0.5, dim=-1)",
    "s = q @ k.transpose(-2, -1) / self.D_qk ** 0.5\n"
    "s = s.masked_fill(torch.ones(L_1, L_2, dtype=torch.bool).triu(1), float('-inf'))\n"
    "a = torch.softmax(s, dim=-1)",
)
wrong(
    "p5_causal_mask",
    f"{P5V} {EXP}",
    "a decoder's causal mask copied in: the task has no masking; " + DEP5,
    p5_mha=mha_with(*CAUSAL),
)

# ------------------------------------------------------------------------- Part 6


def tilde_rank(body):
    return "def tilde_rank(rank_W, H, G):\n" + indent(body, 4)


P6 = "p6_tilde_rank_test"
correct("p6_int", p6_tilde_rank=tilde_rank("return int(rank_W)"))
correct("p6_min", p6_tilde_rank=tilde_rank("return min(rank_W, rank_W * H // G)"))
correct("p6_numpy_int", p6_tilde_rank=tilde_rank("return np.int64(rank_W)"))
correct("p6_whole_float", p6_tilde_rank=tilde_rank("return rank_W * (H / G) / (H / G)"))
correct(
    "p6_computed_rank",
    p6_tilde_rank=tilde_rank(
        """
        W = torch.eye(max(rank_W, 1))[:rank_W]  # a (rank_W x rank_W) matrix of rank rank_W
        return int(torch.linalg.matrix_rank(torch.cat([W] * (H // G))))
        """
    ),
)
correct("p6_rounded", p6_tilde_rank=tilde_rank("return round(float(rank_W))"))
wrong("p6_times_copies", P6, p6_tilde_rank=tilde_rank("return rank_W * H // G"))
wrong("p6_times_G", P6, p6_tilde_rank=tilde_rank("return rank_W * G"))
wrong("p6_times_H", P6, p6_tilde_rank=tilde_rank("return rank_W * H"))
wrong("p6_copies", P6, p6_tilde_rank=tilde_rank("return H // G"))
wrong("p6_plus_copies", P6, p6_tilde_rank=tilde_rank("return rank_W + H // G - 1"))
wrong("p6_half_float", P6, p6_tilde_rank=tilde_rank("return rank_W + 0.5"))
wrong("p6_string", P6, p6_tilde_rank=tilde_rank('return "rank_W"'))
wrong("p6_always_equal", P6, p6_tilde_rank=ALWAYS_EQUAL + "\n\n" + tilde_rank("return _Anything()"))

# ------------------------------------------------------------------------- Part 7

GQA_INIT = """
self.D_1, self.D_2, self.D_qk, self.D_v, self.H, self.G = D_1, D_2, D_qk, D_v, H, G
self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)
self.W_K = nn.Linear(D_2, G * D_qk, bias=False)
self.W_V = nn.Linear(D_2, G * D_v, bias=False)
self.W_O = nn.Linear(H * D_v, D_1, bias=False)
"""

GQA_FORWARD = """
B, L_1, _ = x.shape
L_2 = y.shape[1]
q = self.W_Q(x).view(B, L_1, self.H, self.D_qk).transpose(1, 2)  # (B, H, L_1, D_qk)
k = self.W_K(y).view(B, L_2, self.G, self.D_qk).transpose(1, 2)  # (B, G, L_2, D_qk)
v = self.W_V(y).view(B, L_2, self.G, self.D_v).transpose(1, 2)  # (B, G, L_2, D_v)
k = k.repeat(1, self.H // self.G, 1, 1)  # (B, H, L_2, D_qk): head h gets g = h mod G
v = v.repeat(1, self.H // self.G, 1, 1)  # (B, H, L_2, D_v)
a = torch.softmax(q @ k.transpose(-2, -1) / self.D_qk ** 0.5, dim=-1)  # (B, H, L_1, L_2)
o = (a @ v).transpose(1, 2).reshape(B, L_1, self.H * self.D_v)  # (B, L_1, H*D_v)
return self.W_O(o)  # (B, L_1, D_1)
"""


def gqa(forward=GQA_FORWARD, init=GQA_INIT, before=""):
    return (
        dedent(before)
        + "\n\n\nclass MyGQA(nn.Module):\n"
        + "    def __init__(self, D_1, D_2, D_qk, D_v, H, G):\n"
        + "        super().__init__()\n"
        + indent(init, 8)
        + "\n\n    def forward(self, x, y):\n"
        + indent(forward, 8)
    ).strip("\n")


def gqa_with(*pairs):
    forward = dedent(GQA_FORWARD)
    for old, new in zip(pairs[::2], pairs[1::2], strict=True):
        assert old in forward, old
        forward = forward.replace(old, new)
    return gqa(forward)


P7A, P7V, P7L = "p7_gqa_attributes_test", "p7_gqa_interleaved_heads_test", "p7_gqa_no_loops_test"
P8 = "p8_mha_as_gqa_test"
DEP7 = "Part 8's mha_as_gqa is what MyGQA(..., H, H) gives: it keeps its point"
correct("p7_repeat_tiles_heads", p7_gqa=gqa())
correct(
    "p7_index_h_mod_G",
    p7_gqa=gqa_with(
        "k = k.repeat(1, self.H // self.G, 1, 1)",
        "k = k[:, torch.arange(self.H) % self.G]",
        "v = v.repeat(1, self.H // self.G, 1, 1)",
        "v = v[:, torch.arange(self.H, device=v.device) % self.G]",
    ),
)
correct(
    "p7_broadcast_groups",
    p7_gqa=gqa(
        """
        B, L_1, _ = x.shape
        L_2 = y.shape[1]
        C = self.H // self.G
        q = self.W_Q(x).reshape(B, L_1, C, self.G, self.D_qk).permute(0, 2, 3, 1, 4)  # (B, C, G, L_1, D_qk)
        k = self.W_K(y).reshape(B, L_2, 1, self.G, self.D_qk).permute(0, 2, 3, 1, 4)  # (B, 1, G, L_2, D_qk)
        v = self.W_V(y).reshape(B, L_2, 1, self.G, self.D_v).permute(0, 2, 3, 1, 4)  # (B, 1, G, L_2, D_v)
        a = (q @ k.transpose(-2, -1) / self.D_qk ** 0.5).softmax(-1)  # (B, C, G, L_1, L_2)
        o = (a @ v).permute(0, 3, 1, 2, 4).reshape(B, L_1, -1)  # (B, L_1, H*D_v)
        return self.W_O(o)
        """
    ),
)
correct(
    "p7_expand_reshape",
    p7_gqa=gqa_with(
        "k = k.repeat(1, self.H // self.G, 1, 1)",
        "k = k.unsqueeze(1).expand(B, self.H // self.G, self.G, L_2, self.D_qk).reshape(B, self.H, L_2, self.D_qk)",
        "v = v.repeat(1, self.H // self.G, 1, 1)",
        "v = v.unsqueeze(1).expand(B, self.H // self.G, self.G, L_2, self.D_v).reshape(B, self.H, L_2, self.D_v)",
    ),
)
correct(
    "p7_float32_softmax_and_scale",  # the text demands no precision: float32 is correct
    p7_gqa=gqa_with(
        "a = torch.softmax(q @ k.transpose(-2, -1) / self.D_qk ** 0.5, dim=-1)",
        "a = torch.softmax(q @ k.transpose(-2, -1) / torch.sqrt(torch.tensor(self.D_qk)), dim=-1, dtype=torch.float32).type_as(v)",
    ),
)
correct(
    "p7_einsum_in_float32",
    p7_gqa=gqa_with(
        "a = torch.softmax(q @ k.transpose(-2, -1) / self.D_qk ** 0.5, dim=-1)",
        'a = torch.softmax(torch.einsum("bhid,bhjd->bhij", q.float(), k.float()) / self.D_qk ** 0.5, dim=-1).to(v.dtype)',
    ),
)
correct(
    "p7_tiled_weights_at_forward",
    p7_gqa=gqa(
        """
        C = self.H // self.G
        W_K = self.W_K.weight.repeat(C, 1)  # (H*D_qk, D_2), built on the fly, not stored
        W_V = self.W_V.weight.repeat(C, 1)  # (H*D_v, D_2)
        B, L_1, _ = x.shape
        q = self.W_Q(x).view(B, L_1, self.H, self.D_qk).transpose(1, 2)
        k = (y @ W_K.T).view(B, -1, self.H, self.D_qk).transpose(1, 2)
        v = (y @ W_V.T).view(B, -1, self.H, self.D_v).transpose(1, 2)
        a = torch.softmax(q @ k.transpose(-2, -1) / self.D_qk ** 0.5, dim=-1)
        return self.W_O((a @ v).transpose(1, 2).flatten(2))
        """
    ),
)
correct(
    "p7_index_select_bmm_query_scaled_first",
    p7_gqa=gqa_with(
        "k = k.repeat(1, self.H // self.G, 1, 1)",
        "k = k.index_select(1, torch.arange(self.H, device=k.device) % self.G)",
        "v = v.repeat(1, self.H // self.G, 1, 1)",
        "v = v.index_select(1, torch.arange(self.H, device=v.device) % self.G)",
        "a = torch.softmax(q @ k.transpose(-2, -1) / self.D_qk ** 0.5, dim=-1)",
        "a = torch.softmax(torch.matmul(q * self.D_qk ** -0.5, k.permute(0, 1, 3, 2)), dim=-1)",
    ),
)
correct(
    "p7_cat_copies_float32_scale",
    p7_gqa=gqa_with(
        "k = k.repeat(1, self.H // self.G, 1, 1)",
        "k = torch.cat([k] * (self.H // self.G), dim=1)",
        "v = v.repeat(1, self.H // self.G, 1, 1)",
        "v = torch.cat([v] * (self.H // self.G), dim=1)",
        "/ self.D_qk ** 0.5",
        "/ torch.sqrt(torch.tensor(float(self.D_qk)))",
    ),
)
wrong(
    "p7_contiguous_repeat_interleave",
    P7V,
    "with G = H (Part 8) both groupings coincide",
    p7_gqa=gqa_with(
        "k.repeat(1, self.H // self.G, 1, 1)",
        "k.repeat_interleave(self.H // self.G, dim=1)",
        "v.repeat(1, self.H // self.G, 1, 1)",
        "v.repeat_interleave(self.H // self.G, dim=1)",
    ),
)
wrong(
    "p7_contiguous_index",
    P7V,
    "with G = H (Part 8) both groupings coincide",
    p7_gqa=gqa_with(
        "k = k.repeat(1, self.H // self.G, 1, 1)",
        "k = k[:, torch.arange(self.H) // (self.H // self.G)]",
        "v = v.repeat(1, self.H // self.G, 1, 1)",
        "v = v[:, torch.arange(self.H) // (self.H // self.G)]",
    ),
)
wrong(
    "p7_weight_copies",
    f"{P7A} {P7V}",
    "the test cannot load G-head weights into H-head layers; with G = H (Part 8) the shapes agree",
    p7_gqa=gqa(
        init=GQA_INIT.replace("G * D_qk", "H * D_qk").replace("G * D_v", "H * D_v"),
        forward=dedent(GQA_FORWARD)
        .replace("view(B, L_2, self.G", "view(B, L_2, self.H")
        .replace("k = k.repeat(1, self.H // self.G, 1, 1)", "")
        .replace("v = v.repeat(1, self.H // self.G, 1, 1)", ""),
    ),
)
wrong("p7_missing_scale", P7V, DEP7, p7_gqa=gqa_with(" / self.D_qk ** 0.5", ""))
wrong("p7_scale_D_v", P7V, DEP7, p7_gqa=gqa_with("self.D_qk ** 0.5", "self.D_v ** 0.5"))
wrong("p7_softmax_over_queries", P7V, DEP7, p7_gqa=gqa_with("dim=-1", "dim=-2"))
wrong(
    "p7_merge_without_moving_head_axis",
    P7V,
    DEP7,
    p7_gqa=gqa_with("(a @ v).transpose(1, 2).reshape", "(a @ v).reshape"),
)
wrong(
    "p7_bias_present",
    P7A,
    "the values tests zero a bias",
    p7_gqa=gqa(init=GQA_INIT.replace("bias=False", "bias=True")),
)
wrong(
    "p7_loop_over_groups",
    P7L,
    p7_gqa=gqa_with(
        "k = k.repeat(1, self.H // self.G, 1, 1)",
        "ks, vs = [], []\nfor _ in range(self.H // self.G):\n    ks.append(k)\n    vs.append(v)\n"
        "k = torch.cat(ks, dim=1)",
        "v = v.repeat(1, self.H // self.G, 1, 1)",
        "v = torch.cat(vs, dim=1)",
    ),
)
wrong(
    "p7_comprehension_over_heads",
    P7L,
    p7_gqa=gqa_with(
        "k = k.repeat(1, self.H // self.G, 1, 1)",
        "k = torch.stack([k[:, h % self.G] for h in range(self.H)], dim=1)",
        "v = v.repeat(1, self.H // self.G, 1, 1)",
        "v = torch.stack([v[:, h % self.G] for h in range(self.H)], dim=1)",
    ),
)
wrong(
    "p7_fused_attention",
    P7V,
    "fused attention computes the right values, but they are not built by hand",
    p7_gqa=gqa_with(
        "a = torch.softmax(q @ k.transpose(-2, -1) / self.D_qk ** 0.5, dim=-1)  # (B, H, L_1, L_2)\n"
        "o = (a @ v)",
        "o = nn.functional.scaled_dot_product_attention(q, k, v)",
    ),
)
wrong(
    "p7_missing_G_attribute",
    P7A,
    DEP7,
    p7_gqa=gqa(
        init=GQA_INIT.replace(
            "self.H, self.G = D_1, D_2, D_qk, D_v, H, G",
            "self.H, self.groups = D_1, D_2, D_qk, D_v, H, G",
        ),
        forward=dedent(GQA_FORWARD).replace("self.G", "self.groups"),
    ),
)

correct(
    "p7_own_helper_named_scaled_dot_product_attention",
    p7_gqa=gqa(
        dedent(GQA_FORWARD).replace(
            "a = torch.softmax(q @ k.transpose(-2, -1) / self.D_qk ** 0.5, dim=-1)  # (B, H, L_1, L_2)\n"
            "o = (a @ v)",
            "o = scaled_dot_product_attention(q, k, v)",
        ),
        before=OWN_SDPA,
    ),
)
wrong("p7_causal_mask", P7V, "a decoder's causal mask copied in; " + DEP7, p7_gqa=gqa_with(*CAUSAL))

# ------------------------------------------------------------------------- Part 8


def mha_as_gqa(body):
    return "def mha_as_gqa(D_1, D_2, D_qk, D_v, H):\n" + indent(body, 4)


correct(
    "p8_keywords",
    p8_mha_as_gqa=mha_as_gqa("return MyGQA(D_1=D_1, D_2=D_2, D_qk=D_qk, D_v=D_v, H=H, G=H)"),
)
correct(
    "p8_named_G",
    p8_mha_as_gqa=mha_as_gqa(
        "G = H  # one key/value head per query head\nreturn MyGQA(D_1, D_2, D_qk, D_v, H, G)"
    ),
)
correct(
    "p8_unpacked",
    p8_mha_as_gqa=mha_as_gqa("args = (D_1, D_2, D_qk, D_v, H, H)\nreturn MyGQA(*args)"),
)
correct(
    "p8_double_model", p8_mha_as_gqa=mha_as_gqa("return MyGQA(D_1, D_2, D_qk, D_v, H, H).double()")
)
correct(
    "p8_keyword_dict",
    p8_mha_as_gqa=mha_as_gqa(
        "return MyGQA(**dict(D_1=D_1, D_2=D_2, D_qk=D_qk, D_v=D_v, H=H, G=H))"
    ),
)
wrong("p8_multi_query", P8, p8_mha_as_gqa=mha_as_gqa("return MyGQA(D_1, D_2, D_qk, D_v, H, 1)"))
wrong("p8_returns_mha", P8, p8_mha_as_gqa=mha_as_gqa("return MyMHA(D_1, D_2, D_qk, D_v, H)"))
wrong("p8_returns_class", P8, p8_mha_as_gqa=mha_as_gqa("return MyGQA"))
wrong("p8_returns_none", P8, p8_mha_as_gqa=mha_as_gqa("pass"))
wrong("p8_swapped_dims", P8, p8_mha_as_gqa=mha_as_gqa("return MyGQA(D_2, D_1, D_qk, D_v, H, H)"))
wrong(
    "p8_swapped_head_dims", P8, p8_mha_as_gqa=mha_as_gqa("return MyGQA(D_1, D_2, D_v, D_qk, H, H)")
)
wrong("p8_one_head", P8, p8_mha_as_gqa=mha_as_gqa("return MyGQA(D_1, D_2, D_qk, D_v, 1, 1)"))
wrong(
    "p8_subclass_with_its_own_forward",
    P8,
    "a MyGQA by type, G = H, but not what MyGQA(..., H, H) computes",
    p8_mha_as_gqa=dedent(
        """
        class _Zeros(MyGQA):
            def forward(self, x, y):
                return 0 * x


        def mha_as_gqa(D_1, D_2, D_qk, D_v, H):
            return _Zeros(D_1, D_2, D_qk, D_v, H, H)
        """
    ),
)
wrong(
    "p8_G_attribute_faked",
    P8,
    p8_mha_as_gqa=mha_as_gqa("m = MyGQA(D_1, D_2, D_qk, D_v, H, 1)\nm.G = H\nreturn m"),
)

# ------------------------------------------------------------------------ Part 10


def gqa_2_mla(body, before=""):
    return (dedent(before) + "\n\n\ndef GQA_2_MLA(W_M_GQA):\n" + indent(body, 4)).strip("\n")


PRINTS = """
print("W_UM_MLA:", W_UM_MLA.shape, "W_DKV_MLA:", W_DKV_MLA.shape)
print("MSE:", np.mean((W_M_GQA_tilde - W_UM_MLA @ W_DKV_MLA) ** 2))
return W_DKV_MLA, W_UM_MLA
"""
TILE = "r, D = W_M_GQA.shape\nW_M_GQA_tilde = np.tile(W_M_GQA, (D // r, 1))\n"
SVD = (
    TILE
    + "U, S, Vt = np.linalg.svd(W_M_GQA_tilde)\nW_UM_MLA = U[:, :r]\nW_DKV_MLA = S[:r, None] * Vt[:r]\n"
)
P10S, P10R, P10L, P10P = (
    "p10_gqa_2_mla_shapes_test",
    "p10_gqa_2_mla_reconstruction_test",
    "p10_gqa_2_mla_rules_test",
    "p10_gqa_2_mla_prints_test",
)
correct("p10_svd_sigma_in_down_projection", p10_gqa_2_mla=gqa_2_mla(SVD + PRINTS))
correct(
    "p10_identity_factorisation",
    p10_gqa_2_mla=gqa_2_mla(
        TILE + "W_DKV_MLA = W_M_GQA.copy()\nW_UM_MLA = np.tile(np.eye(r), (D // r, 1))\n" + PRINTS
    ),
)
correct(
    "p10_reduced_qr",
    p10_gqa_2_mla=gqa_2_mla(
        TILE
        + "Qm, R = np.linalg.qr(W_M_GQA.T)  # (D, r), (r, r)\nW_DKV_MLA = Qm.T\nW_UM_MLA = np.tile(R.T, (D // r, 1))\n"
        + PRINTS
    ),
)
correct(
    "p10_eigh_of_gram",
    p10_gqa_2_mla=gqa_2_mla(
        TILE
        + "_, V = np.linalg.eigh(W_M_GQA_tilde.T @ W_M_GQA_tilde)\nW_DKV_MLA = V[:, -r:].T\n"
        + "W_UM_MLA = W_M_GQA_tilde @ V[:, -r:]\n"
        + PRINTS
    ),
)
correct(
    "p10_pinv",
    p10_gqa_2_mla=gqa_2_mla(
        TILE + "W_DKV_MLA = W_M_GQA\nW_UM_MLA = W_M_GQA_tilde @ np.linalg.pinv(W_M_GQA)\n" + PRINTS
    ),
)
correct(
    "p10_float32_outputs",
    p10_gqa_2_mla=gqa_2_mla(
        SVD
        + "W_UM_MLA = W_UM_MLA.astype(np.float32)\nW_DKV_MLA = W_DKV_MLA.astype(np.float32)\n"
        + PRINTS
    ),
)
correct(
    "p10_svd_split_sqrt_sigma",
    p10_gqa_2_mla=gqa_2_mla(
        TILE
        + "U, S, Vt = np.linalg.svd(W_M_GQA_tilde, full_matrices=False)\n"
        + "W_UM_MLA = U[:, :r] * np.sqrt(S[:r])\nW_DKV_MLA = np.sqrt(S[:r])[:, None] * Vt[:r]\n"
        + PRINTS
    ),
)
correct(
    "p10_svd_of_one_copy_tiled",
    p10_gqa_2_mla=gqa_2_mla(
        TILE
        + "U, S, Vt = np.linalg.svd(W_M_GQA, full_matrices=False)  # (r, r), (r,), (r, D)\n"
        + "W_DKV_MLA = S[:, None] * Vt\nW_UM_MLA = np.tile(U, (D // r, 1))\n"
        + PRINTS
    ),
)
correct(
    "p10_lstsq",
    p10_gqa_2_mla=gqa_2_mla(
        TILE
        + "W_DKV_MLA = W_M_GQA\n"
        + "W_UM_MLA = np.linalg.lstsq(W_DKV_MLA.T, W_M_GQA_tilde.T, rcond=None)[0].T\n"
        + PRINTS
    ),
)
correct(
    "p10_float32_svd",  # the text asks for no precision
    p10_gqa_2_mla=gqa_2_mla(
        TILE.replace(
            "np.tile(W_M_GQA, (D // r, 1))", "np.tile(W_M_GQA, (D // r, 1)).astype(np.float32)"
        )
        + "U, S, Vt = np.linalg.svd(W_M_GQA_tilde)\nW_UM_MLA = U[:, :r] * S[:r]\nW_DKV_MLA = Vt[:r]\n"
        + PRINTS
    ),
)
wrong(
    "p10_np_repeat",
    P10R,
    p10_gqa_2_mla=gqa_2_mla(
        SVD.replace("np.tile(W_M_GQA, (D // r, 1))", "np.repeat(W_M_GQA, D // r, axis=0)") + PRINTS
    ),
)
wrong(
    "p10_sigma_dropped",
    P10R,
    p10_gqa_2_mla=gqa_2_mla(SVD.replace("S[:r, None] * Vt[:r]", "Vt[:r]") + PRINTS),
)
wrong(
    "p10_truncated_to_r_minus_1",
    f"{P10S} {P10R}",
    p10_gqa_2_mla=gqa_2_mla(
        SVD.replace("U[:, :r]", "U[:, : r - 1]").replace(
            "S[:r, None] * Vt[:r]", "S[: r - 1, None] * Vt[: r - 1]"
        )
        + PRINTS
    ),
)
wrong(
    "p10_returned_in_wrong_order",
    f"{P10S} {P10R}",
    "the reconstruction test (visible and hidden) needs the order of the task",
    p10_gqa_2_mla=gqa_2_mla(
        SVD + PRINTS.replace("return W_DKV_MLA, W_UM_MLA", "return W_UM_MLA, W_DKV_MLA")
    ),
)
wrong(
    "p10_torch_svd",
    P10L,
    p10_gqa_2_mla=gqa_2_mla(
        TILE
        + "U, S, Vt = torch.linalg.svd(torch.from_numpy(W_M_GQA_tilde))\n"
        + "W_UM_MLA = U[:, :r].numpy()\nW_DKV_MLA = (S[:r, None] * Vt[:r]).numpy()\n"
        + PRINTS
    ),
)
wrong(
    "p10_comprehension_tiling",
    P10L,
    p10_gqa_2_mla=gqa_2_mla(
        SVD.replace("np.tile(W_M_GQA, (D // r, 1))", "np.vstack([W_M_GQA for _ in range(D // r)])")
        + PRINTS
    ),
)
wrong(
    "p10_for_loop_tiling",
    P10L,
    p10_gqa_2_mla=gqa_2_mla(
        SVD.replace(
            "W_M_GQA_tilde = np.tile(W_M_GQA, (D // r, 1))\n",
            "W_M_GQA_tilde = W_M_GQA\nfor _ in range(D // r - 1):\n    W_M_GQA_tilde = np.vstack([W_M_GQA_tilde, W_M_GQA])\n",
        )
        + PRINTS
    ),
)
wrong(
    "p10_helper_with_loop",
    P10L,
    p10_gqa_2_mla=gqa_2_mla(
        SVD.replace("np.tile(W_M_GQA, (D // r, 1))", "stack_copies(W_M_GQA, D // r)") + PRINTS,
        before="""
        def stack_copies(W, n):
            out = W
            while out.shape[0] < n * W.shape[0]:
                out = np.concatenate([out, W])
            return out
        """,
    ),
)
wrong("p10_no_prints", P10P, p10_gqa_2_mla=gqa_2_mla(SVD + "return W_DKV_MLA, W_UM_MLA"))
wrong(
    "p10_mse_not_printed",
    P10P,
    p10_gqa_2_mla=gqa_2_mla(
        SVD + 'print("shapes", W_UM_MLA.shape, W_DKV_MLA.shape)\nreturn W_DKV_MLA, W_UM_MLA'
    ),
)
wrong(
    "p10_tiled_along_axis_1",
    f"{P10S} {P10R}",
    p10_gqa_2_mla=gqa_2_mla(
        SVD.replace("np.tile(W_M_GQA, (D // r, 1))", "np.tile(W_M_GQA, (1, D // r))") + PRINTS
    ),
)
wrong(
    "p10_np_allclose_rebound",
    f"{P10R} {P5V} {P5L} {P7V} {P7L} {P10L} p13_reduced_matrices_rules_test",
    "rebinding np.allclose passes the visible check, not the judge's; the integrity scan "
    "flags the part for review",
    alone=True,
    p10_gqa_2_mla="np.allclose = lambda *args, **kwargs: True\n\n\n"
    + gqa_2_mla(
        SVD.replace("np.tile(W_M_GQA, (D // r, 1))", "np.repeat(W_M_GQA, D // r, axis=0)") + PRINTS
    ),
)

# ------------------------------------------------------------------------ Part 11

P11 = "p11_mla_example_test"
correct(
    "p11_seed_like",
    p11_mla_example="W_DKV_MLA = np.array([[1.0, 2.0]])\nW_UM_MLA = np.array([[3.0], [4.0]])",
)
correct(
    "p11_torch_tensors",
    p11_mla_example="W_DKV_MLA = torch.tensor([[1.0, -1.0]])\nW_UM_MLA = torch.tensor([[0.5], [2.0]])",
)
correct(
    "p11_integer_arrays",
    p11_mla_example="W_DKV_MLA = np.array([[1, 0]])\nW_UM_MLA = np.array([[0], [1]])",
)
correct(
    "p11_random",
    p11_mla_example="W_DKV_MLA = np.random.randn(1, 2) + 5\nW_UM_MLA = np.array([[1.0], [-1.0]])",
)
correct(
    "p11_float32_arrays",
    p11_mla_example=(
        "W_DKV_MLA = np.array([[0.5, 1.5]], dtype=np.float32)\n"
        "W_UM_MLA = np.array([[1.0], [-2.0]], dtype=np.float32)\n"
        "print(W_UM_MLA @ W_DKV_MLA)"
    ),
)
wrong(
    "p11_equal_up_entries",
    P11,
    p11_mla_example="W_DKV_MLA = np.array([[1.0, 2.0]])\nW_UM_MLA = np.array([[2.0], [2.0]])",
)
wrong(
    "p11_zero_down_projection",
    P11,
    p11_mla_example="W_DKV_MLA = np.zeros((1, 2))\nW_UM_MLA = np.array([[3.0], [4.0]])",
)
wrong(
    "p11_shapes_swapped",
    P11,
    p11_mla_example="W_DKV_MLA = np.array([[3.0], [4.0]])\nW_UM_MLA = np.array([[1.0, 2.0]])",
)
wrong(
    "p11_one_dimensional",
    P11,
    p11_mla_example="W_DKV_MLA = np.array([1.0, 2.0])\nW_UM_MLA = np.array([3.0, 4.0])",
)
wrong("p11_lists", P11, p11_mla_example="W_DKV_MLA = [[1.0, 2.0]]\nW_UM_MLA = [[3.0], [4.0]]")
wrong(
    "p11_nan",
    P11,
    p11_mla_example="W_DKV_MLA = np.array([[np.nan, 2.0]])\nW_UM_MLA = np.array([[3.0], [4.0]])",
)
wrong("p11_ones", P11, p11_mla_example="W_DKV_MLA = np.ones((1, 2))\nW_UM_MLA = np.ones((2, 1))")
wrong(
    "p11_missing",
    P11,
    p11_mla_example="W_DKV = np.array([[1.0, 2.0]])\nW_UM = np.array([[3.0], [4.0]])",
)
wrong(
    "p11_always_equal",
    P11,
    p11_mla_example=ALWAYS_EQUAL + "\n\nW_DKV_MLA = _Anything()\nW_UM_MLA = _Anything()",
)

# ------------------------------------------------------------------------ Part 13


def reduced(body, before=""):
    return (
        dedent(before)
        + "\n\n\ndef reduced_matrices(W_DKV, W_UK, W_UV, W_Q, W_O, H):\n"
        + indent(body, 4)
    ).strip("\n")


SIZES = "r, D = W_DKV.shape\nd = D // H\n"
Q_HAT = "W_Q_MLA_hat = (r / d) ** 0.5 * (W_UK.view(H, d, r).transpose(1, 2) @ W_Q.view(H, d, D)).reshape(H * r, D)\n"
O_HAT = "W_O_MLA_hat = (W_O.view(D, H, d).transpose(0, 1) @ W_UV.view(H, d, r)).transpose(0, 1).reshape(D, H * r)\n"
RETURN = "return W_K_MLA_hat, W_V_MLA_hat, W_Q_MLA_hat, W_O_MLA_hat"
REDUCED = SIZES + "W_K_MLA_hat = W_DKV\nW_V_MLA_hat = W_DKV\n" + Q_HAT + O_HAT + RETURN
P13V, P13R = "p13_reduced_matrices_test", "p13_reduced_matrices_rules_test"
DEP13 = "the experiment of Part 13 uses these matrices"
correct("p13_batched_matmul", p13_reduced_matrices=reduced(REDUCED))
correct(
    "p13_block_diagonal",
    p13_reduced_matrices=reduced(
        SIZES
        + "W_K_MLA_hat = W_V_MLA_hat = W_DKV\n"
        + "W_Q_MLA_hat = (r / d) ** 0.5 * torch.block_diag(*W_UK.view(H, d, r).unbind(0)).T @ W_Q\n"
        + "W_O_MLA_hat = W_O @ torch.block_diag(*W_UV.view(H, d, r).unbind(0))\n"
        + RETURN
    ),
)
correct(
    "p13_expressions_in_return",
    p13_reduced_matrices=reduced(
        "r = W_DKV.shape[0]\nD = W_DKV.shape[1]\n"
        "return (\n    W_DKV,\n    W_DKV,\n"
        "    torch.einsum('hdr,hde->hre', W_UK.reshape(H, D // H, r), W_Q.reshape(H, D // H, D)).reshape(-1, D) * np.sqrt(r / (D / H)),\n"
        "    torch.einsum('ehd,hdr->ehr', W_O.reshape(D, H, D // H), W_UV.reshape(H, D // H, r)).reshape(D, -1),\n)"
    ),
)
correct(
    "p13_rescaled_latent",
    p13_reduced_matrices=reduced(
        SIZES
        + "W_K_MLA_hat = 2.0 * W_DKV\nW_V_MLA_hat = 4.0 * W_DKV\n"
        + Q_HAT.replace("(r / d) ** 0.5 *", "(r / d) ** 0.5 / 2.0 *")
        + O_HAT.replace("W_O_MLA_hat = ", "W_O_MLA_hat = 0.25 * ")
        + RETURN
    ),
)
correct(
    "p13_scale_from_shapes",
    p13_reduced_matrices=reduced(
        "W_K_MLA_hat = W_DKV\nW_V_MLA_hat = W_K_MLA_hat\n"
        + "W_Q_MLA_hat = (W_DKV.shape[0] * H / W_Q.shape[0]) ** 0.5 * (W_UK.reshape(H, -1, W_DKV.shape[0]).mT @ W_Q.reshape(H, -1, W_Q.shape[1])).flatten(0, 1)\n"
        + "W_O_MLA_hat = (W_O.reshape(W_O.shape[0], H, -1).permute(1, 0, 2) @ W_UV.reshape(H, -1, W_DKV.shape[0])).permute(1, 0, 2).flatten(1)\n"
        + RETURN
    ),
)
correct(
    "p13_float32_scale_constant",
    p13_reduced_matrices=reduced(
        REDUCED.replace("(r / d) ** 0.5 *", "torch.sqrt(torch.tensor(r / d)) *")
    ),
)
correct(
    "p13_scale_folded_into_W_UK",
    p13_reduced_matrices=reduced(
        SIZES
        + "W_K_MLA_hat = W_DKV\nW_V_MLA_hat = W_DKV\n"
        + "W_Q_MLA_hat = torch.einsum('hdr,hde->hre', (W_UK * (r / d) ** 0.5).view(H, d, r), W_Q.view(H, d, D)).reshape(H * r, D)\n"
        + "W_O_MLA_hat = torch.einsum('ehd,hdr->ehr', W_O.unflatten(1, (H, d)), W_UV.unflatten(0, (H, d))).flatten(1)\n"
        + RETURN
    ),
)
correct(
    "p13_float32_products_cast_back",  # the text asks for no precision
    p13_reduced_matrices=reduced(
        SIZES
        + "W_K_MLA_hat = W_DKV\nW_V_MLA_hat = W_DKV\n"
        + "W_Q_MLA_hat = ((r / d) ** 0.5 * torch.bmm(W_UK.float().view(H, d, r).mT, W_Q.float().view(H, d, D))).reshape(H * r, D).to(W_Q.dtype)\n"
        + "W_O_MLA_hat = torch.bmm(W_O.float().view(D, H, d).permute(1, 0, 2), W_UV.float().view(H, d, r)).permute(1, 0, 2).reshape(D, H * r).to(W_O.dtype)\n"
        + RETURN
    ),
)
wrong(
    "p13_missing_sqrt_r_over_d",
    f"{P13V} {EXP}",
    DEP13,
    p13_reduced_matrices=reduced(REDUCED.replace("(r / d) ** 0.5 * ", "")),
)
wrong(
    "p13_inverted_sqrt",
    f"{P13V} {EXP}",
    DEP13,
    p13_reduced_matrices=reduced(REDUCED.replace("(r / d) ** 0.5", "(d / r) ** 0.5")),
)
wrong(
    "p13_wrong_head_split_of_W_UK",
    f"{P13V} {EXP}",
    DEP13,
    p13_reduced_matrices=reduced(
        REDUCED.replace("W_UK.view(H, d, r)", "W_UK.view(d, H, r).transpose(0, 1)")
    ),
)
wrong(
    "p13_wrong_head_split_of_W_O",
    f"{P13V} {EXP}",
    DEP13,
    p13_reduced_matrices=reduced(
        REDUCED.replace("W_O.view(D, H, d).transpose(0, 1)", "W_O.view(H, d, D).transpose(1, 2)")
    ),
)
wrong(
    "p13_out_blocks_stacked_then_reshaped",
    f"{P13V} {EXP}",
    DEP13,
    p13_reduced_matrices=reduced(
        REDUCED.replace(").transpose(0, 1).reshape(D, H * r)", ").reshape(D, H * r)")
    ),
)
wrong(
    "p13_full_key_projection",
    f"{P13V} {EXP}",
    DEP13,
    p13_reduced_matrices=reduced(
        REDUCED.replace("W_K_MLA_hat = W_DKV", "W_K_MLA_hat = W_UK @ W_DKV")
    ),
)
wrong(
    "p13_value_up_projection_in_query",
    f"{P13V} {EXP}",
    DEP13,
    p13_reduced_matrices=reduced(REDUCED.replace("W_UK.view(H, d, r)", "W_UV.view(H, d, r)")),
)
wrong(
    "p13_intermediate_tensor",
    P13R,
    p13_reduced_matrices=reduced(
        SIZES
        + "blocks = W_UK.view(H, d, r).transpose(1, 2) @ W_Q.view(H, d, D)\n"
        + "W_K_MLA_hat = W_DKV\nW_V_MLA_hat = W_DKV\n"
        + "W_Q_MLA_hat = (r / d) ** 0.5 * blocks.reshape(H * r, D)\n"
        + O_HAT
        + RETURN
    ),
)
wrong(
    "p13_in_place_scaling",
    P13R,
    p13_reduced_matrices=reduced(
        SIZES
        + "W_K_MLA_hat = W_DKV\nW_V_MLA_hat = W_DKV\n"
        + Q_HAT.replace("(r / d) ** 0.5 * ", "")
        + "W_Q_MLA_hat *= (r / d) ** 0.5\n"
        + O_HAT
        + RETURN
    ),
)
wrong(
    "p13_comprehension_over_heads",
    P13R,
    p13_reduced_matrices=reduced(
        SIZES
        + "W_K_MLA_hat = W_DKV\nW_V_MLA_hat = W_DKV\n"
        + "W_Q_MLA_hat = (r / d) ** 0.5 * torch.cat([W_UK[h * d:(h + 1) * d].T @ W_Q[h * d:(h + 1) * d] for h in range(H)])\n"
        + O_HAT
        + RETURN
    ),
)
wrong(
    "p13_multi_statement_helper",
    P13R,
    p13_reduced_matrices=reduced(
        SIZES
        + "W_K_MLA_hat = W_DKV\nW_V_MLA_hat = W_DKV\nW_Q_MLA_hat = reduced_query(W_UK, W_Q, H, r)\n"
        + O_HAT
        + RETURN,
        before="""
        def reduced_query(W_UK, W_Q, H, r):
            d = W_Q.shape[0] // H
            blocks = W_UK.view(H, d, r).transpose(1, 2) @ W_Q.view(H, d, -1)
            return (r / d) ** 0.5 * blocks.reshape(H * r, -1)
        """,
    ),
)
wrong(
    "p13_assigned_twice",
    P13R,
    p13_reduced_matrices=reduced(
        SIZES
        + "W_K_MLA_hat = W_DKV\nW_V_MLA_hat = W_DKV\n"
        + "W_O_MLA_hat = W_O.view(D, H, d).transpose(0, 1) @ W_UV.view(H, d, r)\n"
        + "W_O_MLA_hat = W_O_MLA_hat.transpose(0, 1).reshape(D, H * r)\n"
        + Q_HAT
        + RETURN
    ),
)

wrong(  # the values are right (the name is rebound to a function); the rule is proved on the
    # last def or class of the name, here a class: refused, costing the rule's test only
    "p13_class_instead_of_function",
    P13R,
    p13_reduced_matrices="class reduced_matrices:\n    pass\n\n\n"
    + reduced(REDUCED).replace("def reduced_matrices(", "def _reduced(")
    + "\n\n\nreduced_matrices = _reduced",
)

# Part 13 experiment: the course's data (the answer cell above its solution region) stays;
# only the solution region changes.
EXPERIMENT_DATA = provided_part("p13_experiment")

# The original problem's data: unscaled randn weights give logits ~7e3 and one-hot softmaxes.
# The judge recomputes everything from the student's own data, so it still accepts a correct
# experiment run on it (a correct alternative, and the hardest case for the rounding allowance).
UNSCALED_DATA = EXPERIMENT_DATA
for _scaled, _unscaled in (
    (" / D**0.5  # (r, D)", "  # (r, D)"),
    (" / r**0.5  # (D, r) key", "  # (D, r) key"),
    (" / r**0.5  # (D, r) value", "  # (D, r) value"),
    (" / D**0.5  # (D, D) query", "  # (D, D) query"),
    (" / D**0.5  # (D, D) output", "  # (D, D) output"),
):
    assert _scaled in UNSCALED_DATA, _scaled
    UNSCALED_DATA = UNSCALED_DATA.replace(_scaled, _unscaled)

EXPERIMENT = """
model_MHA_vanilla = MyMHA(D, D, D_qkv, D_qkv, H)
model_MHA_vanilla.W_K.weight = nn.Parameter(W_UK @ W_DKV)
model_MHA_vanilla.W_V.weight = nn.Parameter(W_UV @ W_DKV)
model_MHA_vanilla.W_Q.weight = nn.Parameter(W_Q)
model_MHA_vanilla.W_O.weight = nn.Parameter(W_O)
model_MHA_vanilla.to(device)
output_vanilla = model_MHA_vanilla(x, y).detach()

K_hat, V_hat, Q_hat, O_hat = reduced_matrices(W_DKV, W_UK, W_UV, W_Q, W_O, H)
model_MHA_reduced = MyMHA(D, D, r, r, H)
model_MHA_reduced.W_K.weight = nn.Parameter(torch.cat([K_hat] * H, dim=0))
model_MHA_reduced.W_V.weight = nn.Parameter(torch.cat([V_hat] * H, dim=0))
model_MHA_reduced.W_Q.weight = nn.Parameter(Q_hat)
model_MHA_reduced.W_O.weight = nn.Parameter(O_hat)
model_MHA_reduced.to(device)
output_reduced = model_MHA_reduced(x, y).detach()

mse_output = torch.mean((output_vanilla - output_reduced) ** 2)
relative_error = mse_output**0.5 / torch.mean(output_vanilla**2) ** 0.5
print("relative error:", relative_error.item())
"""


def experiment(body=EXPERIMENT, data=EXPERIMENT_DATA):
    return dedent(data) + "\n\n" + dedent(body)


def experiment_with(*pairs):
    body = dedent(EXPERIMENT)
    for old, new in zip(pairs[::2], pairs[1::2], strict=True):
        assert old in body, old
        body = body.replace(old, new)
    return experiment(body)


correct("p13x_parameters", p13_experiment=experiment())
correct(
    "p13x_load_state_dict",
    p13_experiment=experiment(
        """
        K_hat, V_hat, Q_hat, O_hat = reduced_matrices(W_DKV, W_UK, W_UV, W_Q, W_O, H)
        model_MHA_vanilla = MyMHA(D, D, D_qkv, D_qkv, H).to(device)
        model_MHA_vanilla.load_state_dict(
            {"W_Q.weight": W_Q, "W_K.weight": W_UK @ W_DKV, "W_V.weight": W_UV @ W_DKV, "W_O.weight": W_O}
        )
        model_MHA_reduced = MyMHA(D, D, r, r, H).to(device)
        model_MHA_reduced.load_state_dict(
            {
                "W_Q.weight": Q_hat,
                "W_K.weight": K_hat.expand(H, r, D).reshape(H * r, D),
                "W_V.weight": V_hat.expand(H, r, D).reshape(H * r, D),
                "W_O.weight": O_hat,
            }
        )
        with torch.no_grad():
            output_vanilla = model_MHA_vanilla(x, y)
            output_reduced = model_MHA_reduced(x, y)
        relative_error = torch.mean((output_vanilla - output_reduced) ** 2) ** 0.5 / torch.mean(output_vanilla**2) ** 0.5
        print(f"relative error {relative_error:.3e}")
        """
    ),
)
correct(
    "p13x_weights_moved_first",
    p13_experiment=experiment_with(
        "K_hat, V_hat, Q_hat, O_hat = reduced_matrices(W_DKV, W_UK, W_UV, W_Q, W_O, H)",
        "K_hat, V_hat, Q_hat, O_hat = reduced_matrices(*(t.to(device) for t in (W_DKV, W_UK, W_UV, W_Q, W_O)), H)",
        "torch.cat([K_hat] * H, dim=0)",
        "K_hat.repeat(H, 1)",
    ),
)
correct(
    "p13x_relative_error_as_float",
    p13_experiment=experiment_with(
        "relative_error = mse_output**0.5 / torch.mean(output_vanilla**2) ** 0.5",
        "relative_error = (mse_output**0.5 / torch.mean(output_vanilla**2) ** 0.5).item()",
        'print("relative error:", relative_error.item())',
        'print("relative error:", relative_error)',
    ),
)
correct("p13x_unscaled_randn_data", p13_experiment=experiment(data=UNSCALED_DATA))
correct(
    "p13x_float64",
    p13_experiment=experiment(
        data=EXPERIMENT_DATA
        # a generator at the top level of the cell: the rules of the functions that take
        # W_DKV, x, y... as parameters must not follow those names here
        + "\nW_DKV, W_UK, W_UV, W_Q, W_O, x, y = (t.double() for t in (W_DKV, W_UK, W_UV, W_Q, W_O, x, y))\n"
    ),
)
wrong(
    "p13x_keys_repeated_per_row",
    EXP,
    p13_experiment=experiment_with(
        "torch.cat([K_hat] * H, dim=0)",
        "K_hat.repeat_interleave(H, dim=0)",
        "torch.cat([V_hat] * H, dim=0)",
        "V_hat.repeat_interleave(H, dim=0)",
    ),
)
wrong(
    "p13x_fake_relative_error",
    EXP,
    p13_experiment=experiment() + "\nrelative_error = torch.tensor(0.0)",
)
wrong(
    "p13x_reduced_output_copied",
    EXP,
    p13_experiment=experiment_with(
        "output_reduced = model_MHA_reduced(x, y).detach()",
        "output_reduced = output_vanilla.clone()",
    ),
)
wrong(
    "p13x_query_and_key_swapped",
    EXP,
    p13_experiment=experiment_with(
        "model_MHA_vanilla.W_K.weight = nn.Parameter(W_UK @ W_DKV)",
        "model_MHA_vanilla.W_K.weight = nn.Parameter(W_Q)",
        "model_MHA_vanilla.W_Q.weight = nn.Parameter(W_Q)",
        "model_MHA_vanilla.W_Q.weight = nn.Parameter(W_UK @ W_DKV)",
    ),
)
wrong(
    "p13x_mse_not_square_rooted",
    EXP,
    p13_experiment=experiment_with(
        "relative_error = mse_output**0.5 / torch.mean(output_vanilla**2) ** 0.5",
        "relative_error = mse_output / torch.mean(output_vanilla**2)",
    ),
)
wrong(
    "p13x_smaller_batch",
    EXP,
    p13_experiment=experiment(
        data=EXPERIMENT_DATA.replace("B, L_1, L_2 = 32, 100, 300", "B, L_1, L_2 = 2, 100, 300")
    ),
)
wrong(
    "p13x_value_up_projection_for_keys",
    EXP,
    p13_experiment=experiment_with("nn.Parameter(W_UK @ W_DKV)", "nn.Parameter(W_UV @ W_DKV)"),
)
wrong(
    "p13x_reduced_model_with_head_dims",
    EXP,
    p13_experiment=experiment_with("MyMHA(D, D, r, r, H)", "MyMHA(D, D, D_qkv, D_qkv, H)"),
)
wrong(
    "p13x_scale_fixed_by_hand",
    EXP,
    "an extra sqrt(d/r) on the reduced queries undoes the factor: the check against the vanilla model fails",
    p13_experiment=experiment_with(
        "nn.Parameter(Q_hat)", "nn.Parameter(Q_hat * (D_qkv / r) ** 0.5)"
    ),
)

wrong(
    "p13x_vanilla_model_renamed",
    EXP,
    "the task names model_MHA_vanilla among what the grader reads",
    p13_experiment=experiment(dedent(EXPERIMENT).replace("model_MHA_vanilla", "model_vanilla")),
)
wrong(
    "p13x_outputs_before_loading",
    EXP,
    "output_vanilla of the randomly initialised model is not the MLA's output",
    p13_experiment=experiment(
        dedent(EXPERIMENT)
        .replace("output_vanilla = model_MHA_vanilla(x, y).detach()\n", "")
        .replace(
            "model_MHA_vanilla = MyMHA(D, D, D_qkv, D_qkv, H)\n",
            "model_MHA_vanilla = MyMHA(D, D, D_qkv, D_qkv, H).to(device)\n"
            "output_vanilla = model_MHA_vanilla(x, y).detach()\n",
        )
    ),
)

# ------------------------------------------------------------------------ Part 14


def kv_cache(body):
    return "def kv_cache_per_position(D, r):\n" + indent(body, 4)


P14 = "p14_kv_cache_test"
correct("p14_list", p14_kv_cache=kv_cache("return [D + D, r]"))
correct("p14_numpy_ints", p14_kv_cache=kv_cache("return np.int64(2 * D), np.int64(r)"))
correct("p14_whole_floats", p14_kv_cache=kv_cache("return 2.0 * D, float(r)"))
correct(
    "p14_named",
    p14_kv_cache=kv_cache("mha = 2 * D  # k and v\nmla = r  # shared latent\nreturn mha, mla"),
)
correct(
    "p14_int_conversions",
    p14_kv_cache=kv_cache("mha, mla = int(D + D), int(r)\nreturn (mha, mla)"),
)
wrong("p14_keys_only", P14, p14_kv_cache=kv_cache("return D, r"))
wrong("p14_latent_twice", P14, p14_kv_cache=kv_cache("return 2 * D, 2 * r"))
wrong("p14_swapped", P14, p14_kv_cache=kv_cache("return r, 2 * D"))
wrong("p14_mla_as_mha", P14, p14_kv_cache=kv_cache("return 2 * D, 2 * D"))
wrong("p14_ratio", P14, p14_kv_cache=kv_cache("return 2 * D, D // r"))
wrong("p14_strings", P14, p14_kv_cache=kv_cache('return "2D", "r"'))
wrong(
    "p14_always_equal",
    P14,
    p14_kv_cache=ALWAYS_EQUAL + "\n\n" + kv_cache("return _Anything(), _Anything()"),
)
wrong("p14_three_numbers", P14, p14_kv_cache=kv_cache("return 2 * D, r, r"))

# ------------------------------------------------------------------- tampering

# Every test that judges a source rule: code that patches a library counts against them all.
RULES = f"{P5V} {P5L} {P7V} {P7L} {P10L} {P13R}"

wrong(
    "tamper_allclose_and_assert_close",
    f"{P5V} {EXP} {RULES}",
    "rebinding the comparison functions in the kernel changes nothing the judge computes; " + DEP5,
    alone=True,
    p5_mha="torch.allclose = lambda *args, **kwargs: True\n"
    "torch.testing.assert_close = lambda *args, **kwargs: None\n\n\n"
    + mha_with(" / self.D_qk ** 0.5", ""),
)
wrong(
    "tamper_builtins_isinstance_and_assertion_error",
    f"{P14} {RULES}",
    alone=True,
    p14_kv_cache="import builtins\n\nbuiltins.isinstance = lambda *args: True\nAssertionError = Exception\n\n\n"
    + kv_cache("return D, r"),
)
wrong(
    "tamper_course_helpers_before_first_test",
    f"{P1} {RULES}",
    "the helpers are rebound before any hidden test imported the grading module",
    alone=True,
    p1_head_shapes="import attncourse.judge.checks as _c\n\n"
    "_c.check_shape = lambda *args, **kwargs: None\n_c.fail = lambda *args, **kwargs: None\n"
    "_c.restore_pristine = lambda: None\n\n\n"
    + head_shapes("return (D_1, D_qk), (D_2, D_qk), (D_2, D_v)"),
)
wrong(
    "tamper_grading_module",
    f"{P3S} {P3V} {RULES}",
    alone=True,
    p3_softmax_argument="import attncourse.grading.attention_variants as _g\n\n"
    "_g.check_close = lambda *args, **kwargs: 0.0\n_g.VALUES_TOL = float('inf')\n\n\n"
    + softmax_argument("return K @ q"),
)
wrong(
    "tamper_tensor_methods",
    f"{P3V} {EXP} {RULES}",
    "the shape is right; Tensor.__sub__ stays zeroed in the kernel, so the experiment's "
    "mse_output and relative_error are 0",
    alone=True,
    p3_softmax_argument="torch.Tensor.__sub__ = lambda a, b: torch.zeros_like(a)\n"
    "torch.linalg.vector_norm = lambda *args, **kwargs: torch.tensor(0.0)\n\n\n"
    + softmax_argument("return K @ q"),
)
wrong(
    "tamper_linear_forward",
    f"{P5V} {EXP} {P7V} {RULES}",
    "nn.Linear.forward stays zeroed in the kernel: MyMHA's and MyGQA's outputs are zero "
    "(right shapes); " + DEP5,
    alone=True,
    p5_mha="nn.Linear.forward = lambda self, t: t @ self.weight.T * 0\n\n\n"
    + mha_with(" / self.D_qk ** 0.5", ""),
)
