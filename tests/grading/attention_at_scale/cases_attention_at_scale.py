"""Alternative correct answers and named wrong answers for assignment 5 (attention_at_scale).

Same layout as ``cases_mla_inference`` (see ``casetable``): each row replaces answer cells of
the solution and names the test cells that must then fail; every other test cell of the
notebook must keep its points. Most rows are the solution with one change (:func:`sub` refuses
a change that does not apply). Part 5's ``split_decode`` merges with Part 2's ``merge``, so a
wrong merge costs Part 5 too (``DEPENDS``). Each part is one question (``QUESTION_OF``): four
correct and eight wrong rows per part.
"""

from casetable import Case, cases_table, source_notebook
from part6_rows import CASES as PART6_CASES
from part6_rows import DEPENDS as PART6_DEPENDS
from part6_rows import GROUPS as PART6_GROUPS
from part6_rows import MESSAGES as PART6_MESSAGES

from devtools.submissions import solution_answers

ASSIGNMENT = "attention_at_scale"

GROUPS = {
    "p1_softmax": (("p1_softmax_answer",), ("p1_softmax", "p1_softmax_rules")),
    "p1_own": (("p1_own_answer",), ("p1_own_numbers",)),
    "p2_online": (("p2_online_answer",), ("p2_online", "p2_online_rules")),
    "p2_merge": (("p2_merge_answer",), ("p2_merge",)),
    "p3_tiles": (
        ("p3_tiles_answer",),
        ("p3_tiles_values", "p3_tiles_causal", "p3_tiles_rules", "p3_tiles_footprint_test"),
    ),
    "p3_blocks": (("p3_blocks_answer",), ("p3_causal_blocks",)),
    "p4_io": (("p4_io_answer",), ("p4_io_counts",)),
    "p4_mine": (("p4_mine_answer",), ("p4_io_mine",)),
    "p5_split": (("p5_split_answer",), ("p5_split_decode", "p5_split_rules")),
}


def QUESTION_OF(group):
    """Each part is one question: p1_softmax and p1_own are Part 1, and so on."""
    return group[:2]


# Part 6's groups and rows (part6_rows, written on Part 6 run alone since it
# reads nothing of Parts 1-5), their groups named p6_... here.
GROUPS.update({f"p6_{name}": group for name, group in PART6_GROUPS.items()})

# Part 5 merges its chunks with Part 2(b)'s merge.
DEPENDS = {
    "p5_split_decode": {"p2_merge_answer"},
    "p5_split_rules": {"p2_merge_answer"},
    **PART6_DEPENDS,
}

EVERY_TEST_IN_PROCESS = True

# The course's merge-order demo, the lab and its plot: they only print or draw, and no check
# reads them.
DISPLAY_ONLY = {"p2_merge_orders", "p4_lab", "p4_lab_plot", "p6_experiment", "p6_plot"}

# Checks with no random input: the rules (one call on fixed inputs, then the source) and each
# student's own numbers (the graded id's instance).
FIXED_INPUTS = {
    "p1_softmax_rules",
    "p1_own_numbers",
    "p2_online_rules",
    "p3_tiles_rules",
    "p4_io_mine",
    "p5_split_rules",
}

# Wrong cases no visible check of their part catches (tests/test_visible_checks.py), and why.
# None: the L x L matrix formed after all (values right, no rule broken in the source) is caught
# by coursecheck.check_tiles, the footprint record run on the course's sizes.
VISIBLE_EXCEPTIONS = {}

SOLUTION = solution_answers(source_notebook(ASSIGNMENT))


def sub(cell, *pairs):
    """The solution's ``cell`` with each (old, new) replaced; every old text must occur."""
    text = SOLUTION[cell]
    for old, new in zip(pairs[::2], pairs[1::2], strict=True):
        assert old in text, f"{cell}: {old!r} not in the solution"
        text = text.replace(old, new)
    return text


# ------------------------------------------------------------------- Part 1(a)
SM = "p1_softmax_answer"
LSE_LINE = "    return (m + torch.log(torch.exp(s - m).sum(dim=dim, keepdim=True))).squeeze(dim)"
SHIFT_LINE = "    e = torch.exp(s - s.amax(dim=dim, keepdim=True))  # (...): every exponent <= 0"

