"""The judge's plumbing: agent -> JSON -> wire -> remote, verdicts, and the course's registries.

The round trip runs through :class:`LocalChannel` over a dict namespace, the same
request/reply text a sandboxed kernel exchanges with the judge. The attacks on the
wire forge replies by hand: :func:`wire.decode` and :class:`Session` must refuse each
one (``ReplyError``/``KernelFault``) without executing or unpickling anything.
"""

import ast
import importlib
import json
import math
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch
from nbgrader.utils import determine_grade

from attncourse.cells import grade_id, is_test_cell
from attncourse.course import ROOT, assignments
from attncourse.judge import agent, checks, verdict, wire
from attncourse.judge.channel import AGENT_SOURCE, LocalChannel
from attncourse.judge.remote import KernelFault, Remote, Session, StudentNamespace, StudentRaised

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def student(sources=(), **names):
    """The judge's view of a dict namespace holding ``names`` (as casetable builds it)."""
    ns = {"__name__": "__main__", "torch": torch, "np": np, "nn": torch.nn, **names}
    return StudentNamespace(Session(LocalChannel(ns)), sources), ns


def back(value):
    """``value`` as the judge receives it from the kernel."""
    return student(value=value)[0]["value"]


# ================================================================ plain values round-trip


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        -7,
        2**62,
        0.1,
        -0.0,
        1e-310,
        math.inf,
        -math.inf,
        "",
        "héllo\nwörld \ud83d",
        (1, (2.5, "x"), [None, True]),
        [[1, 2], [3, [4, (5,)]]],
        {"a": 1, "b": {"c": [1.5, "d"]}, "": ()},
        (),
        [],
        {},
    ],
    ids=repr,
)
def test_plain_values_round_trip(value):
    got = back(value)
    assert got == value and type(got) is type(value)
    if isinstance(value, float):
        assert math.copysign(1, got) == math.copysign(1, value)


def test_nan_round_trips_as_a_float_nan():
    got = back(math.nan)
    assert type(got) is float and math.isnan(got)
    got = back((math.nan, [math.inf]))
    assert math.isnan(got[0]) and got[1] == [math.inf]


def test_long_strings_are_cut_not_refused():
    assert back("x" * (agent.MAX_TEXT + 10)) == "x" * agent.MAX_TEXT


@pytest.mark.parametrize(
    "dtype",
    [
        torch.float64,
        torch.float32,
        torch.float16,
        torch.bfloat16,
        torch.int64,
        torch.int32,
        torch.int16,
        torch.int8,
        torch.uint8,
        torch.bool,
    ],
    ids=str,
)
def test_tensors_round_trip_with_their_dtype(dtype):
    source = (torch.arange(12, dtype=torch.float64).reshape(3, 4) - 4) / 2
    source = source.to(dtype)
    got = back(source)
    assert type(got) is torch.Tensor and got.dtype == dtype and got.device.type == "cpu"
    assert torch.equal(got, source)


