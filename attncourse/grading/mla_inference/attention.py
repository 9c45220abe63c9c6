"""Part 2 of ``mla_inference``: the student's MLAAttention, its attributes, its forward, its rules.

The model is built in the kernel, moved to float64 on the grading device and loaded with the
test's weights; the rule checks skip the student's ``rope`` (graded in Part 1).
"""

import math
from typing import Any

import torch

from attncourse.judge.checks import (
    Deferred,
    answer,
    call,
    check_attributes,
    check_no_bias,
    fail,
    generator,
    linear_layer,
    load_linear,
    randn,
    rng_for,
    tensor,
    to_grading,
)
from attncourse.judge.remote import StudentNamespace
from attncourse.judge.rulebook import NO_FUSED, NO_LOOPS, Rule, prove, proves

from .references import mla_mistakes, mla_reference
from .rope import close, with_rope
from .tolerances import VALUES_TOL

LAYERS = ("W_DKV", "W_UK", "W_UV", "W_Q", "W_QR", "W_KR", "W_O")


def mla_dims(test_id: str) -> dict[str, int]:
    """Secret dimensions, pairwise distinct, d_h and d_R even (so a rotated content part exists)."""
    rng = rng_for(test_id)
    while True:
        dims = {
            "D": rng.randint(6, 13),
            "H": rng.choice([2, 3, 5]),
            "d_h": rng.choice([4, 6, 8]),
            "r": rng.choice([3, 5, 7, 9]),
            "d_R": rng.choice([2, 4, 6]),
        }
        if len(set(dims.values())) == 5:
            return dims


def mla_args(dims: dict[str, int]) -> tuple[int, ...]:
    """MLAAttention's constructor arguments (D, H, d_h, r, d_R)."""
    return tuple(dims[k] for k in ("D", "H", "d_h", "r", "d_R"))


def _shapes(dims):
    """(out, in) of each projection of MLAAttention."""
    D, H, d_h, r, d_R = mla_args(dims)
    return {
        "W_DKV": (r, D),
        "W_UK": (H * d_h, r),
        "W_UV": (H * d_h, r),
        "W_Q": (H * d_h, D),
        "W_QR": (H * d_R, D),
        "W_KR": (d_R, D),
        "W_O": (D, H * d_h),
    }


def _weights(test_id, dims):
    """The test's weights: entries N(0, 1/fan_in), so every score is of order one."""
    gen = generator(f"{test_id}/weights")
    return {n: randn(gen, *s, scale=1 / math.sqrt(s[1])) for n, s in _shapes(dims).items()}


def _build(ns, part, dims):
    """The student's MLAAttention(D, H, d_h, r, d_R) in the kernel (a handle)."""
    cls = answer(ns, "MLAAttention", part)
    args = mla_args(dims)
    cause = None if part.startswith("Part 2") else "Part 3 runs on your MLAAttention of Part 2"
    return call(cls, args, f"{part}: MLAAttention{args}", cause)


def _set_linear(model, name, weight, part):
    """Load ``weight`` into ``model.<name>`` in the kernel (a bias, if any, is zeroed)."""
    cause = "see the attribute test of Part 2"
    load_linear(model, name, weight, part, cause, lambda _: cause, expected="an nn.Module")


def loaded_model(
    ns: StudentNamespace, part: str, dims: dict[str, int], test_id: str
) -> tuple[Any, dict[str, torch.Tensor]]:
    """(model in float64 on the grading device with the test's weights, the weights)."""
    model = _build(ns, part, dims)
    model = to_grading(ns, model, part, f"{part}: model", expected="an nn.Module")
    weights = _weights(test_id, dims)
    for name, weight in weights.items():
        _set_linear(model, name, weight, part)
    return model, weights


def _shape_mistakes(name, dims):
    """Wrong shapes of the layer ``name`` -> the mistake each shows."""
    D, H, d_h, r, d_R = mla_args(dims)
    found = {
        "W_KR": {(H * d_R, D): "one rotary key per head: the rotary key is shared by all heads"},
        "W_DKV": {(r * H, D): "a latent per head: the latent is shared by all heads"},
    }.get(name, {})
    expected = _shapes(dims)[name]
    found[expected[::-1]] = "nn.Linear(in, out) stores its weight as (out, in)"
    return found


