"""Part 6(b)-(c) of ``attention_at_scale``: causality of the student's layers, and one step.

Causality: the judge builds each layer (float64, on the grading device), changes the inputs
after a position and checks that no output up to it moves. The step: the judge builds the
course's ``RecallModel`` on the student's layers, draws a fixed batch, computes the loss of
the model's logits itself, lets ``train_step`` take one step and computes it again.
"""

from collections.abc import Collection
from typing import Any

import torch

from attncourse.judge.checks import (
    answer,
    call,
    describe,
    fail,
    generator,
    randn,
    rng_for,
    tensor,
    to_grading,
)
from attncourse.judge.remote import StudentNamespace

from .references import IGNORE
from .tolerances import ATTENDS_TOL, CAUSAL_TOL, DECREASE_TOL, LOSS_TOL

F64 = torch.float64

# References of Part 6 with one right answer (the loss of one batch, where a layer's outputs
# read later tokens) and the named mistakes beside them; the recall data has no single right
# batch (it is random), so its checks are properties.


def answered_loss(logits: torch.Tensor, targets: torch.Tensor, shift: int = 0) -> float:
    """Mean cross-entropy (float64) over the positions whose target is not IGNORE; ``shift=1``
    is the named mistake of next-token training (position t scored against target t + 1)."""
    logits = logits.to(F64)
    if shift:
        logits, targets = logits[:, :-shift], targets[:, shift:]
    keep = targets != IGNORE
    return float(torch.nn.functional.cross_entropy(logits[keep], targets[keep].long()))


def loss_mistakes(logits: torch.Tensor, targets: torch.Tensor, after: float) -> dict[str, float]:
    """{description: the loss a named mistake returns} beside the right one."""
    keep = targets != IGNORE
    picked = torch.log_softmax(logits.to(F64)[keep], -1)
    per = -picked.gather(1, targets[keep].long()[:, None])
    return {
        "the loss after the step: return the loss the step was computed from": after,
        "targets shifted as for next-token prediction: the answer is scored at the query's own "
        "position": answered_loss(logits, targets, shift=1),
        "the loss summed, not averaged over the answered positions": float(per.sum()),
    }


def leak_cause(leaks: Collection[tuple[int, int]]) -> str:
    """The named mistake of a set of (t, s) pairs where output t moved when only token s > t did."""
    if all(s == t + 1 for t, s in leaks):
        return "the mask is off by one: position t also reads token t + 1 (triu(diagonal=2))"
    if any(t == 0 for t, _ in leaks) and any(s - t > 1 for t, s in leaks):
        return "no causal mask (or one that lets a position read later tokens)"
    return "position t reads tokens after it: mask every score of s > t before the softmax"


PART_LAYERS, PART_STEP = "Part 6(b)", "Part 6(c)"


def _layers(rng):
    """(label, class, constructor args) of the four kinds at secret, distinct sizes."""
    H = rng.choice([4, 6])
    D, d_h = rng.choice([20, 28]), rng.choice([6, 10])
    r, d_R = rng.choice([12, 18]), rng.choice([4, 8])
    return [
        ("MHA", "GroupedAttention", (D, H, H, d_h)),
        ("GQA", "GroupedAttention", (D, H, 2, d_h)),
        ("MQA", "GroupedAttention", (D, H, 1, d_h)),
        ("MLA", "LatentAttention", (D, H, d_h, r, d_R)),
    ]


def earlier_change(out: torch.Tensor, base: torch.Tensor, s: int) -> float:
    """The largest change of an output at a position before ``s``, relative to the largest output."""
    return float((out - base)[:, :s].abs().max()) / (float(base.abs().max()) or 1.0)


def relative_gap(got: float, want: float) -> float:
    """|got - want| / |want| (the returned loss against the judge's)."""
    return abs(got - want) / abs(want)


def _forward(ns, layer, x, what):
    out = tensor(call(layer, (ns.on_device(x),), what, no_grad=True), what)
    if tuple(out.shape) != tuple(x.shape):
        fail(f"{what}: wrong output shape", tuple(x.shape), tuple(out.shape))
    return out