def test_returned_tensors_are_fresh_judge_side_copies():
    parameter = torch.nn.Parameter(torch.ones(2, 3))
    ns, names = student(
        p=parameter, view=torch.arange(10.0)[::3], grad=torch.ones(2) * parameter[0, :2]
    )
    got = ns["p"]
    assert type(got) is torch.Tensor and not got.requires_grad
    got += 1
    assert torch.equal(names["p"], torch.ones(2, 3))  # the kernel's tensor is untouched
    assert ns["view"].tolist() == [0.0, 3.0, 6.0, 9.0]
    assert not ns["grad"].requires_grad and ns["grad"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize(
    "dtype", [np.float64, np.float32, np.float16, np.int64, np.int32, np.uint8, np.bool_]
)
def test_numpy_arrays_round_trip(dtype):
    source = np.arange(-3, 3).reshape(2, 3).astype(dtype)
    got = back(source)
    assert type(got) is np.ndarray and got.dtype == source.dtype
    assert np.array_equal(got, source)
    fortran = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    assert np.array_equal(back(fortran), fortran)


def test_torch_size_comes_back_as_a_tuple_and_numpy_scalars_as_python():
    got = back(torch.zeros(2, 3).shape)
    assert got == (2, 3) and type(got) is tuple and all(type(n) is int for n in got)
    for scalar, kind in [
        (np.int64(3), int),
        (np.int8(-3), int),
        (np.uint32(3), int),
        (np.float32(0.5), float),
        (np.float64(-0.25), float),
        (np.bool_(True), bool),
    ]:
        got = back(scalar)
        assert type(got) is kind and got == scalar
    assert math.isnan(back(np.float32("nan")))


# ========================================================================= handles


class Model(torch.nn.Module):
    scale = 2.5

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(3, 2)

    def forward(self, x):
        return self.proj(x) * self.scale


def keyword(a, b=1, *, c=10):
    return a + b + c


def chatty(x):
    print("hello", x)
    return x * 2


def grad_mode():
    return torch.is_grad_enabled()


def test_functions_classes_and_modules_come_back_as_handles():
    ns, _ = student(keyword=keyword, Model=Model)
    func, cls, module = ns["keyword"], ns["Model"], ns["torch"]
    assert all(isinstance(r, Remote) for r in (func, cls, module))
    assert func.__name__ == "keyword" and func.cls == "builtins.function" and func._callable
    assert cls.__name__ == "Model" and cls.cls == "builtins.type" and cls._callable
    assert module.cls == "builtins.module" and not module._callable
    assert "in the kernel" in repr(func)


def test_calls_with_keywords_no_grad_and_stdout():
    ns, _ = student(keyword=keyword, chatty=chatty, grad_mode=grad_mode)
    assert ns["keyword"](1) == 12
    assert ns["keyword"](1, b=2, c=3) == 6
    assert ns["keyword"].call(1, 2, c=0) == 3
    assert ns["grad_mode"]() is True
    assert ns["grad_mode"].call(no_grad=True) is False
    assert ns["chatty"](3) == 6  # printed text is dropped unless asked for
    assert ns["chatty"].call(4, stdout=True) == (8, "hello 4\n")
    handle = ns["keyword"].call(1, ref=True)
    assert isinstance(handle, Remote) and handle.cls == "builtins.int"


def test_tensors_sent_to_the_kernel_arrive_as_plain_tensors():
    def inspect_arg(t):
        return type(t).__name__, str(t.dtype), str(t.device), t.sum().item()

    ns, _ = student(inspect_arg=inspect_arg)
    probe = ns["inspect_arg"]
    for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64):
        sent = torch.ones(2, 3, dtype=dtype, requires_grad=dtype.is_floating_point)
        assert probe(sent) == ("Tensor", str(dtype), "cpu", 6)
    assert probe(ns.on_device(torch.ones(2))) == ("Tensor", "torch.float32", DEVICE, 2)
    assert ns["np"].sum.call(np.ones((2, 2), dtype=np.float32)) == 4.0


def test_a_model_built_moved_and_called_in_the_kernel():
    ns, names = student(Model=Model)
    model = ns["Model"]()
    assert isinstance(model, Remote) and model.cls.endswith(".Model")
    assert model.to(ns.device) is not None
    weight = model.proj.attr("weight", ref=True)
    weight.copy_(torch.ones(2, 3), no_grad=True)
    model.proj.attr("bias", ref=True).zero_(no_grad=True)
    out = model(ns.on_device(torch.ones(4, 3)), no_grad=True)
    assert type(out) is torch.Tensor and out.device.type == "cpu"
    assert torch.equal(out, torch.full((4, 2), 7.5))
    assert model.scale == 2.5 and model.training is True
    assert model.proj.weight.tolist() == [[1.0] * 3] * 2


