"""Parts 1 and 2 of ``attention_at_scale``: the stable softmax and log-sum-exp, each student's
half-precision numbers, the online softmax and the merge of partial results."""

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from attncourse.constants import EXAMPLE_STUDENT
from attncourse.judge.checks import (
    Deferred,
    answer,
    call,
    check_close,
    fail,
    generator,
    named_mistakes,
    randn,
    rel_error,
    rng_for,
    tensor,
)
from attncourse.judge.remote import StudentNamespace
from attncourse.judge.rulebook import NEVER_NAMES, NO_LOOPS, Rule, prove, proves

from .references import (
    F64,
    LSE_MISTAKES,
    SOFTMAX_MISTAKES,
    lse_reference,
    merge_mistakes,
    online_l_mistakes,
    online_reference,
    own_answers,
    own_mistakes,
    partial_reference,
    softmax_reference,
)
from .tolerances import LSE_MINE_TOL, PRECISION_BAND, RATIO_MINE_TOL, VALUES_TOL


def close(
    what: str,
    got: Any,
    ref: torch.Tensor,
    mistakes: Mapping[str, torch.Tensor] | None = None,
    shape_cause: str | None = None,
    dtype: torch.dtype | None = None,
) -> float:
    """check_close within VALUES_TOL, naming NaN or inf and half precision before the mistakes;
    ``dtype``: the dtype the result must have (the input's)."""
    if dtype is not None and type(got) is torch.Tensor and got.dtype != dtype:
        fail(f"{what}: dtype", f"{dtype} (the input's)", str(got.dtype), "return the input's dtype")
    got_t, ref_t = tensor(got, what), tensor(ref, "reference")
    if tuple(got_t.shape) == tuple(ref_t.shape) and not bool(torch.isfinite(got_t).all()):
        fail(
            f"{what}: the result contains NaN or inf",
            "finite values",
            "NaN or inf",
            "exp of a large score overflows: subtract the (running) maximum first; or a row "
            "with every score masked",
        )
    err = rel_error(got_t, ref_t)
    if VALUES_TOL < err < PRECISION_BAND and got.dtype in (torch.float16, torch.bfloat16):
        fail(
            f"{what}: values differ slightly",
            f"relative error <= {VALUES_TOL:.1e}",
            f"relative error {err:.3e}",
            f"a precision mistake: the result is {got.dtype}",
        )
    return check_close(what, got_t, ref_t, VALUES_TOL, mistakes, shape_cause)


NO_LIBRARY_SOFTMAX = "softmax and log-sum-exp written by hand"


def by_hand(name: str, part: str) -> tuple[Rule, ...]:
    """Rules: ``name`` names neither torch's softmax nor its logsumexp."""
    return tuple(
        Rule(NEVER_NAMES, name, part, word=word, expected=NO_LIBRARY_SOFTMAX, why=why)
        for word, why in (
            ("softmax", "the task is to write the softmax: exp(s - m) / sum"),
            ("logsumexp", "the task is to write the log-sum-exp: m + log(sum exp(s - m))"),
        )
    )


# ================================================================= Part 1(a)


def check_softmax(ns: StudentNamespace) -> None:
    """Part 1(a): stable_softmax and log_sum_exp along dim, also for scores in the thousands."""
    part = "Part 1(a)"
    soft, lse = answer(ns, "stable_softmax", part), answer(ns, "log_sum_exp", part)
    rng = rng_for("p1_softmax")
    a, b, n = rng.sample(range(2, 9), 3)
    gen = generator("p1_softmax")
    offsets = torch.tensor([1000.0, -1000.0, 700.0])[torch.arange(a) % 3, None, None]
    trials = [
        ("scores of order one, dim = -1", randn(gen, a, b, n, scale=3.0), -1),
        ("scores of order one, dim = 1", randn(gen, a, n, b, scale=3.0), 1),
        ("scores in the thousands", randn(gen, a, b, n, scale=5.0) + offsets, -1),
        ("scores spread over thousands", randn(gen, a, b, n, scale=600.0), -1),
        # one score 2,000 above its row: only the maximum keeps every exponent <= 0 (the mean or
        # the minimum leaves one above 709, where float64's exp overflows)
        ("one score far above its row", randn(gen, a, b, n) + _spike(a, b, n), -1),
        ("float32 scores in the thousands", (randn(gen, a, b, n, scale=5.0) + offsets).float(), 2),
    ]
    for label, s, dim in trials:
        args = (s,) if dim == -1 else (s, dim)
        what = f"{part}: stable_softmax of {label}, shape {tuple(s.shape)}"
        close(
            what,
            call(soft, args, what),
            softmax_reference(s, dim),
            _wrong(s, dim, False),
            dtype=s.dtype,
        )
        what = f"{part}: log_sum_exp of {label}, shape {tuple(s.shape)}"
        close(
            what, call(lse, args, what), lse_reference(s, dim), _wrong(s, dim, True), dtype=s.dtype
        )