P1_SOFTMAX = [
    (
        "float32_inside",
        sub(
            SM,
            SHIFT_LINE,
            "    e = torch.exp((s - s.amax(dim=dim, keepdim=True)).float())",
            "    return e / e.sum(dim=dim, keepdim=True)",
            "    return (e / e.sum(dim=dim, keepdim=True)).to(s.dtype)",
        ),
        (),
    ),
    (
        "softmax_as_exp_of_s_minus_lse",
        sub(
            SM,
            SHIFT_LINE + "\n    return e / e.sum(dim=dim, keepdim=True)",
            "    return torch.exp(s - log_sum_exp(s, dim).unsqueeze(dim))",
        ),
        (),
    ),
    (
        "max_via_max_values_and_logsum",
        sub(
            SM,
            "    m = s.amax(dim=dim, keepdim=True)  # (..., 1, ...): the maximum along dim",
            "    m = s.max(dim=dim, keepdim=True).values",
            LSE_LINE,
            "    return m.squeeze(dim) + torch.exp(s - m).sum(dim).log()",
        ),
        (),
    ),
    (
        "no_shift",
        sub(SM, "s - m)", "s)", "s - s.amax(dim=dim, keepdim=True)", "s"),
        ("p1_softmax",),
    ),
    ("min_subtracted", sub(SM, "s.amax(", "s.amin("), ("p1_softmax",)),
    ("mean_subtracted", sub(SM, "s.amax(", "s.mean("), ("p1_softmax",)),
    (
        "lse_max_not_added_back",
        sub(SM, "return (m + torch.log(", "return (0 * m + torch.log("),
        ("p1_softmax",),
    ),
    (
        "uses_torch_softmax",
        sub(
            SM,
            SHIFT_LINE + "\n    return e / e.sum(dim=dim, keepdim=True)",
            "    return torch.softmax(s, dim=dim)",
        ),
        ("p1_softmax_rules",),
    ),
    (
        "uses_torch_logsumexp",
        sub(SM, LSE_LINE, "    return torch.logsumexp(s, dim=dim)"),
        ("p1_softmax_rules",),
    ),
    (
        "loop_over_rows",
        sub(
            SM,
            SHIFT_LINE,
            "    e = torch.stack([torch.exp(r - r.amax(dim=-1, keepdim=True)) for r in s.movedim(dim, -1)"
            ".reshape(-1, s.shape[dim])]).reshape(s.movedim(dim, -1).shape).movedim(-1, dim)",
        ),
        ("p1_softmax_rules",),
    ),
]

# ------------------------------------------------------------------- Part 1(b)
OWN = "p1_own_answer"
P1_OWN = [
    (
        "counts_by_running_torch",
        sub(
            OWN,
            "fp16_overflows = sum(x > math.log(65504) for x in _s)",
            "fp16_overflows = int(torch.isinf(torch.exp(torch.tensor(_s).half())).sum())",
            "bf16_underflows = sum(x - _m < math.log(2.0**-134) for x in _s)",
            "bf16_underflows = int((torch.exp(torch.tensor(_s) - _m).bfloat16() == 0).sum())",
        ),
        (),
    ),
    (
        "lse_rounded_to_3_decimals",
        sub(OWN, "for x in _s))\nfp16", "for x in _s))\nlse_mine = round(lse_mine, 3)\nfp16"),
        (),
    ),
    (
        "lse_max_alone",
        sub(OWN, "for x in _s))\nfp16", "for x in _s))\nlse_mine = float(_m)\nfp16"),
        ("p1_own_numbers",),
    ),
    (
        "lse_in_log2",
        sub(OWN, "_m + math.log(sum(", "_m + math.log2(sum("),
        ("p1_own_numbers",),
    ),
    (
        "fp16_underflows_none_after_the_shift",
        sub(OWN, "sum(x - _m < math.log(2.0**-25) for x in _s)", "0"),
        ("p1_own_numbers",),
    ),
    (
        "overflow_counted_on_shifted_scores",
        sub(
            OWN, "sum(x > math.log(65504) for x in _s)", "sum(x - _m > math.log(65504) for x in _s)"
        ),
        ("p1_own_numbers",),
    ),
]