def test_attributes_and_missing_attributes():
    ns, _ = student(Model=Model)
    cls = ns["Model"]
    assert cls.scale == 2.5
    assert isinstance(cls.forward, Remote)
    with pytest.raises(AttributeError, match="nothing_here"):
        cls.nothing_here  # noqa: B018
    assert getattr(cls, "nothing_here", None) is None
    assert not hasattr(cls, "__wrapped__")  # dunders are never asked of the kernel
    assert ns["np"].pi == math.pi


def test_is_a_asks_the_kernel():
    ns, _ = student(Model=Model, linear=torch.nn.Linear(2, 2), keyword=keyword)
    model = ns["Model"]()
    assert model.is_a("module") and not model.is_a("linear")
    assert ns["linear"].is_a("linear") and ns["linear"].is_a("module")
    assert model.is_a(ns["Model"]) and not ns["linear"].is_a(ns["Model"])
    assert not ns["keyword"].is_a("module")
    assert ns["Model"].is_a("type")


def test_names_lookups_like_a_dict():
    ns, _ = student(x=3)
    assert "x" in ns and "y" not in ns
    assert ns.get("y", "default") == "default" and ns.get("x") == 3
    with pytest.raises(KeyError):
        ns["y"]


def test_a_handle_of_another_session_is_not_sent():
    one, _ = student(keyword=keyword)
    two, _ = student(keyword=keyword)
    with pytest.raises(TypeError, match="cannot send"):
        two["keyword"](one["keyword"])
    with pytest.raises(TypeError, match="cannot send"):
        two["keyword"](object())


# ================================================================== refused values


class SneakyTensor(torch.Tensor):
    def __eq__(self, other):
        return True


class SneakyArray(np.ndarray):
    pass


@pytest.mark.parametrize(
    "value, why",
    [
        (torch.ones(2).as_subclass(SneakyTensor), "a subclass of torch.Tensor"),
        (np.ones(2).view(SneakyArray), "a subclass of numpy.ndarray"),
        (np.ma.masked_array([1.0, 2.0]), "a subclass of numpy.ndarray"),
        (torch.ones(2, dtype=torch.complex64), "a complex64 tensor"),
        (np.ones(2, dtype=np.complex128), "an array of dtype complex128"),
        (np.array([1, "a", None], dtype=object), "an array of dtype object"),
        (np.zeros(2, dtype="datetime64[s]"), "an array of dtype datetime64[s]"),
        (np.zeros(2, dtype=np.longdouble), f"an array of dtype {np.dtype(np.longdouble)}"),
        (torch.eye(2).to_sparse(), "tensor"),
    ],
    ids=[
        "tensor_subclass",
        "ndarray_subclass",
        "masked",
        "complex_tensor",
        "complex_array",
        "object_array",
        "datetime",
        "longdouble",
        "sparse",
    ],
)
def test_non_plain_arrays_come_back_refused(value, why):
    got = back(value)
    assert isinstance(got, wire.Refused), got
    assert why in got.why
    assert type(value).__name__ in got.cls
    with pytest.raises(checks.GradingError, match="expected a plain tensor"):
        checks.tensor(got, "x")
    nested = back((value, 1))
    assert isinstance(nested[0], wire.Refused) and nested[1] == 1


def test_other_objects_come_back_as_handles():
    class Box:
        pass

    for value in (Box(), {1: "int keys"}, list(range(agent.MAX_ITEMS + 1)), range(3), {1, 2}):
        assert isinstance(back(value), Remote), value
    deep = back([[[[[[[[[[1]]]]]]]]]])  # data down to MAX_DEPTH, a handle below
    for _ in range(agent.MAX_DEPTH):
        assert type(deep) is list and len(deep) == 1
        deep = deep[0]
    assert isinstance(deep, Remote) and deep.cls == "builtins.list"
    circular = []
    circular.append(circular)
    assert type(back(circular)) is list


# ============================================================ the student's exceptions