def check_mla_attributes(ns: StudentNamespace) -> None:
    """Part 2: attributes, bias-free nn.Linear layers of the task's shapes, output shape."""
    part = "Part 2"
    dims = mla_dims("p2_mla_attributes")
    model = _build(ns, part, dims)
    check_attributes(model, "MLAAttention", dims, part, f" of MLAAttention{mla_args(dims)}")
    for name, shape in _shapes(dims).items():
        layer, weight = linear_layer(model, name, part)
        got = tuple(weight.shape)
        if got != shape:
            fail(
                f"{part}: {name}.weight of MLAAttention{mla_args(dims)}",
                shape,
                got,
                _shape_mistakes(name, dims).get(got),
            )
        check_no_bias(layer, name, part)
    rng = rng_for("p2_mla_attributes/x")
    B, L = rng.randint(2, 4), rng.randint(3, 7)
    model = to_grading(ns, model, part, f"{part}: model", expected="an nn.Module")
    x = randn(generator("p2_mla_attributes/x"), B, L, dims["D"])
    out = tensor(call(model, (ns.on_device(x),), f"{part}: forward(x)", no_grad=True), "forward")
    if tuple(out.shape) != (B, L, dims["D"]):
        fail(
            f"{part}: output shape of forward(x) for x ({B}, {L}, {dims['D']})",
            (B, L, dims["D"]),
            tuple(out.shape),
        )


MLA_BY_HAND = (Rule(NO_FUSED, "MLAAttention", "Part 2"),)
# rope and its helpers are graded in Part 1(a)
MLA_RULES = (*MLA_BY_HAND, Rule(NO_LOOPS, "MLAAttention", "Part 2", skip_reached_from=("rope",)))


@proves(*MLA_BY_HAND)
def check_mla_forward(ns: StudentNamespace) -> None:
    """Part 2: forward(x) matches the float64 head-by-head reference with the test's weights."""
    part = "Part 2"
    answer(ns, "MLAAttention", part)
    prove(MLA_BY_HAND, ns)
    for trial in range(2):
        dims = mla_dims(f"p2_mla_forward/{trial}")
        model, w = loaded_model(ns, part, dims, f"p2_mla_forward/{trial}")
        rng = rng_for(f"p2_mla_forward/x{trial}")
        B, L = rng.randint(1, 3), rng.randint(5, 11)
        x = randn(generator(f"p2_mla_forward/x{trial}"), B, L, dims["D"])
        what = f"{part}: forward(x) of MLAAttention{mla_args(dims)} for x ({B}, {L}, {dims['D']})"
        got = call(model, (ns.on_device(x),), what, no_grad=True)

        def attempt(rotate, got=got, x=x, w=w, dims=dims, what=what):
            close(
                what,
                got,
                mla_reference(x, w, dims, rotate),
                VALUES_TOL,
                Deferred(mla_mistakes, x, w, dims, rotate),
                shape_cause="the output is (B, L, D)",
            )

        with_rope(ns, attempt)


def runs_mla(ns: StudentNamespace, part: str) -> tuple[Any, torch.Tensor]:
    """The rule points are for a model that works: build a small one and run it, in float64
    on the grading device as the value checks do (a rope that mishandles float32 inputs costs
    Part 1(a) only). Returns (model, x) with x (1, 3, 6) in float64 on this side."""
    dims = {"D": 6, "H": 2, "d_h": 4, "r": 3, "d_R": 2}
    model = _build(ns, part, dims)
    model = to_grading(ns, model, part, f"{part}: model", expected="an nn.Module")
    x = randn(generator(f"{part}/runs"), 1, 3, 6)
    what = f"{part}: forward (the rules are checked on a working answer)"
    call(model, (ns.on_device(x),), what, no_grad=True)
    return model, x


@proves(*MLA_RULES)
def check_mla_rules(ns: StudentNamespace) -> None:
    """Part 2: no loop and no fused attention in MLAAttention (its helpers included, rope aside)."""
    runs_mla(ns, "Part 2")
    prove(MLA_RULES, ns)
