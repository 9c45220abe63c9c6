"""Alternative correct answers and named wrong answers for Part 6 of attention_at_scale.

Rows in ``casetable``'s format (:func:`casetable.cases_table`); they are judged on Part 6 run
alone (``tests/helpers/fragmentrun.py``). Each row replaces
answer cells of the solution and names the test cells that must then fail; every other test
cell must keep its points. ``RecallModel`` runs on the student's layers, so ``p6_train_step``
reads the layers' cell too (``DEPENDS``): every layer row below still trains.
"""

from casetable import cases_table
from fragmentrun import SOLUTION

GROUPS = {
    "mqar": (("p6_mqar_answer",), ("p6_mqar_batch",)),
    "layers": (("p6_attention_answer",), ("p6_cache_accounting", "p6_causality")),
    "step": (("p6_train_step_answer",), ("p6_train_step",)),
}
DEPENDS = {"p6_train_step": {"p6_attention_answer"}}
MLA_CLASS = "class LatentAttention"


def sub(cell, *pairs, after=""):
    """The solution's ``cell`` with each (old, new) replaced once, in the text after ``after``;
    every old text must occur there."""
    text = SOLUTION[cell]
    head, tail = text.split(after, 1) if after else ("", text)
    for old, new in zip(pairs[::2], pairs[1::2], strict=True):
        assert old in tail, f"{cell}: {old!r} not in the solution"
        tail = tail.replace(old, new, 1)
    return head + after + tail if after else tail


def mqar(*pairs):
    return sub("p6_mqar_answer", *pairs)


def layers(*pairs, mla=False):
    return sub("p6_attention_answer", *pairs, after=MLA_CLASS if mla else "")


def step(*pairs):
    return sub("p6_train_step_answer", *pairs)


KEYS = "keys = torch.rand(B, n_keys, generator=gen).argsort(-1)[:, :N]"
VALUES = "values = n_keys + torch.rand(B, n_values, generator=gen).argsort(-1)[:, :N]"
ASKED = "asked = torch.rand(B, N, generator=gen).argsort(-1)[:, :Q]"
MQAR_LOOP = """def mqar_batch(batch_size, n_pairs, n_queries, n_keys, n_values, seed):
    gen = torch.Generator().manual_seed(seed)
    rows, answers = [], []
    for _ in range(batch_size):
        keys = torch.randperm(n_keys, generator=gen)[:n_pairs]
        values = n_keys + torch.randperm(n_values, generator=gen)[:n_pairs]
        asked = torch.randperm(n_pairs, generator=gen)[:n_queries]
        pairs = torch.stack([keys, values], 1).flatten()
        rows.append(torch.cat([pairs, keys[asked]]))
        answers.append(torch.cat([torch.full((2 * n_pairs,), -100), values[asked]]))
    return torch.stack(rows), torch.stack(answers)
"""
MQAR_NUMPY = """def mqar_batch(batch_size, n_pairs, n_queries, n_keys, n_values, seed):
    rng = np.random.default_rng(seed)
    B, N, Q = batch_size, n_pairs, n_queries
    keys = np.argsort(rng.random((B, n_keys)), axis=1)[:, :N]
    values = n_keys + np.argsort(rng.random((B, n_values)), axis=1)[:, :N]
    asked = np.argsort(rng.random((B, N)), axis=1)[:, :Q]
    tokens = np.zeros((B, 2 * N + Q), dtype=np.int64)
    tokens[:, 0 : 2 * N : 2], tokens[:, 1 : 2 * N : 2] = keys, values
    tokens[:, 2 * N :] = np.take_along_axis(keys, asked, 1)
    targets = np.full((B, 2 * N + Q), -100, dtype=np.int64)
    targets[:, 2 * N :] = np.take_along_axis(values, asked, 1)
    return torch.from_numpy(tokens), torch.from_numpy(targets)
"""