def test_the_students_exception_comes_back_as_student_raised():
    def broken(x):
        raise ValueError(f"bad {x}")

    class Boom:
        @property
        def value(self):
            raise KeyError("deep")

    def exits():
        raise SystemExit(3)

    ns, _ = student(broken=broken, boom=Boom(), exits=exits)
    with pytest.raises(StudentRaised) as info:
        ns["broken"](5)
    assert (info.value.kind, info.value.message) == ("ValueError", "bad 5")
    with pytest.raises(StudentRaised, match="KeyError: 'deep'"):
        ns["boom"].value  # noqa: B018
    with pytest.raises(StudentRaised, match="SystemExit: 3"):
        ns["exits"]()
    with pytest.raises(StudentRaised, match="TypeError"):
        ns["broken"]()  # a call the function cannot take is the student's error too
    assert ns["broken"].__name__ == "broken"  # the session is still usable


def test_an_exception_that_cannot_be_printed_is_still_the_students():
    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no message for you")

    def raises_unprintable():
        raise Unprintable()

    def huge_int():
        return 10**5000

    ns, _ = student(raises_unprintable=raises_unprintable, huge_int=huge_int)
    with pytest.raises(StudentRaised) as info:
        ns["raises_unprintable"]()
    assert (info.value.kind, info.value.message) == ("Unprintable", "<unprintable>")
    with pytest.raises(StudentRaised, match="ValueError: Exceeds the limit"):
        ns["huge_int"]()  # an int JSON cannot write is refused in the kernel, as the student's
    assert ns["huge_int"].__name__ == "huge_int"


# ==================================================================== attacks on the wire

# Arrays travel as a typed header and raw bytes: their attacks are in test_wire_frames.py.


def decode(item):
    return wire.decode(item, lambda item: ("remote", item["id"]))


@pytest.mark.parametrize(
    "item",
    [
        {"t": "pickle", "v": "gASV"},
        {"t": "object"},
        {"t": None},
        {},
        {"t": "int", "v": "3"},
        {"t": "int", "v": 2**70},
        {"t": "int", "v": 1.5},
        {"t": "int", "v": True},
        {"t": "bool", "v": 1},
        {"t": "float", "v": "abc"},
        {"t": "float", "v": None},
        {"t": "float", "v": 10**400},
        {"t": "str", "v": 5},
        {"t": "str", "v": "x" * (wire.MAX_TEXT + 1)},
        {"t": "list", "items": {"a": 1}},
        {"t": "tuple", "items": None},
        {"t": "list", "items": [{"t": "int", "v": 1}] * (wire.MAX_ITEMS + 1)},
        {"t": "dict", "items": [1, 2]},
        {"t": "dict", "items": {"a": "not an item"}},
        {"t": "handle", "id": "0"},
        {"t": "handle"},
        {"t": "array", "lib": "torch"},
        {"t": "list", "items": [{"t": "exec", "v": "import os"}]},
    ],
    ids=repr,
)
def test_malformed_or_unknown_items_are_refused(item):
    with pytest.raises(wire.ReplyError):
        decode(item)


@pytest.mark.parametrize("reply", [None, [], "none", 3, [{"t": "none"}], ("t", "none")], ids=repr)
def test_non_dict_replies_are_refused(reply):
    with pytest.raises(wire.ReplyError, match="malformed reply"):
        decode(reply)


def nested(depth):
    item = {"t": "int", "v": 1}
    for _ in range(depth):
        item = {"t": "list", "items": [item]}
    return item


def test_nesting_beyond_max_depth_is_refused():
    assert decode(nested(wire.MAX_DEPTH)) == [[[[[[[[1]]]]]]]]
    with pytest.raises(wire.ReplyError, match="malformed reply"):
        decode(nested(wire.MAX_DEPTH + 1))
    with pytest.raises(wire.ReplyError, match="malformed reply"):
        decode(nested(5000))