def _spike(a, b, n):
    """2,000 at the last score of every row, 0 elsewhere."""
    spike = torch.zeros(a, b, n, dtype=torch.float64)
    spike[..., -1] = 2000.0
    return spike


def _wrong(s, dim, lse):
    table = (lse_reference, LSE_MISTAKES) if lse else (softmax_reference, SOFTMAX_MISTAKES)
    return Deferred(named_mistakes, *table, s, dim)


@proves(
    Rule(NO_LOOPS, "stable_softmax", "Part 1(a)"),
    Rule(NO_LOOPS, "log_sum_exp", "Part 1(a)"),
    *by_hand("stable_softmax", "Part 1(a)"),
    *by_hand("log_sum_exp", "Part 1(a)"),
)
def check_softmax_rules(ns: StudentNamespace) -> None:
    """Part 1(a): no loop and no library softmax or logsumexp, also not in helpers called."""
    part = "Part 1(a)"
    for name in ("stable_softmax", "log_sum_exp"):
        fn = answer(ns, name, part)
        call(
            fn,
            (torch.ones(2, 3, dtype=F64),),
            f"{part}: {name} (rules are checked on a working answer)",
        )
    prove(check_softmax_rules.rules, ns)


# ================================================================= Part 1(b)

OWN_NAMES = ("lse_mine", "fp16_overflows", "bf16_overflows", "fp16_underflows", "bf16_underflows")


def _number(value, what):
    """A plain number (int, float or a numpy scalar), never a bool."""
    if type(value) in (int, float) or isinstance(value, np.integer | np.floating):
        return value.item() if isinstance(value, np.generic) else value
    fail(f"{what}: expected a plain number", "an int or float", type(value).__name__)


def matches(got: float, expected: float, name: str) -> bool:
    """Whether one own-number answer equals ``expected`` within its tolerance."""
    if name == "lse_mine":
        return abs(got - expected) <= LSE_MINE_TOL
    if name == "io_ratio_mine":
        return abs(got - expected) <= RATIO_MINE_TOL * abs(expected)
    return got == expected


def check_own(ns: StudentNamespace, names: Sequence[str], part: str) -> None:
    """Each answer of ``names`` against the graded id's instance; all of them someone else's
    instance (the example's, or STUDENT_ID's when it is not the graded id) is named as such."""
    got = {name: _number(answer(ns, name, part), f"{part}: {name}") for name in names}
    expected = own_answers(ns.student)
    if all(matches(got[n], expected[n], n) for n in names):
        return
    written = ns.get("STUDENT_ID")
    others = {EXAMPLE_STUDENT: "the example instance (no id was set)"}
    if type(written) is str and written.strip():
        others[written.strip()] = f"student {written.strip()!r}'s instance"
    for other, label in others.items():
        theirs = own_answers(other)
        if other != ns.student and all(matches(got[n], theirs[n], n) for n in names):
            fail(
                f"{part}: answers match {label}, not your own (graded as {ns.student!r})",
                cause="work from the numbers the provided cell prints for your id",
            )
    mistakes = own_mistakes(ns.student)
    for name in names:
        if not matches(got[name], expected[name], name):
            causes = [
                c for wrong, c in mistakes.get(name, {}).items() if matches(got[name], wrong, name)
            ]
            fail(
                f"{part}: {name} for your numbers",
                _shown(expected[name]),
                got[name],
                causes[0] if causes else None,
            )