# ------------------------------------------------------------------- Part 2
ON, MG = "p2_online_answer", "p2_merge_answer"
RESCALE = "l = l * torch.exp(m - m_new) + "
P2_ONLINE = [
    (
        "float32_running_statistics",
        sub(
            ON,
            "chunk = s[..., start : start + block]",
            "chunk = s[..., start : start + block].float()",
            "dtype=s.dtype, device=s.device)  # (...)\n    l =",
            "dtype=torch.float32, device=s.device)  # (...)\n    l =",
            "    return m, l",
            "    return m.to(s.dtype), l.to(s.dtype)",
        ).replace(
            "l = torch.zeros(s.shape[:-1], dtype=s.dtype",
            "l = torch.zeros(s.shape[:-1], dtype=torch.float32",
        ),
        (),
    ),
    (
        "first_block_starts_the_statistics",
        sub(
            ON,
            "for start in range(0, s.shape[-1], block):",
            "m = s[..., :block].amax(dim=-1)\n    l = torch.exp(s[..., :block] - m[..., None]).sum(dim=-1)\n"
            "    for start in range(block, s.shape[-1], block):",
        ),
        (),
    ),
    ("not_rescaled", sub(ON, RESCALE, "l = l + "), ("p2_online",)),
    (
        "rescaled_the_wrong_way",
        sub(ON, "torch.exp(m - m_new)", "torch.exp(m_new - m)"),
        ("p2_online",),
    ),
    (
        "last_short_block_dropped",
        sub(ON, "range(0, s.shape[-1], block)", "range(0, s.shape[-1] - block + 1, block)"),
        ("p2_online",),
    ),
    (
        "block_sum_by_logsumexp",
        sub(
            ON,
            "torch.exp(chunk - m_new[..., None]).sum(dim=-1)",
            "torch.exp(torch.logsumexp(chunk, -1) - m_new)",
        ),
        ("p2_online_rules",),
    ),
]
MERGE_RETURN = "    return m, l_a * w_a + l_b * w_b, o_a * w_a[..., None] + o_b * w_b[..., None]"
P2_MERGE = [
    (
        "through_log_sum_exp",
        sub(
            MG,
            MERGE_RETURN,
            "    lse = torch.maximum(m_a + l_a.log(), m_b + l_b.log())\n"
            "    l = l_a * w_a + l_b * w_b\n"
            "    return m, l, o_a * w_a.unsqueeze(-1) + o_b * w_b.unsqueeze(-1)",
        ),
        (),
    ),
    (
        "stacked_and_summed",
        sub(
            MG,
            MERGE_RETURN,
            "    w = torch.stack([w_a, w_b])  # (2, ...)\n"
            "    o = torch.einsum('k...,k...d->...d', w, torch.stack([o_a, o_b]))\n"
            "    return m, (w * torch.stack([l_a, l_b])).sum(0), o",
        ),
        (),
    ),
    (
        "where_instead_of_maximum",
        sub(MG, "m = torch.maximum(m_a, m_b)", "m = torch.where(m_a > m_b, m_a, m_b)"),
        (),
    ),
    (
        "wrong_maximum",
        sub(MG, "torch.exp(m_a - m), torch.exp(m_b - m)", "torch.exp(m - m_a), torch.exp(m - m_b)"),
        ("p2_merge", "p5_split_decode"),
    ),
    (
        "added_without_rescaling",
        sub(MG, MERGE_RETURN, "    return m, l_a + l_b, o_a + o_b"),
        ("p2_merge", "p5_split_decode"),
    ),
    (
        "outputs_not_rescaled",
        sub(MG, "o_a * w_a[..., None] + o_b * w_b[..., None]", "o_a + o_b"),
        ("p2_merge", "p5_split_decode"),
    ),
    (
        "max_of_the_first",
        sub(MG, "m = torch.maximum(m_a, m_b)", "m = m_a"),
        ("p2_merge",),  # any common shift is exact: Part 5's o and lse stay right
    ),
]