class Forged:
    """A channel that answers every request with ``reply(request)`` (text, no arrays)."""

    def __init__(self, reply):
        self.reply = reply
        self.requests = []

    def send(self, text, arrays=()):
        request = json.loads(text)
        self.requests.append(request)
        return self.reply(request), []


def forged(reply):
    return StudentNamespace(Session(Forged(reply)))


@pytest.mark.parametrize(
    "text, message",
    [
        ("not json", "not readable"),
        (None, "not readable"),
        ("[" * 100_000 + "]" * 100_000, "not readable"),
        ('{"seq": 0, "value": ' + '{"t": "list", "items": [' * 50_000, "not readable"),
        ("null", "different request"),
        ("[]", "different request"),
        ('"x"', "different request"),
        ("5", "different request"),
        ('{"value": {"t": "int", "v": 1}}', "different request"),
        ('{"seq": 7, "value": {"t": "int", "v": 1}}', "different request"),
        ('{"seq": "0", "value": {"t": "int", "v": 1}}', "different request"),
        ('{"seq": 0, "raised": "ValueError"}', "not readable"),
        ('{"seq": 0}', "not plain data"),
        ('{"seq": 0, "value": {"t": "eval", "v": "1+1"}}', "not plain data"),
        ('{"seq": 0, "value": [1, 2]}', "not plain data"),
    ],
    ids=lambda v: repr(v)[:40],
)
def test_session_turns_every_forged_reply_into_a_kernel_fault(text, message):
    ns = forged(lambda request: text)
    with pytest.raises(KernelFault, match=message):
        ns["x"]


def test_a_reply_for_the_wrong_seq_is_refused_and_right_seqs_pass():
    honest = forged(lambda r: json.dumps({"seq": r["seq"], "value": {"t": "int", "v": r["seq"]}}))
    assert [honest["x"] for _ in range(3)] == [0, 1, 2]
    replay = forged(lambda r: json.dumps({"seq": 0, "value": {"t": "int", "v": 1}}))
    assert replay["x"] == 1
    with pytest.raises(KernelFault, match="different request"):
        replay["x"]  # the same reply again: a replay of request 0


def test_a_forged_student_raised_is_bounded_data():
    ns = forged(
        lambda r: json.dumps(
            {"seq": r["seq"], "raised": {"type": "E" * 500, "message": "m" * 9999}}
        )
    )
    with pytest.raises(StudentRaised) as info:
        ns["x"]
    assert len(info.value.kind) == 100 and len(info.value.message) == 2000


# ======================================================================== the agent


