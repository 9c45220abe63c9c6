"""Parts 5-8 of ``attention_variants``: MyMHA, the rank of stacked copies, MyGQA and MHA as a GQA.

The student's model is built in the kernel, moved to float64 on the grading device, loaded
with the test's weights and compared with the per-head float64 reference.
"""

from typing import Any

import torch

from attncourse.judge.checks import (
    GradingError,
    answer,
    call,
    check_attributes,
    check_close,
    check_no_bias,
    fail,
    generator,
    integer,
    linear_layer,
    load_linear,
    method,
    randn,
    rng_for,
    tensor,
    to_grading,
)
from attncourse.judge.remote import Remote, StudentNamespace
from attncourse.judge.rulebook import NO_FUSED, NO_LOOPS, Rule, prove, proves

from .references import (
    attention_mistakes,
    draw_dims,
    draw_gqa_heads,
    draw_weights,
    reference_attention,
)
from .shapes import check_shape_named
from .tolerances import VALUES_TOL

FLOAT64_ONLY = (
    "the model runs in float64 here (after .double(), as the text of Part 5 says, and as the "
    "visible check does): a step taken in float32 must be cast back to the input's dtype"
)


def forward(
    ns: StudentNamespace, model: Remote, x: torch.Tensor, y: torch.Tensor, what: str
) -> Any:
    """``model(x, y)`` in the kernel without autograd, x and y sent to the grading device; a
    float64 run that mixes in float32 (a dtype error naming both) is told so."""
    try:
        return call(model, (ns.on_device(x), ns.on_device(y)), what, no_grad=True)
    except GradingError as error:
        text = str(error)
        if x.dtype == torch.float64 and "Double" in text and "Float" in text:
            fail(text, cause=FLOAT64_ONLY)
        raise


def set_linear(model: Remote, name: str, weight: torch.Tensor, part: str) -> None:
    """Load ``weight`` into the student's ``model.<name>`` in the kernel (bias zeroed if any)."""

    def shape_cause(current: tuple[int, ...]) -> str:
        rows, cols = current
        copies = name in ("W_K", "W_V") and cols == weight.shape[1] and rows % weight.shape[0] == 0
        if copies and rows > weight.shape[0]:
            return f"{rows // weight.shape[0]} copies of the {name[-1]} projection; store only its G heads"
        return "see the attribute test of this part"

    load_linear(model, name, weight, part, shape_cause=shape_cause)


