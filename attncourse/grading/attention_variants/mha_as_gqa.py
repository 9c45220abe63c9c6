"""Part 8 of ``attention_variants``: mha_as_gqa returns the MyGQA that is MHA (G = H).

A MyGQA that is wrong costs Part 7 only: where the answer fails because its MyGQA does, it is
judged by whether it is what ``MyGQA(D_1, D_2, D_qk, D_v, H, H)`` gives, built here.
"""

import torch

from attncourse.judge.checks import (
    GradingError,
    answer,
    call,
    check_close,
    describe,
    fail,
    generator,
    randn,
    rel_error,
    tensor,
    to_grading,
)
from attncourse.judge.remote import StudentNamespace

from .models import forward, is_instance, linear_shapes, mha_args, mha_spec, set_linear
from .references import attention_mistakes, draw_weights, reference_attention
from .tolerances import VALUES_TOL

GQA = "Part 8: the MyGQA"  # one label for the answer's model and the judge's own, so that
# their failures read alike


def _run(ns, model, spec):
    """(its G attribute, its float64 outputs with the test's weights or its failure, the
    inputs and weights) of a MyGQA built for ``spec``."""
    G = getattr(model, "G", None)
    gen = generator("p8_mha_as_gqa")
    weights = {n: draw_weights(gen, *s) for n, s in linear_shapes(spec).items()}
    x = randn(gen, 3, 7, spec["D_1"])
    y = randn(gen, 3, 11, spec["D_2"])
    out: torch.Tensor | str  # the outputs, or the failure's message
    try:
        model = to_grading(ns, model, GQA)
        for name, weight in weights.items():
            set_linear(model, name, weight, "Part 8")
        out = tensor(forward(ns, model, x, y, "MyGQA.forward(x, y)"), "MyGQA.forward(x, y)")
    except GradingError as error:
        out = str(error)
    return G, out, (x, y, *weights.values())


def _same(a, b):
    """Two runs of :func:`_run` tell nothing apart: the same G, the same failure or outputs."""
    (G_a, out_a, _), (G_b, out_b, _) = a, b
    if repr(G_a) != repr(G_b) or type(out_a) is not type(out_b):
        return False
    return out_a == out_b if isinstance(out_a, str) else rel_error(out_a, out_b) <= 1e-12


def _judge(run, H):
    """A run of the answer's model against MHA: G = H, then the values (float64)."""
    G, out, args = run
    if type(G) is not int or G != H:
        cause = "G = 1 is multi-query attention (one shared key/value head)" if G == 1 else None
        fail("Part 8: the GQA that equals MHA has G = H", H, repr(G)[:40], cause)
    if isinstance(out, str):
        raise GradingError(out)
    check_close(
        "Part 8: the GQA with G = H against MHA",
        out,
        reference_attention(*args, H, H),  # type: ignore[call-arg]  # x, y and the 4 weights: mypy cannot count them
        VALUES_TOL,
        attention_mistakes(args, H, H),
    )


def check_mha_as_gqa(ns: StudentNamespace) -> None:
    """Part 8: mha_as_gqa(...) returns a MyGQA that computes MHA (G = H).

    "Is a MyGQA" is decided from the object's real type and MRO, computed by the agent through
    objects no notebook can replace, and refused for classes with a metaclass of their own;
    then G = H and the values are checked on the judge's side. An answer that fails there
    exactly as ``MyGQA(D_1, D_2, D_qk, D_v, H, H)`` does has done its part: the mistake is
    MyGQA's, and Part 7 counts it.
    """
    func = answer(ns, "mha_as_gqa", "Part 8")
    cls = answer(ns, "MyGQA", "Part 8")
    spec = mha_spec("p8_mha_as_gqa")
    args, H = mha_args(spec), spec["H"]
    model = call(func, args, f"mha_as_gqa{args}")
    if not is_instance(model, cls):
        fail(
            "Part 8: mha_as_gqa must return a MyGQA",
            "a MyGQA instance, by its real type (no metaclass or __instancecheck__ is asked)",
            describe(model),
        )
    run = _run(ns, model, spec)
    try:
        _judge(run, H)
    except GradingError as error:
        try:
            own = _run(ns, call(cls, (*args, H), f"MyGQA{(*args, H)}"), spec)
        except GradingError:
            raise error from None
        if not _same(run, own):
            raise