def test_the_agent_imports_nothing_of_the_course():
    tree = ast.parse(Path(agent.__file__).read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            modules.add("." * node.level + (node.module or ""))
    assert modules, "the parse found no imports at all"
    assert not {m for m in modules if m.startswith(("attncourse", "."))}, modules
    assert AGENT_SOURCE == Path(agent.__file__).read_text()


def test_the_agent_runs_from_its_text_alone():
    """What the kernel gets: the source exec'd in a fresh dict, no attncourse on the path."""
    namespace = {"__name__": "attncourse_judge_agent"}
    exec(compile(AGENT_SOURCE, "<judge agent>", "exec"), namespace)
    serve = namespace["make_server"]({"x": np.float32(2.5)})
    text, arrays = serve(json.dumps({"op": "get", "name": "x", "seq": 4}))
    assert json.loads(text) == {
        "value": {"t": "float", "v": "2.5", "cls": "numpy.float32"},
        "seq": 4,
    }
    assert arrays == []
    reply = json.loads(serve(json.dumps({"op": "unknown", "seq": 5}))[0])
    assert reply["raised"]["type"] == "ValueError" and reply["seq"] == 5


# ======================================================================== verdicts


def test_run_check_turns_every_outcome_into_a_message():
    def passes(ns):
        checks.seed_for("drawn inside the secret scope")

    def grading_error(ns):
        checks.fail("Part 1: wrong", "1", "2", "off by one")

    def student_raised(ns):
        raise StudentRaised("ZeroDivisionError", "division by zero")

    def kernel_fault(ns):
        raise KernelFault("the kernel died while your code was being called")

    def assertion(ns):
        raise AssertionError("plain assertion message")

    def bare_assertion(ns):
        raise AssertionError

    def other(ns):
        raise IndexError("tuple index out of range")

    assert verdict.run_check(passes, None, "secret") is None
    assert verdict.run_check(grading_error, None, "s").startswith("Part 1: wrong\n  expected: 1")
    assert verdict.run_check(student_raised, None, "s") == (
        "your code raised ZeroDivisionError while it was being checked: division by zero"
    )
    assert verdict.run_check(kernel_fault, None, "s") == (
        "the check could not be completed: the kernel died while your code was being called"
    )
    assert verdict.run_check(assertion, "ns", "s") == "plain assertion message"
    assert verdict.run_check(bare_assertion, None, "s") == "the check failed"
    message = verdict.run_check(other, None, "s")
    assert message.startswith("the answer could not be checked (IndexError: tuple index")
    with pytest.raises(RuntimeError, match="outside secret_scope"):
        checks.seed_for("the scope ends with the check")


def test_run_check_draws_from_the_secret_it_is_given():
    seen = []

    def draw(ns):
        seen.append(checks.seed_for("t"))

    for secret in ("a", "a", "b"):
        verdict.run_check(draw, None, secret)
    assert seen[0] == seen[1] != seen[2]
    assert verdict.new_secret() != verdict.new_secret() and len(verdict.new_secret()) == 32


def grade_cell(outputs):
    cell = nbformat.v4.new_code_cell(
        source="# visible checks",
        metadata={
            "nbgrader": {
                "grade": True,
                "solution": False,
                "locked": True,
                "points": 2,
                "grade_id": "t1",
                "schema_version": 3,
            }
        },
    )
    cell.outputs = outputs
    return cell


def test_verdict_outputs_score_full_or_zero_in_nbgrader():
    passed = verdict.outputs(None)
    assert not [o for o in passed if o.output_type == "error"]
    assert determine_grade(grade_cell(passed)) == (2, 2)
    failed = verdict.outputs("Part 1: wrong\n  expected: 1")
    assert len(failed) == 1 and failed[0].output_type == "error"
    assert failed[0].ename == "GradingError" and failed[0].evalue == "Part 1: wrong\n  expected: 1"
    assert determine_grade(grade_cell(failed)) == (0, 2)
    for output in passed + failed:
        nbformat.validate(nbformat.v4.new_notebook(cells=[grade_cell([output])]))


# ===================================================================== registries


def test_every_test_cell_has_a_check_and_every_check_a_test_cell():
    for assignment in assignments():
        path = ROOT / "source" / assignment / f"{assignment}.ipynb"
        nb = nbformat.read(path, as_version=4)
        tests = [grade_id(cell) for cell in nb.cells if is_test_cell(cell)]
        assert len(tests) == len(set(tests)), f"{assignment}: duplicate grade_ids"
        registry = importlib.import_module(f"attncourse.grading.{assignment}").CHECKS
        assert registry is verdict.checks_of(assignment)
        assert set(registry) == set(tests), (
            f"{assignment}: test cells without a check: {sorted(set(tests) - set(registry))}; "
            f"checks without a test cell: {sorted(set(registry) - set(tests))}"
        )
        assert all(callable(check) for check in registry.values()), assignment


DOTTED = re.compile(r"""["']((?:attncourse|nbgrader|nbconvert)(?:\.\w+)+)["']""")


def test_every_plugin_named_in_nbgrader_config_imports():
    names = DOTTED.findall((ROOT / "nbgrader_config.py").read_text())
    assert len(names) >= 20, names
    for name in names:
        module, _, attr = name.rpartition(".")
        try:
            found = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            found = importlib.import_module(name)  # the name of a module itself
        assert found is not None, name
