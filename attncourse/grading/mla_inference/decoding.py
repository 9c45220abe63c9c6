"""Part 3(b) of ``mla_inference``: decode_step, its latent cache, its output, its rules."""

from typing import Any

import torch

from attncourse.judge.checks import (
    Deferred,
    answer,
    call,
    describe,
    fail,
    generator,
    randn,
    rng_for,
    tensor,
)
from attncourse.judge.remote import StudentNamespace
from attncourse.judge.rulebook import NEVER_NAMES, NO_FUSED, NO_LOOPS, USES, Rule, prove, proves

from .absorption import pair
from .attention import (
    loaded_model,
    mla_args,
    mla_dims,
    runs_mla,
)
from .references import decode_mistakes, mla_reference
from .rope import close, with_rope
from .tolerances import VALUES_TOL


def _decode(ns, fn, model, x_t, cache, what):
    """One call of the student's decode_step; (y_t, cache as data)."""
    sent = None
    if cache is not None:
        if type(cache) is not dict:
            fail(
                f"{what}: the cache must be a dict",
                "{'c': (B, L, r), 'k_rope': (B, L, d_R)}",
                describe(cache),
            )
        sent = {k: ns.on_device(tensor(v, f"{what}: cache[{k!r}]")) for k, v in cache.items()}
    out = pair(call(fn, (model, ns.on_device(x_t), sent), what, no_grad=True), what, "(y_t, cache)")
    return out[0], out[1]


def _check_cache_layout(cache, B, L, dims, what):
    """The returned cache is exactly {"c": (B, L, r), "k_rope": (B, L, d_R)}."""
    D, H, d_h, r, d_R = mla_args(dims)
    if type(cache) is not dict:
        fail(f"{what}: the cache must be a dict", "{'c': ..., 'k_rope': ...}", describe(cache))
    extra = sorted(set(cache) - {"c", "k_rope"})
    missing = sorted({"c", "k_rope"} - set(cache))
    if extra:
        fail(
            f"{what}: the cache holds more than c and k_rope",
            "exactly the keys 'c' and 'k_rope'",
            f"extra keys {extra}",
            "caching the up-projected keys or values (or a position): MLA caches only the "
            "latent and the rotary key; absorption makes keys and values unnecessary",
        )
    if missing:
        fail(f"{what}: the cache lacks {missing}", "the keys 'c' and 'k_rope'", sorted(cache))
    c_shapes = {
        (B, L, H * d_h): "c holds up-projected keys or values (H*d_h per token), not the latent",
        (B, H, L, r): "one latent per head: the latent is shared by all heads, cache it once",
        (B, L, 2 * r): "the latent cached twice (for keys and values): it serves both",
        (L, B, r): "axes swapped: the cache is (B, L, r)",
        (B, L + 1, r): "one row too many: the cache holds one row per token so far",
        (B, L - 1, r): "the new token's latent was not appended",
    }
    k_shapes = {
        (B, L, H * d_R): "one rotary key per head: the rotary key is shared by all heads",
        (B, H, L, d_R): "one rotary key per head: the rotary key is shared by all heads",
        (B, L, H * d_h): "content keys cached: only the rotary key is cached",
        (L, B, d_R): "axes swapped: k_rope is (B, L, d_R)",
        (B, L - 1, d_R): "the new token's rotary key was not appended",
    }
    for key, expected, named in (("c", (B, L, r), c_shapes), ("k_rope", (B, L, d_R), k_shapes)):
        got = tuple(tensor(cache[key], f"{what}: cache[{key!r}]").shape)
        if got != expected:
            fail(f"{what}: shape of cache[{key!r}] after {L} tokens", expected, got, named.get(got))


def check_decode_cache(ns: StudentNamespace) -> None:
    """Part 3(b): decode_step caches exactly c (B, L, r) and the rotated k_rope (B, L, d_R)."""
    part = "Part 3(b)"
    fn = answer(ns, "decode_step", part)
    dims = mla_dims("p3_decode_cache")
    model, w = loaded_model(ns, part, dims, "p3_decode_cache")
    rng = rng_for("p3_decode_cache/x")
    B, steps = rng.randint(2, 4), 3
    x = randn(generator("p3_decode_cache/x"), B, steps, dims["D"])
    cache: Any = None  # the student's cache, as their decode_step returned it
    for t in range(steps):
        what = f"{part}: decode_step after {t + 1} token(s) (B = {B})"
        _, cache = _decode(ns, fn, model, x[:, t], cache, what)
        _check_cache_layout(cache, B, t + 1, dims, what)
    what = f"{part}: the cache after {steps} tokens"
    close(
        f"{what}: c",
        cache["c"],
        x @ w["W_DKV"].T,
        VALUES_TOL,
        {"c holds x, not the latent W_DKV x": x},
        shape_cause="c is (B, L, r)",
    )
    raw = x @ w["W_KR"].T  # (B, L, d_R)

    def attempt(rotate):
        positions = torch.arange(steps)
        close(
            f"{what}: k_rope",
            cache["k_rope"],
            rotate(raw, positions),
            VALUES_TOL,
            {
                "k_rope cached before rotation: cache R_s W_KR x_s, rotated once when written": raw,
                "positions counted from 1: token s is rotated at s, the first at 0": rotate(
                    raw, positions + 1
                ),
                "every cached key rotated at the newest position t, not at its own s": rotate(
                    raw, torch.full((steps,), steps - 1)
                ),
            },
        )

    with_rope(ns, attempt)