def check_causality(ns: StudentNamespace) -> None:
    """Part 6(b): no output of any layer moves when only later inputs change; the past matters."""
    rng, gen = rng_for("p6_causality"), generator("p6_causality")
    B, L = 2, rng.randint(7, 11)
    for label, cls, args in _layers(rng):
        what = f"{PART_LAYERS}: {cls}{args} ({label})"
        layer = to_grading(ns, call(answer(ns, cls, PART_LAYERS), args, what), what)
        x = randn(gen, B, L, args[0])
        base = _forward(ns, layer, x, f"{what}.forward(x)")
        scale = float(base.abs().max()) or 1.0
        leaks = []
        for s in range(1, L):
            moved = x.clone()
            moved[:, s] = randn(gen, B, args[0])
            out = _forward(ns, layer, moved, f"{what}.forward(x changed at position {s})")
            if not earlier_change(out, base, s) <= CAUSAL_TOL:
                change = (out - base).abs().amax(dim=(0, 2)) / scale  # (L,)
                leaks += [(t, s) for t in range(s) if not float(change[t]) <= CAUSAL_TOL]
        if leaks:
            t, s = leaks[0]
            fail(
                f"{what}: the output at position {t} changed when only position {s} changed",
                f"outputs up to t unchanged (within {CAUSAL_TOL:.0e}) by later inputs",
                f"{len(leaks)} (earlier, later) pairs moved",
                leak_cause(leaks),
            )
        moved = x.clone()
        moved[:, 0] = randn(gen, B, args[0])
        out = _forward(ns, layer, moved, f"{what}.forward(x changed at position 0)")
        if not float((out - base)[:, 1:].abs().max()) / scale > ATTENDS_TOL:
            fail(
                f"{what}: later outputs ignore position 0",
                "each position reads the tokens before it",
                "no change",
                "the layer does not attend over earlier positions",
            )


def _loss_number(value, what):
    if type(value) is torch.Tensor and value.numel() == 1:
        return float(tensor(value, what).reshape(()))
    if type(value) in (int, float):
        return float(value)
    fail(f"{what} must return the loss as a number", "a float or a 0-d tensor", describe(value))


def check_train_step(ns: StudentNamespace) -> None:
    """Part 6(c): train_step returns the batch's loss before the step, and the step lowers it."""
    rng, gen = rng_for("p6_train_step"), generator("p6_train_step")
    N, Q, K, V = rng.randint(4, 6), 3, rng.randint(8, 11), rng.randint(8, 11)
    B, L = rng.randint(5, 9), 2 * N + Q
    kinds: list[tuple[str, dict[str, Any]]] = [  # (Any: sizes travel as call's keyword options)
        ("mha", {"H": 2, "d_h": 4}),
        ("mqa", {"H": 2, "d_h": 8}),
        ("mla", {"H": 2, "d_h": 4, "r": 6, "d_R": 2}),
    ]
    kind, sizes = kinds[rng.randrange(3)]
    args = (K + V, 16, kind)
    what = f"{PART_STEP}: RecallModel{args + tuple(sizes.values())}"
    model = to_grading(ns, call(answer(ns, "RecallModel", PART_STEP), args, what, **sizes), what)
    optimizer = call(answer(ns, "make_optimizer", PART_STEP), (model,), "make_optimizer(model)")
    tokens = torch.randint(0, K + V, (B, L), generator=gen)
    targets = torch.full((B, L), -100)
    targets[:, 2 * N :] = torch.randint(K, K + V, (B, Q), generator=gen)
    on = (ns.on_device(tokens), ns.on_device(targets))

    def logits():
        return tensor(call(model, on[:1], f"{what}(tokens)", no_grad=True), "logits")

    before = logits()
    loss_before = answered_loss(before, targets)
    step = f"{PART_STEP}: train_step(model, optimizer, tokens, targets)"
    got = _loss_number(
        call(answer(ns, "train_step", PART_STEP), (model, optimizer, *on), step), step
    )
    loss_after = answered_loss(logits(), targets)
    if not relative_gap(got, loss_before) <= LOSS_TOL:
        causes = {
            name: value
            for name, value in loss_mistakes(before, targets, loss_after).items()
            if abs(got - value) <= LOSS_TOL * abs(value)
        }
        fail(
            f"{step}: the returned loss",
            f"{loss_before:.6f}, the mean cross-entropy of the answered positions before the step",
            f"{got:.6f}",
            next(iter(causes), None),
        )
    if not relative_gap(loss_after, loss_before) >= DECREASE_TOL or not loss_after < loss_before:
        cause = (
            "no step taken: optimizer.step() missing, or the gradients zeroed before it"
            if loss_after == loss_before
            else "a step up the gradient: minimise the loss (loss.backward(), then step)"
        )
        fail(
            f"{step}: the loss on the same batch after the step",
            f"below {loss_before:.6f}",
            f"{loss_after:.6f}",
            cause,
        )