# ------------------------------------------------------------------- Part 3
FF, CB = "p3_tiles_answer", "p3_blocks_answer"
# The footprint check judges what is formed, never the values: a values mistake costs the
# values tests only, a footprint mistake the footprint test only.
FOOTPRINT = "p3_tiles_footprint_test"
VALUE_TESTS = ("p3_tiles_values", "p3_tiles_causal")
F32_INSIDE = (
    "    B, H, L_q, d = Q.shape\n",
    "    dtype = Q.dtype\n    Q, K, V = Q.float(), K.float(), V.float()\n    B, H, L_q, d = Q.shape\n",
    "    return O, lse",
    "    return O.to(dtype), lse.to(dtype)",
)
P3_TILES = [
    ("float32_inside", sub(FF, *F32_INSIDE), ()),
    (
        "einsum_blocks",
        sub(
            FF,
            "s = q @ K[:, :, j : j + block_k].transpose(-2, -1)",
            "s = torch.einsum('bhqd,bhkd->bhqk', q, K[:, :, j : j + block_k])",
            "p @ V[:, :, j : j + block_k]",
            "torch.einsum('bhqk,bhkd->bhqd', p, V[:, :, j : j + block_k])",
        ),
        (),
    ),
    (
        "preallocated_zeros_and_lists_of_blocks",
        sub(
            FF,
            "O = torch.empty_like(Q)",
            "O = torch.zeros_like(Q)",
            "lse = torch.empty(B, H, L_q,",
            "lse = torch.zeros(B, H, L_q,",
        ),
        (),
    ),
    (
        "normalised_at_every_block",
        sub(
            FF,
            "            l = l * alpha + p.sum(dim=-1)\n"
            "            acc = acc * alpha[..., None] + p @ V[:, :, j : j + block_k]  # (B, H, n, d)\n",
            "            l_new = l * alpha + p.sum(dim=-1)\n"
            "            acc = (acc * (l * alpha)[..., None] + p @ V[:, :, j : j + block_k]) / l_new[..., None]\n"
            "            l = l_new\n",
            "        O[:, :, i : i + n] = acc / l[..., None]",
            "        O[:, :, i : i + n] = acc",
        ),
        (),
    ),
    (
        "causal_mask_from_triu",
        sub(
            FF,
            '                s = s.masked_fill(cols > rows, float("-inf"))  # (B, H, n, b)',
            "                s = s.masked_fill(torch.ones(n, s.shape[-1], dtype=torch.bool).triu(i - j + 1), -math.inf)",
        ),
        (),
    ),
    (
        # A float32 answer off by 1.5e-5 (relative): above the 1e-5 the footprint check once
        # held its values to, within VALUES_TOL (1e-4) and below the worst correct answer
        # measured (2.0e-5, tolerances.py); the float32 idioms of Part 3 measured stay below
        # 1e-5 (float32 inside 3e-7, normalised at every block 3e-7, two passes 7e-6).
        "float32_off_by_1_5e-5_within_the_values_tolerance",
        sub(FF, *F32_INSIDE, "    return O.to(dtype)", "    return (O * (1 + 1.5e-5)).to(dtype)"),
        (),
    ),
    ("sum_not_rescaled", sub(FF, "l = l * alpha + p.sum", "l = l + p.sum"), VALUE_TESTS),
    (
        "output_not_rescaled",
        sub(FF, "acc = acc * alpha[..., None] + p @", "acc = acc + p @"),
        VALUE_TESTS,
    ),
    (
        "lse_is_the_max",
        sub(FF, "lse[:, :, i : i + n] = m + torch.log(l)", "lse[:, :, i : i + n] = m"),
        VALUE_TESTS,
    ),
    (
        "lse_without_the_max",
        sub(FF, "lse[:, :, i : i + n] = m + torch.log(l)", "lse[:, :, i : i + n] = torch.log(l)"),
        VALUE_TESTS,
    ),
    (
        "not_scaled",
        sub(FF, "q = Q[:, :, i : i + block_q] / d**0.5", "q = Q[:, :, i : i + block_q]"),
        VALUE_TESTS,
    ),
    (
        "causal_block_mask_off_by_one_block",
        sub(
            FF,
            "stop = min(L_k, i + n) if causal else L_k",
            "stop = min(L_k, i + n + block_k) if causal else L_k",
            "if causal and j + s.shape[-1] > i + 1:",
            "if causal and j <= i + n - 1 < j + block_k:",
        ),
        ("p3_tiles_causal", FOOTPRINT),
    ),
    (
        "diagonal_block_not_masked_inside",
        sub(FF, "if causal and j + s.shape[-1] > i + 1:", "if False:"),
        ("p3_tiles_causal",),
    ),
    (
        "partial_last_blocks_dropped",
        sub(
            FF,
            "for i in range(0, L_q, block_q):",
            "for i in range(0, L_q - block_q + 1, block_q):",
            "for j in range(0, stop, block_k):",
            "for j in range(0, stop - block_k + 1, block_k):",
            "O = torch.empty_like(Q)",
            "O = torch.zeros_like(Q)",
            "lse = torch.empty(",
            "lse = torch.zeros(",
        ),
        VALUE_TESTS,
    ),
    (
        "whole_score_matrix_formed",
        "def flash_forward(Q, K, V, block_q, block_k, causal=False):\n"
        "    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])  # (B, H, L_q, L_k): all of it\n"
        "    if causal:\n"
        "        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), -math.inf)\n"
        "    m = s.amax(dim=-1, keepdim=True)\n"
        "    p = torch.exp(s - m)\n"
        "    l = p.sum(dim=-1, keepdim=True)\n"
        "    return (p / l) @ V, (m + torch.log(l)).squeeze(-1)\n",
        (FOOTPRINT,),
    ),
    (
        # Exact and tiled, but two passes over the key blocks (the log-sum-exp first, then
        # exp(s - lse) @ V): each block of scores formed twice, not the one pass Part 3 asks for.
        "two_passes_over_the_key_blocks",
        "def flash_forward(Q, K, V, block_q, block_k, causal=False):\n"
        "    B, H, L_q, d = Q.shape\n"
        "    L_k = K.shape[2]\n"
        "    O = torch.empty_like(Q)\n"
        "    lse = torch.empty(B, H, L_q, dtype=Q.dtype)\n"
        "    for i in range(0, L_q, block_q):\n"
        "        q = Q[:, :, i : i + block_q] / d**0.5\n"
        "        n = q.shape[2]\n"
        "        stop = min(L_k, i + n) if causal else L_k\n"
        "        m = torch.full((B, H, n), -math.inf, dtype=Q.dtype)\n"
        "        l = torch.zeros(B, H, n, dtype=Q.dtype)\n"
        "        for j in range(0, stop, block_k):\n"
        "            s = q @ K[:, :, j : j + block_k].transpose(-2, -1)\n"
        "            if causal:\n"
        "                cols = torch.arange(j, j + s.shape[-1])\n"
        "                s = s.masked_fill(cols > torch.arange(i, i + n)[:, None], -math.inf)\n"
        "            m_new = torch.maximum(m, s.amax(dim=-1))\n"
        "            l = l * torch.exp(m - m_new) + torch.exp(s - m_new[..., None]).sum(dim=-1)\n"
        "            m = m_new\n"
        "        row_lse = m + torch.log(l)\n"
        "        acc = torch.zeros(B, H, n, d, dtype=Q.dtype)\n"
        "        for j in range(0, stop, block_k):\n"
        "            s = q @ K[:, :, j : j + block_k].transpose(-2, -1)\n"
        "            if causal:\n"
        "                cols = torch.arange(j, j + s.shape[-1])\n"
        "                s = s.masked_fill(cols > torch.arange(i, i + n)[:, None], -math.inf)\n"
        "            acc = acc + torch.exp(s - row_lse[..., None]) @ V[:, :, j : j + block_k]\n"
        "        O[:, :, i : i + n] = acc\n"
        "        lse[:, :, i : i + n] = row_lse\n"
        "    return O, lse\n",
        (FOOTPRINT,),
    ),
    (
        "fused_attention_inside",
        sub(
            FF,
            "    return O, lse",
            "    return torch.nn.functional.scaled_dot_product_attention(Q, K, V, is_causal=causal), lse",
        ),
        ("p3_tiles_rules", FOOTPRINT),
    ),
]
P3_BLOCKS = [
    (
        "loop_over_query_blocks",
        "def causal_blocks(L, block_q, block_k):\n"
        "    count = 0\n"
        "    for i in range(0, L, block_q):\n"
        "        count += (min(i + block_q, L) - 1) // block_k + 1\n"
        "    return count\n",
        (),
    ),
    (
        "all_blocks_counted",
        sub(CB, "return int((last // block_k + 1).sum())", "return n_q * -(-L // block_k)"),
        ("p3_causal_blocks",),
    ),
    (
        "diagonal_blocks_left_out",
        sub(CB, "return int((last // block_k + 1).sum())", "return int((last // block_k).sum())"),
        ("p3_causal_blocks",),
    ),
]