MQAR_ROWS = [
    ("mqar", "randperm_per_sequence_loop", MQAR_LOOP, ()),
    ("mqar", "numpy_generator_from_the_seed", MQAR_NUMPY, ()),
    (
        "mqar",
        "multinomial_without_replacement",
        mqar(
            KEYS,
            "keys = torch.multinomial(torch.ones(B, n_keys), N, generator=gen)",
            VALUES,
            "values = n_keys + torch.multinomial(torch.ones(B, n_values), N, generator=gen)",
        ),
        (),
    ),
    (
        "mqar",
        "int32_then_long_and_scatter_layout",
        mqar(
            "context = torch.stack([keys, values], dim=-1).reshape(B, 2 * N)",
            "context = torch.zeros(B, 2 * N, dtype=torch.int32)\n"
            "    context[:, 0::2], context[:, 1::2] = keys, values\n"
            "    context = context.long()",
        ),
        (),
    ),
    (
        "mqar",
        "keys_with_replacement",
        mqar(KEYS, "keys = torch.randint(0, n_keys, (B, N), generator=gen)"),
        True,
    ),
    (
        "mqar",
        "values_with_replacement",
        mqar(VALUES, "values = n_keys + torch.randint(0, n_values, (B, N), generator=gen)"),
        True,
    ),
    (
        "mqar",
        "values_from_the_key_vocabulary",
        mqar(VALUES, "values = torch.rand(B, n_values, generator=gen).argsort(-1)[:, :N]"),
        True,
    ),
    (
        "mqar",
        "target_is_the_query_key",
        mqar("values.gather(1, asked)  #", "keys.gather(1, asked)  #"),
        True,
    ),
    (
        "mqar",
        "target_is_the_next_pairs_value",
        mqar("values.gather(1, asked)  #", "values.roll(-1, 1).gather(1, asked)  #"),
        True,
    ),
    ("mqar", "queries_in_context_order", mqar(ASKED, "asked = torch.arange(Q).expand(B, Q)"), True),
    (
        "mqar",
        "queries_with_replacement",
        mqar(ASKED, "asked = torch.randint(0, N, (B, Q), generator=gen)"),
        True,
    ),
    (
        "mqar",
        "global_random_state",
        mqar("generator=gen).argsort(-1)[:, :N]  #", ").argsort(-1)[:, :N]  #"),
        True,
    ),
    ("mqar", "seed_ignored", mqar("manual_seed(seed)", "manual_seed(0)"), True),
    (
        "mqar",
        "context_targets_zero",
        mqar("torch.full_like(tokens, -100)", "torch.zeros_like(tokens)"),
        True,
    ),
    (
        "mqar",
        "keys_from_the_first_tokens_only",
        mqar(KEYS, "keys = torch.rand(B, N, generator=gen).argsort(-1)"),
        True,
    ),
    (
        "mqar",
        "targets_shifted_for_next_token",
        mqar("targets[:, 2 * N :] = values", "targets[:, 2 * N - 1 : -1] = values"),
        True,
    ),
]

SDPA = "o = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)"
MASKED = 'o = scores.masked_fill(later, float("-inf")).softmax(-1) @ v'
GQA_COUNT = "return 2 * self.G * self.d_h"
MLA_COUNT = "return self.r + self.d_R"
LAYER_ROWS = [
    ("layers", "sdpa_is_causal", layers(MASKED, SDPA, MASKED, SDPA), ()),
    (
        "layers",
        "tril_where_and_counts_from_the_layers",
        layers(
            'o = scores.masked_fill(later, float("-inf"))',
            "seen = torch.ones(L, L, dtype=torch.bool, device=x.device).tril()\n"
            "        o = torch.where(seen, scores, -torch.inf)",
            GQA_COUNT,
            "return self.W_K.out_features + self.W_V.out_features",
            MLA_COUNT,
            "return self.W_DKV.out_features + self.W_KR.out_features",
        ),
        (),
    ),
    (
        "layers",
        "groups_by_broadcasting",
        layers(
            "k, v = k.repeat_interleave(H // G, 1), v.repeat_interleave(H // G, 1)",
            "q = q.view(B, G, H // G, L, d_h)\n        k, v = k[:, :, None], v[:, :, None]",
            "o.transpose(1, 2)",
            "o.reshape(B, H, L, d_h).transpose(1, 2)",
        ),
        (),
    ),
    (
        "layers",
        "einsum_scores_and_additive_mask",
        layers(
            "scores = q @ k.transpose(-2, -1) / (d_h + d_R) ** 0.5",
            'scores = torch.einsum("bhtd,bhsd->bhts", q, k) * (d_h + d_R) ** -0.5',
            MASKED,
            "o = (scores + torch.full((L, L), -torch.inf, dtype=x.dtype, device=x.device).triu(1))"
            ".softmax(-1) @ v",
            mla=True,
        ),
        (),
    ),
    (
        "layers",
        "rotary_key_forgotten",
        layers(MLA_COUNT, "return self.r"),
        ("p6_cache_accounting",),
    ),
    (
        "layers",
        "rotary_key_per_head",
        layers(MLA_COUNT, "return self.r + self.H * self.d_R"),
        ("p6_cache_accounting",),
    ),
    (
        "layers",
        "latent_counted_twice",
        layers(MLA_COUNT, "return 2 * self.r + self.d_R"),
        ("p6_cache_accounting",),
    ),
    (
        "layers",
        "k_and_v_counted_once",
        layers(GQA_COUNT, "return self.G * self.d_h"),
        ("p6_cache_accounting",),
    ),
    (
        "layers",
        "heads_instead_of_kv_heads",
        layers(GQA_COUNT, "return 2 * self.H * self.d_h"),
        ("p6_cache_accounting",),
    ),
    (
        "layers",
        "gqa_no_causal_mask",
        layers(MASKED, "o = scores.softmax(-1) @ v"),
        ("p6_causality",),
    ),
    (
        "layers",
        "gqa_mask_off_by_one",
        layers(".triu(1)  # s > t", ".triu(2)  # s > t"),
        ("p6_causality",),
    ),
    (
        "layers",
        "mla_no_causal_mask",
        layers(MASKED, "o = scores.softmax(-1) @ v", mla=True),
        ("p6_causality",),
    ),
    (
        "layers",
        "mla_mask_transposed",
        layers(".triu(1)  # s > t", ".tril(-1)  # s > t", mla=True),
        ("p6_causality",),
    ),
]