def _shown(value):
    return f"{value:.4f}" if isinstance(value, float) else value


def check_own_numbers(ns: StudentNamespace) -> None:
    """Part 1(b): lse and the float16 / bfloat16 overflow and underflow counts of the id's scores."""
    check_own(ns, OWN_NAMES, "Part 1(b)")


# ================================================================= Part 2


def check_online(ns: StudentNamespace) -> None:
    """Part 2(a): online_softmax's (m, l) in one pass over blocks, also when the max moves."""
    part = "Part 2(a)"
    fn = answer(ns, "online_softmax", part)
    rng = rng_for("p2_online")
    gen = generator("p2_online")
    a, b = rng.sample(range(2, 7), 2)
    for k, (n, block, scale) in enumerate(
        [
            (rng.randint(17, 40), rng.randint(3, 7), 1.0),
            (rng.randint(9, 15), 1, 1.0),
            (11, 16, 1.0),
            (rng.randint(17, 30), 5, 400.0),
        ]
    ):
        ramp = torch.linspace(0, rng.choice([4.0, 8.0]), n, dtype=F64) * (1 if k % 2 == 0 else -1)
        s = (randn(gen, a, b, n) + ramp) * scale  # (a, b, n): the max moves block after block
        if k == 3:
            s = s.float()
        what = f"{part}: online_softmax of scores {tuple(s.shape)}, block = {block}"
        got = call(fn, (s, block), what)
        if type(got) not in (tuple, list) or len(got) != 2:
            fail(f"{what}: return value", "a pair (m, l)", type(got).__name__)
        ref_m, ref_l = online_reference(s, block)
        close(f"{what}: m", got[0], ref_m, shape_cause="m drops the last axis: (...)")
        close(
            f"{what}: l",
            got[1],
            ref_l,
            Deferred(online_l_mistakes, s, block),
            "l drops the last axis",
        )


@proves(*by_hand("online_softmax", "Part 2(a)"))
def check_online_rules(ns: StudentNamespace) -> None:
    """Part 2(a): online_softmax names no library softmax or logsumexp."""
    part = "Part 2(a)"
    call(
        answer(ns, "online_softmax", part),
        (torch.ones(2, 5, dtype=F64), 2),
        f"{part}: online_softmax (rules are checked on a working answer)",
    )
    prove(check_online_rules.rules, ns)


def check_merge(ns: StudentNamespace) -> None:
    """Part 2(b): merge of two partial results is the partial result of the union of their keys."""
    part = "Part 2(b)"
    fn = answer(ns, "merge", part)
    rng = rng_for("p2_merge")
    gen = generator("p2_merge")
    a, b, d = rng.sample(range(2, 9), 3)
    for k in range(3):
        n_a, n_b = rng.randint(1, 9), rng.randint(1, 9)
        s = randn(gen, a, b, n_a + n_b, scale=3.0)
        s[..., n_a:] += [15.0, -15.0, 0.0][k]  # one side's maximum larger, smaller, alike
        v = randn(gen, a, b, n_a + n_b, d)
        pa = partial_reference(s[..., :n_a], v[..., :n_a, :])
        pb = partial_reference(s[..., n_a:], v[..., n_a:, :])
        what = f"{part}: merge of partial results over {n_a} and {n_b} keys, m, l {(a, b)}, o {(a, b, d)}"
        got = call(fn, (pa, pb), what)
        if type(got) not in (tuple, list) or len(got) != 3:
            fail(f"{what}: return value", "a triple (m, l, o)", type(got).__name__)
        ref = partial_reference(s, v)
        for index, name in enumerate(("m", "l", "o")):
            mistakes = Deferred(merge_mistakes, pa, pb, ref, index)
            close(f"{what}: {name}", got[index], ref[index], mistakes)