# ------------------------------------------------------------------- Part 4
IO, MINE = "p4_io_answer", "p4_mine_answer"
STANDARD = "return (2 * N * d + N * N) + (N * N + N * N) + (N * N + N * d + N * d)  # S, P, O steps"
TILED = "return N * d + query_blocks * 2 * N * d + N * d + N  # Q, K and V per block, O, lse"
P4_IO = [
    (
        "factored",
        sub(
            IO,
            STANDARD,
            "return 4 * N * (N + d)",
            TILED,
            "return 2 * N * d * (1 + query_blocks) + N",
        ),
        (),
    ),
    (
        "math_ceil_and_int_division",
        sub(
            IO,
            "query_blocks = -(-N // block_q)",
            "query_blocks = math.ceil(N / block_q)",
            "return M // (4 * d)",
            "return int(M / (4 * d))",
        ),
        (),
    ),
    (
        "S_and_P_counted_once",
        sub(IO, STANDARD, "return 2 * N * d + 2 * N * N + 2 * N * d"),
        ("p4_io_counts",),
    ),
    ("K_and_V_read_once", sub(IO, TILED, "return 4 * N * d + N"), ("p4_io_counts",)),
    ("last_query_block_left_out", sub(IO, "-(-N // block_q)", "N // block_q"), ("p4_io_counts",)),
    (
        "lse_not_written",
        sub(IO, TILED, "return N * d + query_blocks * 2 * N * d + N * d"),
        ("p4_io_counts",),
    ),
    ("output_write_left_out", sub(IO, STANDARD, "return 3 * N * d + 4 * N * N"), ("p4_io_counts",)),
    (
        "two_blocks_in_fast_memory",
        sub(IO, "return M // (4 * d)", "return M // (2 * d)"),
        ("p4_io_counts",),
    ),
]
P4_MINE = [
    (
        "typed_formulas_inline",
        sub(
            MINE,
            "io_ratio_mine = _standard / _tiled",
            "io_ratio_mine = (4 * _N * _d + 4 * _N * _N) / _tiled",
        ),
        (),
    ),
    (
        "ratio_rounded_to_4_digits",
        sub(
            MINE,
            "io_ratio_mine = _standard / _tiled",
            "io_ratio_mine = float(f'{_standard / _tiled:.4g}')",
        ),
        (),
    ),
    (
        "ratio_upside_down",
        sub(MINE, "io_ratio_mine = _standard / _tiled", "io_ratio_mine = _tiled / _standard"),
        ("p4_io_mine",),
    ),
    (
        "B_from_one_block",
        sub(MINE, "B_mine = _M // (4 * _d)", "B_mine = _M // _d"),
        ("p4_io_mine",),
    ),
]