def check_decode_forward(ns: StudentNamespace) -> None:
    """Part 3(b): token-by-token decoding equals the full causal forward (float64)."""
    part = "Part 3(b)"
    fn = answer(ns, "decode_step", part)
    dims = mla_dims("p3_decode_forward")
    model, w = loaded_model(ns, part, dims, "p3_decode_forward")
    rng = rng_for("p3_decode_forward/x")
    B, L = rng.randint(1, 3), rng.randint(5, 8)
    x = randn(generator("p3_decode_forward/x"), B, L, dims["D"])
    rows, cache = [], None
    for t in range(L):
        what = f"{part}: decode_step for token {t} (B = {B})"
        y_t, cache = _decode(ns, fn, model, x[:, t], cache, what)
        y_t = tensor(y_t, f"{what}: y_t")
        if tuple(y_t.shape) != (B, dims["D"]):
            fail(f"{what}: shape of y_t", (B, dims["D"]), tuple(y_t.shape))
        rows.append(y_t)
    got = torch.stack(rows, dim=1)  # (B, L, D)
    what = f"{part}: {L} decode steps from an empty cache, MLAAttention{mla_args(dims)}"

    def from_empty(rotate):
        close(
            what,
            got,
            mla_reference(x, w, dims, rotate),
            VALUES_TOL,
            Deferred(decode_mistakes, x, w, dims, rotate),
        )

    with_rope(ns, from_empty)

    # One step from a cache the judge wrote, far into a sequence.
    L0 = rng.randint(20, 60)
    x2 = randn(generator("p3_decode_forward/x2"), B, L0 + 1, dims["D"])
    what = f"{part}: one decode step at position {L0} from a cache of {L0} tokens"

    def from_cache(rotate):
        prefix = x2[:, :L0]
        cache = {
            "c": prefix @ w["W_DKV"].T,
            "k_rope": rotate(prefix @ w["W_KR"].T, torch.arange(L0)),
        }
        y_t, _ = _decode(ns, fn, model, x2[:, L0], cache, what)
        close(
            what,
            y_t,
            mla_reference(x2, w, dims, rotate)[:, L0],
            VALUES_TOL,
            Deferred(decode_mistakes, x2, w, dims, rotate, step=True),
            shape_cause="y_t is (B, D)",
        )

    with_rope(ns, from_cache)


# rope (Part 1(a)) and MLAAttention (Part 2) are graded in their own parts
_GRADED_ELSEWHERE: dict[str, Any] = {"skip": ("MLAAttention",), "skip_reached_from": ("rope",)}
DECODE_RULES = (
    Rule(
        USES,
        "decode_step",
        "Part 3(b)",
        word="latent_query",
        expected="get its queries from latent_query(model, x_t, t)",
    ),
    Rule(NO_FUSED, "decode_step", "Part 3(b)"),
    Rule(NO_LOOPS, "decode_step", "Part 3(b)", **_GRADED_ELSEWHERE),
    Rule(NO_FUSED, "latent_query", "Part 3(b)"),
    Rule(NO_LOOPS, "latent_query", "Part 3(b)", **_GRADED_ELSEWHERE),
    Rule(
        NEVER_NAMES,
        "decode_step",
        "Part 3(b)",
        skip=("MLAAttention",),
        skip_reached_from=("rope", "latent_query"),
        word="W_UK",
        expected="W_UK only inside latent_query, absorbed into the query",
        why="rebuilding keys from the cached latents: with W_UK absorbed into the query the "
        "keys are never formed",
    ),
)


@proves(*DECODE_RULES)
def check_decode_rules(ns: StudentNamespace) -> None:
    """Part 3(b): decode_step uses latent_query, never W_UK itself, no loop, no fused attention."""
    part = "Part 3(b)"
    fn = answer(ns, "decode_step", part)
    model, x = runs_mla(ns, part)
    call(
        fn,
        (model, ns.on_device(x[:, 0]), None),
        f"{part}: decode_step (the rules are checked on a working answer)",
        no_grad=True,
    )
    prove(DECODE_RULES, ns)
