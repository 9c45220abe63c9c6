"""Part 6 of ``attention_at_scale``: the recall data, the layers' caches, causality, one step.

The grader never trains: it checks the generator's properties on batches it asks for with a
secret seed and sizes, each layer's count of cached elements, that no output reads a later
token, and that one ``train_step`` on a batch it draws lowers the loss (``training``).
"""

import torch

from attncourse.judge.checks import answer, call, describe, fail, integer, rng_for
from attncourse.judge.remote import StudentNamespace

from .references import IGNORE

PART_DATA, PART_LAYERS = "Part 6(a)", "Part 6(b)"


def _batch(fn, sizes, seed):
    """The student's (tokens, targets) for ``sizes`` and ``seed``, as integer tensors."""
    B, N, Q, K, V = sizes
    what = f"{PART_DATA}: mqar_batch({B}, {N}, {Q}, {K}, {V}, seed={seed})"
    got = call(fn, (B, N, Q, K, V, seed), what)
    if type(got) not in (tuple, list) or len(got) != 2:
        fail(f"{what} must return (tokens, targets)", "a pair of tensors", describe(got))
    out = []
    for name, value in zip(("tokens", "targets"), got, strict=True):
        if type(value) is not torch.Tensor or value.dtype != torch.int64:
            fail(f"{what}: {name}", "a torch.long tensor (embedding indices)", describe(value))
        if tuple(value.shape) != (B, 2 * N + Q):
            fail(f"{what}: {name} has the wrong shape", (B, 2 * N + Q), tuple(value.shape))
        out.append(value)
    return what, out[0], out[1]


def _distinct(rows):
    """True when no row of ``rows`` (B, n) repeats an entry."""
    return bool((rows.sort(-1).values.diff(dim=-1) != 0).all())


def _check_layout(what, tokens, targets, N, K, V):
    """Keys and values where the task puts them, distinct, from their vocabularies; each query a
    key of its context, its target the value that followed that key, IGNORE elsewhere."""
    keys, values, queries = tokens[:, 0 : 2 * N : 2], tokens[:, 1 : 2 * N : 2], tokens[:, 2 * N :]
    if not (bool((keys >= 0).all()) and bool((keys < K).all())):
        fail(f"{what}: keys", f"tokens 0 .. {K - 1} at positions 0, 2, ..., 2N-2", "others")
    if not (bool((values >= K).all()) and bool((values < K + V).all())):
        cause: str | None = (
            "values from the key vocabulary: values are n_keys .. n_keys + n_values - 1"
        )
        fail(f"{what}: values", f"tokens {K} .. {K + V - 1} at odd positions", "others", cause)
    for name, rows in (("keys", keys), ("values", values), ("queries", queries)):
        if not _distinct(rows):
            fail(
                f"{what}: {name} repeat within a sequence",
                f"the {name} of a sequence all distinct",
                "a repeat",
                f"{name} drawn with replacement: draw them without (a permutation)",
            )
    match = queries[:, :, None] == keys[:, None, :]  # (B, Q, N): which pair each query asks
    if not bool((match.sum(-1) == 1).all()):
        fail(f"{what}: a query that is not a key of its context", "each query a context key")
    answer_ = (match.to(torch.int64) * values[:, None, :]).sum(-1)  # (B, Q)
    if not bool((targets[:, : 2 * N] == IGNORE).all()):
        fail(f"{what}: targets of the context", f"{IGNORE} at every context position", "others")
    if not bool((targets[:, 2 * N :] == answer_).all()):
        shifted = torch.roll(values, -1, 1)
        cause = None
        if bool((targets[:, 2 * N :] == queries).all()):
            cause = "the target is the query key itself: it is the value that followed it"
        elif bool(
            ((match.to(torch.int64) * shifted[:, None, :]).sum(-1) == targets[:, 2 * N :]).all()
        ):
            cause = "off by one pair: the target is the value right after the query's key"
        fail(f"{what}: the target of a query", "the value that followed its key", "others", cause)
    return match.to(torch.int64).argmax(-1)  # (B, Q): the pair each query asks


# The elements cached per token per layer of each attention layer: the reference and the
# named mistakes beside it.


def cache_expected(kind: str, H: int, G: int | None, d_h: int, r: int, d_R: int) -> int:
    """Elements cached per token per layer: a key and a value per key/value head (MHA: G = H,
    MQA: G = 1); MLA the latent and the one rotary key all heads share."""
    return r + d_R if kind == "mla" else 2 * G * d_h  # type: ignore[operator]  # G: None for MLA only