# ------------------------------------------------------------------- Part 5
SD = "p5_split_answer"
MERGE_LOOP = (
    "    for c in range(1, chunks):\n"
    "        result = merge(result, (m[..., c], l[..., c], o[..., c, :]))\n"
)
P5_SPLIT = [
    (
        "tree_of_merges",
        sub(
            SD,
            "    result = (m[..., 0], l[..., 0], o[..., 0, :])\n" + MERGE_LOOP,
            "    level = [(m[..., c], l[..., c], o[..., c, :]) for c in range(chunks)]\n"
            "    while len(level) > 1:\n"
            "        pairs = [merge(level[k], level[k + 1]) for k in range(0, len(level) - 1, 2)]\n"
            "        level = pairs + level[len(level) - len(level) % 2 :]\n"
            "    result = level[0]\n",
        ),
        (),
    ),
    (
        "merged_from_the_last_chunk",
        sub(
            SD,
            "    result = (m[..., 0], l[..., 0], o[..., 0, :])\n" + MERGE_LOOP,
            "    result = (m[..., -1], l[..., -1], o[..., -1, :])\n"
            "    for c in range(chunks - 2, -1, -1):\n"
            "        result = merge((m[..., c], l[..., c], o[..., c, :]), result)\n",
        ),
        (),
    ),
    (
        "float32_and_cat_padding",
        sub(
            SD,
            "    B, H, L, d = K.shape\n",
            "    dtype = q.dtype\n    q, K, V = q.float(), K.float(), V.float()\n    B, H, L, d = K.shape\n",
            "torch.nn.functional.pad(K, (0, 0, 0, pad))",
            "torch.cat([K, K.new_zeros(B, H, pad, d)], 2)",
            "    return o / l[..., None], m + torch.log(l)",
            "    return (o / l[..., None]).to(dtype), (m + torch.log(l)).to(dtype)",
        ),
        (),
    ),
    (
        "scores_by_broadcast_matmul",
        sub(
            SD,
            's = torch.einsum("bhd,bhcnd->bhcn", q, K_c) / d**0.5',
            "s = (K_c @ q[:, :, None, :, None]).squeeze(-1) / d**0.5",
        ),
        (),
    ),
    (
        "remainder_keys_dropped",
        sub(
            SD,
            "    size = -(-L // chunks)  # keys per chunk, the last chunk shorter\n",
            "    size = L // chunks\n    K, V, L = K[:, :, : size * chunks], V[:, :, : size * chunks], size * chunks\n",
        ),
        ("p5_split_decode",),
    ),
    ("lse_without_the_max", sub(SD, "m + torch.log(l)", "torch.log(l)"), ("p5_split_decode",)),
    (
        "padding_not_masked",
        sub(SD, '    s = s.masked_fill(~real, float("-inf"))  # padded slots are no keys\n', ""),
        ("p5_split_decode",),
    ),
    ("lse_is_the_max", sub(SD, "m + torch.log(l)", "m"), ("p5_split_decode",)),
    (
        "not_scaled",
        sub(SD, " / d**0.5  # (B, H, c, size)", "  # (B, H, c, size)"),
        ("p5_split_decode",),
    ),
    (
        "chunks_normalised_before_merging",
        sub(
            SD,
            'torch.einsum("bhcn,bhcnd->bhcd", p, V_c)',
            'torch.einsum("bhcn,bhcnd->bhcd", p / p.sum(-1, keepdim=True), V_c)',
        ),
        ("p5_split_decode",),
    ),
    (
        "all_keys_at_once_without_merge",
        "def split_decode(q, K, V, chunks):\n"
        "    s = torch.einsum('bhd,bhnd->bhn', q, K) / math.sqrt(q.shape[-1])\n"
        "    lse = s.amax(-1) + torch.log(torch.exp(s - s.amax(-1, keepdim=True)).sum(-1))\n"
        "    return torch.einsum('bhn,bhnd->bhd', torch.exp(s - lse[..., None]), V), lse\n",
        ("p5_split_rules",),
    ),
    (
        "fused_attention",
        sub(
            SD,
            "    return o / l[..., None], m + torch.log(l)",
            "    o = torch.nn.functional.scaled_dot_product_attention(q[:, :, None], K, V)[:, :, 0]\n"
            "    return o, m + torch.log(l)",
        ),
        ("p5_split_rules",),
    ),
]

CASES = cases_table(
    GROUPS,
    [("p1_softmax", *row) for row in P1_SOFTMAX]
    + [("p1_own", *row) for row in P1_OWN]
    + [("p2_online", *row) for row in P2_ONLINE]
    + [("p2_merge", *row) for row in P2_MERGE]
    + [("p3_tiles", *row) for row in P3_TILES]
    + [("p3_blocks", *row) for row in P3_BLOCKS]
    + [("p4_io", *row) for row in P4_IO]
    + [("p4_mine", *row) for row in P4_MINE]
    + [("p5_split", *row) for row in P5_SPLIT],
)
CASES += [Case(f"p6_{c.group}", c.name, c.answers, c.fails, c.note, c.alone) for c in PART6_CASES]
MESSAGES = {f"p6_{case}": message for case, message in PART6_MESSAGES.items()}
