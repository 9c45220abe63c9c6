"""attncourse.judge.checks: the judge's comparisons, on plain data the kernel returned.

Each test pairs a correct (or merely different but acceptable) answer that must be accepted
with a wrong one that must be rejected, and the message must say what was wrong.
Remote handles come from a namespace of this process reached through the same
request/reply encoding a kernel uses (LocalChannel).
"""

import math

import numpy as np
import pytest
import torch

from attncourse.judge import checks
from attncourse.judge.channel import LocalChannel
from attncourse.judge.checks import Deferred, GradingError, check_close
from attncourse.judge.remote import Remote, Session, StudentNamespace, StudentRaised
from attncourse.judge.wire import Refused


def student(**names):
    """The judge's view of a namespace holding ``names``."""
    return StudentNamespace(Session(LocalChannel({"__name__": "__main__", **names})))


# ------------------------------------------------------------------------ check_close


def test_check_close_accepts_a_float32_answer_within_tolerance():
    ref = torch.randn(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    err = checks.check_close("x", ref.float(), ref, 1e-6)
    assert 0 < err < 1e-6
    assert checks.check_close("x", ref.numpy().astype(np.float32), ref, 1e-6) < 1e-6
    assert checks.check_close("x", ref.bfloat16(), ref, 1e-2) < 1e-2
    with pytest.raises(GradingError, match="values differ"):
        checks.check_close("x", ref.bfloat16(), ref, 1e-6)  # bf16 is not float32 precision


def test_check_close_names_the_mistake_it_recognises():
    ref = torch.arange(1.0, 7.0).reshape(2, 3)
    mistakes = {"doubled": 2 * ref, "negated": -ref}
    assert checks.check_close("x", ref + 1e-12, ref, 1e-9, mistakes) < 1e-9
    with pytest.raises(GradingError, match="likely cause: doubled") as info:
        checks.check_close("out", (2 * ref).float(), ref, 1e-6, mistakes)
    message = str(info.value)
    assert message.startswith("out: values differ") and "relative error" in message
    assert "negated" not in message
    with pytest.raises(GradingError) as info:  # wrong, but no known mistake: no cause named
        checks.check_close("out", ref + 1, ref, 1e-6, mistakes)
    assert "likely cause" not in str(info.value)


def test_check_close_names_numpy_mistakes_too():
    ref = np.ones((2, 2))
    checks.check_close(
        "x", np.ones((2, 2), dtype=np.float32), ref, 1e-9, {"zero": np.zeros((2, 2))}
    )
    with pytest.raises(GradingError, match="likely cause: zero"):
        checks.check_close("x", np.zeros((2, 2)), ref, 1e-9, {"zero": np.zeros((2, 2))})


def test_check_close_reports_a_shape_mismatch_with_its_cause():
    checks.check_close("x", torch.zeros(2, 3), torch.zeros(2, 3), 1e-9)
    with pytest.raises(GradingError, match=r"wrong output shape(.|\n)*likely cause: transposed"):
        checks.check_close(
            "x", torch.zeros(3, 2), torch.zeros(2, 3), 1e-9, shape_cause="transposed"
        )


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_inf_never_pass(bad):
    ref = torch.ones(3, dtype=torch.float64)
    checks.check_close("x", ref.clone(), ref, math.inf)  # control: any finite answer, tol inf
    got = ref.clone()
    got[1] = bad
    with pytest.raises(GradingError, match="NaN or inf"):
        checks.check_close("x", got, ref, math.inf)
    with pytest.raises(GradingError, match="NaN or inf"):
        checks.check_close("x", got.numpy(), ref, 1e-3, {"also bad": got})
    assert checks.rel_error(got, ref) == math.inf


def test_rel_error_is_relative_and_shape_aware():
    ref = torch.full((4,), 10.0, dtype=torch.float64)
    assert checks.rel_error(ref * 1.01, ref) == pytest.approx(0.01)
    assert checks.rel_error(torch.zeros(4), torch.zeros(4)) == 0.0
    assert checks.rel_error(torch.zeros(2, 2), ref) == math.inf


# ------------------------------------------------------------------------------ tensor


def test_tensor_accepts_plain_numeric_tensors_and_arrays():
    for value in (
        torch.ones(2, dtype=torch.float32),
        torch.ones(2, dtype=torch.bfloat16),
        torch.ones(2, dtype=torch.int64),
        np.ones(2, dtype=np.float16),
        np.ones(2, dtype=np.int32),
    ):
        out = checks.tensor(value, "x")
        assert type(out) is torch.Tensor and out.dtype == torch.float64
        assert out.tolist() == [1.0, 1.0]


def test_tensor_refuses_what_the_wire_refused():
    refused = Refused("mymod.Sneaky", "a subclass of torch.Tensor")
    with pytest.raises(GradingError, match=r"expected a plain tensor(.|\n)*mymod.Sneaky"):
        checks.tensor(refused, "x")
    with pytest.raises(GradingError, match="a subclass of torch.Tensor"):
        checks.check_close("x", refused, torch.zeros(2), 1e-9)


def test_tensor_refuses_a_handle_naming_its_class():
    class Box:
        pass

    box = student(box=Box())["box"]
    assert isinstance(box, Remote)
    with pytest.raises(GradingError, match=r"expected a tensor(.|\n)*got: +a .*Box object"):
        checks.tensor(box, "x")
    # control: the same namespace returns a plain tensor as data
    assert checks.tensor(student(t=torch.ones(2))["t"], "x").tolist() == [1.0, 1.0]


def test_tensor_refuses_booleans_and_other_values():
    with pytest.raises(GradingError, match="a boolean tensor"):
        checks.tensor(torch.ones(2, dtype=torch.bool), "x")
    with pytest.raises(GradingError, match="a boolean array"):
        checks.tensor(np.ones(2, dtype=bool), "x")
    for value, named in [(None, "NoneType"), ([1.0, 2.0], "list"), (3.0, "float")]:
        with pytest.raises(GradingError, match=rf"expected a tensor(.|\n)*got: +{named}"):
            checks.tensor(value, "x")


# ---------------------------------------------------------------------------- shapes


@pytest.mark.parametrize("shape", [(2, 3), [2, 3]], ids=["tuple", "list"])
def test_as_shape_accepts_tuples_and_lists_of_ints(shape):
    assert checks.as_shape(shape, "s") == (2, 3)
    checks.check_shape("s", shape, (2, 3))
    with pytest.raises(GradingError, match=r"wrong shape(.|\n)*expected: \(3, 2\)"):
        checks.check_shape("s", shape, (3, 2))


def test_as_shape_takes_a_single_int_as_a_one_dimensional_shape():
    assert checks.as_shape(5, "s") == (5,)
    with pytest.raises(GradingError, match="tuple of integers"):
        checks.as_shape(True, "s")


@pytest.mark.parametrize(
    "bad, message",
    [
        ((2, 3.0), "plain int"),
        ((2, True), "plain int"),
        ((2, np.int64(3)), "plain int"),
        ((2, (3,)), "plain int"),
        (2.0, "tuple of integers"),
        ("2, 3", "tuple of integers"),
        (torch.Size([2, 3]), "tuple of integers"),  # the wire turns torch.Size into a tuple
        (Refused("x.Shape", "a subclass of torch.Tensor"), "tuple of integers"),
        (object(), "tuple of integers"),
    ],
)
def test_as_shape_refuses_floats_and_objects(bad, message):
    with pytest.raises(GradingError, match=message):
        checks.as_shape(bad, "s")


def test_shape_mistake_names_the_matching_candidate():
    candidates = {"heads first": (4, 2, 3), "no heads": (2, 3)}
    assert checks.shape_mistake((2, 3), candidates) == "no heads"
    assert checks.shape_mistake((9,), candidates) is None


# ------------------------------------------------------------------------ randomness


def test_draws_are_the_same_within_one_secret():
    with checks.secret_scope("s1"):
        first = (
            checks.seed_for("t"),
            checks.rng_for("t").random(),
            torch.randn(3, generator=checks.generator("t")),
        )
        again = (
            checks.seed_for("t"),
            checks.rng_for("t").random(),
            torch.randn(3, generator=checks.generator("t")),
        )
        other_test = checks.seed_for("u")
    assert first[:2] == again[:2] and torch.equal(first[2], again[2])
    assert other_test != first[0]
    assert 0 <= first[0] < 2**63


def test_draws_differ_across_secrets():
    draws = []
    for secret in ("s1", "s2"):
        with checks.secret_scope(secret):
            draws.append(
                (
                    checks.seed_for("t"),
                    checks.rng_for("t").random(),
                    torch.randn(3, generator=checks.generator("t")),
                )
            )
    (a, b) = draws
    assert a[0] != b[0] and a[1] != b[1] and not torch.equal(a[2], b[2])


def test_draws_refuse_outside_a_secret_scope():
    for draw in (checks.seed_for, checks.rng_for, checks.generator):
        with pytest.raises(RuntimeError, match="outside secret_scope"):
            draw("t")
    with checks.secret_scope("s"):
        with checks.secret_scope("inner"):
            inner = checks.seed_for("t")
        assert checks.seed_for("t") != inner  # the outer secret is back
    with pytest.raises(RuntimeError):
        checks.seed_for("t")


def test_distinct_dims_are_distinct_and_drawn_from_the_secret():
    names = ["A", "B", "C", "D", "E"]
    with checks.secret_scope("s"):
        a = checks.distinct_dims(checks.rng_for("t"), names)
        b = checks.distinct_dims(checks.rng_for("t"), names)
    assert a == b and len(set(a.values())) == 5
    assert all(2 <= v <= 9 + len(names) for v in a.values())


# ------------------------------------------------------------------------ call, answer


def test_call_returns_the_value_and_turns_the_students_exception_into_a_grading_error():
    def works(x):
        return x @ torch.ones(2, 4, dtype=x.dtype)

    def broken(x):
        return x @ torch.zeros(3, 4)

    ns = student(works=works, broken=broken)
    out = checks.call(ns["works"], (torch.ones(2, 2),), "my_fn")
    assert type(out) is torch.Tensor and out.shape == (2, 4)
    with pytest.raises(GradingError, match=r"my_fn raised RuntimeError: .*(.|\n)*likely cause: ab"):
        checks.call(ns["broken"], (torch.zeros(2, 2),), "my_fn", cause="ab")


def test_call_refuses_what_is_not_a_function():
    ns = student(data=3, klass=int)
    checks.call(ns["klass"], ("7",), "int")  # a class is callable
    for value in (ns["data"], 3, print):
        with pytest.raises(GradingError, match="expected a function"):
            checks.call(value, (), "my_fn")


def test_a_student_raised_outside_call_is_not_turned_into_a_grading_error():
    def broken():
        raise ValueError("nope")

    with pytest.raises(StudentRaised, match="ValueError: nope"):
        student(broken=broken)["broken"]()


def test_answer_fails_when_the_name_is_missing():
    ns = student(x=3)
    assert checks.answer(ns, "x", "Part 1") == 3
    with pytest.raises(GradingError, match="Part 1: `y` is not defined"):
        checks.answer(ns, "y", "Part 1")


def test_describe_names_what_came():
    assert checks.describe(Refused("a.B", "why")) == "a.B (why)"
    assert checks.describe(torch.zeros(2, 3)) == "Tensor of shape (2, 3)"
    assert checks.describe(np.zeros(4)) == "ndarray of shape (4,)"
    assert (
        checks.describe("x" * 200).startswith("str 'xxx") and len(checks.describe("x" * 200)) < 90
    )


def test_fail_lays_out_expected_got_and_cause():
    with pytest.raises(GradingError) as info:
        checks.fail("what", "E", "G", "C")
    assert str(info.value) == "what\n  expected: E\n  got:      G\n  likely cause: C"
    assert isinstance(info.value, AssertionError)


def test_named_mistakes_are_computed_only_for_an_answer_that_fails():
    """Deferred: a passing answer never computes the table (most of a passing value check);
    a failing one is compared with it and the message names the mistake it reproduces."""
    ref = torch.arange(1.0, 7.0, dtype=torch.float64)
    computed = []

    def table():
        computed.append(True)
        return {"every value doubled": 2 * ref}

    check_close("Part X", ref.float(), ref, 1e-6, Deferred(table))
    assert computed == []
    with pytest.raises(GradingError, match="likely cause: every value doubled"):
        check_close("Part X", 2 * ref, ref, 1e-6, Deferred(table))
    assert computed == [True]