def cache_mistakes(kind: str, H: int, G: int, d_h: int, r: int, d_R: int) -> dict[int, str]:
    """{wrong count: the named mistake that gives it}; where the secret sizes make two
    mistakes give the same count, both are named (the count cannot tell them apart)."""
    if kind == "mla":
        table = [
            (r, "the rotary key forgotten: MLA caches the latent c_s and the rotary key k^R_s"),
            (r + H * d_R, "one rotary key per head: all heads share one k^R_s"),
            (2 * r + d_R, "the latent counted twice (for K and for V): one c_s serves both"),
            (2 * (r + d_R), "K and V counted separately: c_s and k^R_s are cached once"),
            (2 * H * d_h, "the up-projected keys and values counted: they are rebuilt, not cached"),
        ]
    else:
        table = [
            (G * d_h, "K and V counted once: every key/value head caches a key and a value"),
            (
                2 * H * d_h,
                "heads instead of key/value heads: only the G key/value heads are cached",
            ),
            (H * d_h, "heads instead of key/value heads, and K and V counted once"),
            (
                2 * (H // G) * d_h,
                "H/G heads: the G key/value heads are cached, H/G query heads share each",
            ),
        ]
    expected = cache_expected(kind, H, G, d_h, r, d_R)
    named: dict[int, list[str]] = {}
    for count, name in table:
        if count != expected:
            named.setdefault(count, []).append(name)
    return {count: "; or ".join(names) for count, names in named.items()}


def check_mqar_batch(ns: StudentNamespace) -> None:
    """Part 6(a): shapes, layout, distinct keys/values/queries, answers in context, the seed."""
    fn = answer(ns, "mqar_batch", PART_DATA)
    rng = rng_for("p6_mqar_batch")
    N = rng.randint(6, 12)
    sizes = (rng.randint(200, 300), N, rng.randint(4, N), N + rng.randint(3, 2 * N), 0)
    sizes = (*sizes[:4], N + rng.randint(2, 2 * N))
    B, _, Q, K, V = sizes
    seed = rng.randint(1, 2**31 - 1)
    what, tokens, targets = _batch(fn, sizes, seed)
    asked = _check_layout(what, tokens, targets, N, K, V)
    if int((asked == torch.arange(Q)).all(-1).sum()) > B // 2:
        fail(
            f"{what}: which pairs the queries ask",
            "a random choice of pairs in a random order",
            "the first pairs, in context order, in most sequences",
            "queries taken in context order: a model can then answer by position",
        )
    for name, rows, low, size in (
        ("key", tokens[:, 0 : 2 * N : 2], 0, K),
        ("value", tokens[:, 1 : 2 * N : 2], K, V),
    ):
        unused = set(range(low, low + size)) - set(rows.unique().tolist())
        if unused:
            fail(
                f"{what}: {name} tokens over {B} sequences",
                f"every {name} token of the vocabulary drawn somewhere",
                f"{len(unused)} never drawn",
                f"{name}s drawn from part of their vocabulary only",
            )
    _, again, again_targets = _batch(fn, sizes, seed)
    if not (bool((again == tokens).all()) and bool((again_targets == targets).all())):
        fail(
            f"{what}, called twice: different batches",
            "the same batch for the same seed",
            "another",
            "the global random generator used: draw from torch.Generator().manual_seed(seed)",
        )
    _, other, _ = _batch(fn, sizes, seed + 1)
    if bool((other == tokens).all()):
        fail(
            f"{what}: seed {seed + 1} gives the same batch",
            "another batch",
            "the same",
            "seed ignored",
        )


def check_cache_elements(ns: StudentNamespace) -> None:
    """Part 6(b): cache_elements() of MHA, GQA, MQA and MLA layers of secret sizes."""
    rng = rng_for("p6_cache_accounting")
    H = rng.choice([4, 6, 8, 12])
    G = rng.choice([g for g in range(2, H) if H % g == 0])
    D, d_h = rng.choice([48, 72, 96]), rng.choice([6, 10, 14])
    r, d_R = rng.choice([20, 28, 44]), rng.choice([4, 8, 12])
    layers = {
        "mha": ("GroupedAttention", (D, H, H, d_h)),
        "gqa": ("GroupedAttention", (D, H, G, d_h)),
        "mqa": ("GroupedAttention", (D, H, 1, d_h)),
        "mla": ("LatentAttention", (D, H, d_h, r, d_R)),
    }
    for kind, (cls, args) in layers.items():
        g = {"mha": H, "gqa": G, "mqa": 1, "mla": None}[kind]
        what = f"{PART_LAYERS}: {cls}{args}.cache_elements() ({kind.upper()})"
        layer = call(answer(ns, cls, PART_LAYERS), args, f"{PART_LAYERS}: {cls}{args}")
        got = integer(call(getattr(layer, "cache_elements", None), (), what), what)
        expected = cache_expected(kind, H, g, d_h, r, d_R)
        if got != expected:
            fail(what, expected, got, cache_mistakes(kind, H, g or 1, d_h, r, d_R).get(got))


# grade_id of each Part 6 test cell -> its check (the lead merges it into the package's CHECKS)