def linear_shapes(spec: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Expected (out, in) shapes of the four projections of MyMHA/MyGQA."""
    D_1, D_2, D_qk, D_v, H, G = (spec[k] for k in ("D_1", "D_2", "D_qk", "D_v", "H", "G"))
    return {
        "W_Q": (H * D_qk, D_1),
        "W_K": (G * D_qk, D_2),
        "W_V": (G * D_v, D_2),
        "W_O": (D_1, H * D_v),
    }


def on_grading_device(ns: StudentNamespace, model: Remote, what: str, dtype: torch.dtype) -> Remote:
    """The student's model on the grading device in ``dtype`` (a handle): float64 as the value
    checks of Parts 5, 7 and 8 (and their visible checks) run it, or the experiment's float32."""
    if dtype == torch.float64:
        return to_grading(ns, model, what)
    moved = call(method(model, "to", what), (ns.device,), f"{what}.to(device)")
    return call(method(moved, "float", what), (), f"{what}.float()")


def check_values(
    ns: StudentNamespace,
    name: str,
    spec: dict[str, int],
    part: str,
    ctor_args: tuple[int, ...],
    test_id: str,
    trials: int = 2,
    dtype: torch.dtype = torch.float64,
) -> None:
    """Outputs of the student's model with the test's weights vs the float64 reference; the
    model runs in ``dtype``, and the reference takes the inputs and weights rounded to it."""
    cls = answer(ns, name, part)
    H, G = spec["H"], spec["G"]
    for trial in range(trials):
        built = call(cls, ctor_args, f"{name}{ctor_args}")
        model = on_grading_device(ns, built, f"{part}: {name}{ctor_args}", dtype)
        gen = generator(f"{test_id}/{trial}")
        weights = {
            n: draw_weights(gen, *s).to(dtype).to(torch.float64)
            for n, s in linear_shapes(spec).items()
        }
        for layer, weight in weights.items():
            set_linear(model, layer, weight.to(dtype), part)
        B, L_1, L_2 = draw_dims(f"{test_id}/BL{trial}", ["B", "L_1", "L_2"], low=16).values()
        x = randn(gen, B, L_1, spec["D_1"]).to(dtype)
        y = randn(gen, B, L_2, spec["D_2"]).to(dtype)
        got = forward(ns, model, x, y, f"{name}.forward(x, y)")
        args = (x.double(), y.double(), *weights.values())
        ref = reference_attention(*args, H, G)  # type: ignore[call-arg, arg-type]  # x, y, 4 weights: mypy cannot count a dict's values
        check_close(
            f"{part}: {name}.forward(x, y) with the test's weights",
            got,
            ref,
            VALUES_TOL,
            attention_mistakes(args, H, G),
            shape_cause="the output must be (B, L_1, D_1)",
        )


# ---------------------------------------------------------------------------- Part 5


def mha_spec(test_id: str) -> dict[str, int]:
    """Secret MyMHA dimensions (G = H)."""
    spec = draw_dims(test_id, ["D_1", "D_2", "D_qk", "D_v", "H"], low=2)
    spec["G"] = spec["H"]
    return spec


def mha_args(spec: dict[str, int]) -> tuple[int, ...]:
    """MyMHA's constructor arguments for ``spec``."""
    return tuple(spec[k] for k in ("D_1", "D_2", "D_qk", "D_v", "H"))


def check_mha_attributes(ns: StudentNamespace) -> None:
    """Part 5: MyMHA's attributes, bias-free nn.Linear layers of the right shapes, output shape."""
    spec = mha_spec("p5_mha_attributes")
    attrs = {k: spec[k] for k in ("D_1", "D_2", "D_qk", "D_v", "H")}
    _check_model_attributes(ns, "MyMHA", attrs, spec, "Part 5", mha_args(spec))


def _check_model_attributes(ns, name, attrs, spec, part, ctor_args):
    """Attribute values (``attrs``), bias-free layer shapes and the output shape of a model."""
    cls = answer(ns, name, part)
    model = call(cls, ctor_args, f"{name}{ctor_args}")
    check_attributes(model, name, attrs, part)
    H, G = spec["H"], spec["G"]
    for layer_name, shape in linear_shapes(spec).items():
        layer, weight = linear_layer(model, layer_name, part)
        rows, cols = shape
        mistakes = {}
        if layer_name in ("W_K", "W_V") and G != H:
            copies = (
                f"H/G = {H // G} copies of the {layer_name[-1]} projection; store only its G heads"
            )
            mistakes[copies] = (rows // G * H, cols)
        check_shape_named(f"{part}: {layer_name}.weight", tuple(weight.shape), shape, mistakes)
        check_no_bias(layer, layer_name, part)
    B, L_1, L_2 = draw_dims(f"{part}/BL", ["B", "L_1", "L_2"], low=16).values()
    model = to_grading(ns, model, f"{part}: {name}{ctor_args}")
    gen = generator(f"{part}/shape")
    x = randn(gen, B, L_1, spec["D_1"])
    y = randn(gen, B, L_2, spec["D_2"])
    out = tensor(forward(ns, model, x, y, f"{name}.forward(x, y)"), "forward")
    check_shape_named(f"{part}: output of forward(x, y)", tuple(out.shape), (B, L_1, spec["D_1"]))


MHA_BY_HAND = (Rule(NO_FUSED, "MyMHA", "Part 5"),)
MHA_NO_LOOPS = (Rule(NO_LOOPS, "MyMHA", "Part 5"),)


@proves(*MHA_BY_HAND)
def check_mha_values(ns: StudentNamespace) -> None:
    """Part 5: MyMHA.forward matches a float64 per-head reference, built by hand."""
    answer(ns, "MyMHA", "Part 5")
    prove(MHA_BY_HAND, ns)
    spec = mha_spec("p5_mha_values")
    check_values(ns, "MyMHA", spec, "Part 5", mha_args(spec), "p5_mha_values")


def _runs(ns, name, ctor_args, D_1, D_2, part):
    """The rule points are for a model that was built: its forward must run."""
    model = call(answer(ns, name, part), ctor_args, f"{part}: {name}{ctor_args}")
    gen = generator(f"{part}/runs")
    call(
        model,
        (torch.randn(2, 3, D_1, generator=gen), torch.randn(2, 5, D_2, generator=gen)),
        f"{part}: {name}.forward (the rule is checked on a working answer)",
        no_grad=True,
    )


@proves(*MHA_NO_LOOPS)
def check_mha_no_loops(ns: StudentNamespace) -> None:
    """Part 5: no for/while loop or comprehension in MyMHA or the helpers it calls."""
    _runs(ns, "MyMHA", (3, 5, 2, 4, 2), 3, 5, "Part 5")
    prove(MHA_NO_LOOPS, ns)


# ---------------------------------------------------------------------------- Part 6


def check_tilde_rank(ns: StudentNamespace) -> None:
    """Part 6: rank of H/G stacked copies of W^{M,GQA} equals rank(W^{M,GQA})."""
    func = answer(ns, "tilde_rank", "Part 6")
    rng = rng_for("p6_tilde_rank")
    for _ in range(4):
        G = rng.randint(2, 6)
        H = G * rng.randint(2, 5)
        rank = rng.randint(1, 12)
        got = integer(call(func, (rank, H, G), f"tilde_rank({rank}, {H}, {G})"), "tilde_rank")
        if got != rank:
            cause = {
                rank * H // G: "copies of rows add no new independent rows: the rank does not grow",
                rank * G: "copies of rows add no new independent rows: the rank does not grow",
                rank * H: "copies of rows add no new independent rows: the rank does not grow",
            }.get(got)
            fail(f"tilde_rank({rank}, H={H}, G={G})", rank, got, cause)


# ---------------------------------------------------------------------------- Part 7


def _gqa_spec(test_id):
    """Secret MyGQA dimensions, 1 < G < H."""
    spec = draw_dims(test_id, ["D_1", "D_2", "D_qk", "D_v"], low=2)
    spec["H"], spec["G"] = draw_gqa_heads(test_id, set(spec.values()))
    return spec


def _gqa_args(spec):
    """MyGQA's constructor arguments for ``spec``."""
    return tuple(spec[k] for k in ("D_1", "D_2", "D_qk", "D_v", "H", "G"))


def check_gqa_attributes(ns: StudentNamespace) -> None:
    """Part 7: MyGQA's attributes; W_K, W_V hold G heads (no copies); output shape."""
    spec = _gqa_spec("p7_gqa_attributes")
    _check_model_attributes(ns, "MyGQA", dict(spec), spec, "Part 7", _gqa_args(spec))


GQA_BY_HAND = (Rule(NO_FUSED, "MyGQA", "Part 7"),)
GQA_NO_LOOPS = (Rule(NO_LOOPS, "MyGQA", "Part 7"),)


@proves(*GQA_BY_HAND)
def check_gqa_values(ns: StudentNamespace) -> None:
    """Part 7: MyGQA.forward with interleaved groups (h = g mod G) matches the reference."""
    answer(ns, "MyGQA", "Part 7")
    prove(GQA_BY_HAND, ns)
    for test_id in ("p7_gqa_values/a", "p7_gqa_values/b"):
        spec = _gqa_spec(test_id)
        check_values(ns, "MyGQA", spec, "Part 7", _gqa_args(spec), test_id, trials=1)


@proves(*GQA_NO_LOOPS)
def check_gqa_no_loops(ns: StudentNamespace) -> None:
    """Part 7: no for/while loop or comprehension in MyGQA or the helpers it calls."""
    _runs(ns, "MyGQA", (3, 5, 2, 4, 4, 2), 3, 5, "Part 7")
    prove(GQA_NO_LOOPS, ns)


# ---------------------------------------------------------------------------- Part 8


def is_instance(obj: object, cls: object) -> bool:
    """The kernel's isinstance(obj, cls), for a class ``cls`` the notebook defines."""
    return (
        isinstance(obj, Remote) and isinstance(cls, Remote) and cls.is_a("type") and obj.is_a(cls)
    )