STEP_ROWS = [
    (
        "step",
        "log_softmax_gather",
        step(
            "loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)",
            "asked = targets != -100\n"
            "    picked = logits[asked].log_softmax(-1).gather(1, targets[asked][:, None])\n"
            "    loss = -picked.mean()",
        ),
        (),
    ),
    (
        "step",
        "class_axis_second",
        step(
            "nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)",
            "nn.functional.cross_entropy(logits.transpose(1, 2), targets)",
        ),
        (),
    ),
    ("step", "returns_a_0d_tensor", step("return loss.item()", "return loss.detach()"), ()),
    (
        "step",
        "zero_grad_after_the_step",
        step(
            "optimizer.zero_grad()\n    loss.backward()\n    optimizer.step()",
            "loss.backward()\n    optimizer.step()\n    optimizer.zero_grad(set_to_none=True)",
        ),
        (),
    ),
    ("step", "no_optimizer_step", step("    optimizer.step()\n", ""), True),
    (
        "step",
        "zero_grad_between_backward_and_step",
        step(
            "optimizer.zero_grad()\n    loss.backward()\n    optimizer.step()",
            "loss.backward()\n    optimizer.zero_grad()\n    optimizer.step()",
        ),
        True,
    ),
    ("step", "gradient_ascent", step("loss.backward()", "(-loss).backward()"), True),
    ("step", "no_backward", step("    loss.backward()\n", ""), True),
    (
        "step",
        "returns_the_loss_after_the_step",
        step(
            "return loss.item()",
            "return nn.functional.cross_entropy(model(tokens).flatten(0, 1), targets.flatten()).item()",
        ),
        True,
    ),
    (
        "step",
        "next_token_shift",
        step(
            "logits.flatten(0, 1), targets.flatten()",
            "logits[:, :-1].flatten(0, 1), targets[:, 1:].flatten()",
        ),
        True,
    ),
    (
        "step",
        "loss_summed",
        step("ignore_index=-100)", 'ignore_index=-100, reduction="sum")'),
        True,
    ),
    (
        "step",
        "ignored_positions_scored_as_token_0",
        step("targets.flatten(), ignore_index=-100", "targets.flatten().clamp(min=0)"),
        True,
    ),
]

CASES = cases_table(GROUPS, MQAR_ROWS + LAYER_ROWS + STEP_ROWS)

# Named mistakes, with the test whose hidden failure message must name them.
MESSAGES = {
    "mqar:keys_with_replacement": ("p6_mqar_batch", "keys drawn with replacement"),
    "mqar:values_with_replacement": ("p6_mqar_batch", "values drawn with replacement"),
    "mqar:values_from_the_key_vocabulary": ("p6_mqar_batch", "values from the key vocabulary"),
    "mqar:target_is_the_query_key": ("p6_mqar_batch", "the query key itself"),
    "mqar:target_is_the_next_pairs_value": ("p6_mqar_batch", "off by one pair"),
    "mqar:queries_in_context_order": ("p6_mqar_batch", "queries taken in context order"),
    "mqar:queries_with_replacement": ("p6_mqar_batch", "queries drawn with replacement"),
    "mqar:global_random_state": ("p6_mqar_batch", "global random generator"),
    "mqar:seed_ignored": ("p6_mqar_batch", "seed ignored"),
    "mqar:keys_from_the_first_tokens_only": ("p6_mqar_batch", "keys drawn from part"),
    "layers:rotary_key_forgotten": ("p6_cache_accounting", "rotary key forgotten"),
    "layers:rotary_key_per_head": ("p6_cache_accounting", "one rotary key per head"),
    "layers:latent_counted_twice": ("p6_cache_accounting", "latent counted twice"),
    "layers:k_and_v_counted_once": ("p6_cache_accounting", "K and V counted once"),
    "layers:heads_instead_of_kv_heads": ("p6_cache_accounting", "heads instead of key/value heads"),
    "layers:gqa_no_causal_mask": ("p6_causality", "no causal mask"),
    "layers:gqa_mask_off_by_one": ("p6_causality", "off by one"),
    "layers:mla_no_causal_mask": ("p6_causality", "no causal mask"),
    "step:no_optimizer_step": ("p6_train_step", "no step taken"),
    "step:gradient_ascent": ("p6_train_step", "a step up the gradient"),
    "step:returns_the_loss_after_the_step": ("p6_train_step", "the loss after the step"),
    "step:next_token_shift": ("p6_train_step", "next-token prediction"),
    "step:loss_summed": ("p6_train_step", "summed"),
}
