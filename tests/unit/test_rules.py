"""attncourse.judge.rules: the source rules read the notebook's source by name, never the kernel.

Every case passes the cells a student wrote as a list of source strings (or an object with
``.sources``, as the judge's StudentNamespace has) and names the answer it judges. Each
rule has its honest control: the same answer written without the forbidden construct passes.
"""

import textwrap
from types import SimpleNamespace

import pytest

from attncourse.judge import recordable, rules
from attncourse.judge.checks import GradingError
from attncourse.judge.program import Program, as_cells
from attncourse.judge.resolve import reach

OUTPUTS = ("W_K_MLA_hat", "W_V_MLA_hat", "W_Q_MLA_hat", "W_O_MLA_hat")

# ----------------------------------------------------------------------------- loops

LOOPS = {
    "for": "def f(x):\n    for i in range(3):\n        x = x + i\n    return x",
    "while": "def f(x):\n    while x.sum() > 0:\n        x = x - 1\n    return x",
    "list comprehension": "def f(x):\n    return torch.stack([x[i] for i in range(2)])",
    "set comprehension": "def f(x):\n    return len({float(v) for v in x})",
    "generator": "def f(x):\n    return sum(x[i] for i in range(2))",
    "dict comprehension": "def f(x):\n    return {i: x for i in range(2)}",
    "async for": "async def f(xs):\n    async for x in xs:\n        pass",
    "loop in a helper": "def g(x):\n    for _ in range(2):\n        x = x * 2\n    return x\n\n\ndef f(x):\n    return g(x)",
    "loop in a method": "class f:\n    def forward(self, x):\n        for _ in range(2):\n            x = x * 2\n        return x",
    "loop in a nested function": "def f(x):\n    def inner(y):\n        while False:\n            pass\n        return y\n    return inner(x)",
}


@pytest.mark.parametrize("kind", LOOPS)
def test_loops_are_found(kind):
    with pytest.raises(GradingError, match="forbids loops"):
        rules.assert_no_loops("f", [LOOPS[kind]], "Part X")


def test_a_loop_in_a_helper_of_another_cell_is_found():
    cells = [
        "def g(x):\n    for _ in range(2):\n        x = x * 2\n    return x",
        "def f(x):\n    return g(x)",
    ]
    with pytest.raises(GradingError, match=r"for loop in `g`, line 2 of a cell you added"):
        rules.assert_no_loops("f", cells, "Part X")


VECTORISED = (
    "def split_heads(t, H):\n"
    "    B, L, F = t.shape\n"
    "    return t.view(B, L, H, F // H).transpose(1, 2)\n\n\n"
    "def f(x):\n"
    "    # a comment with for and while in it, and a string: 'for i in range(3)'\n"
    "    return split_heads(x, 2).sum(-1)\n"
)


def test_loop_free_code_and_loop_free_helpers_pass():
    rules.assert_no_loops("f", [VECTORISED], "Part X")


def test_a_loop_elsewhere_in_the_notebook_does_not_count():
    other = (
        "def plot_all(xs):\n    for x in xs:\n        print(x)\n\n\nfor i in range(3):\n    pass"
    )
    rules.assert_no_loops("f", [other, VECTORISED], "Part X")
    with pytest.raises(GradingError, match="forbids loops"):
        rules.assert_no_loops("plot_all", [other, VECTORISED], "Part X")


def test_a_namespace_with_sources_is_read_like_a_list():
    ns = SimpleNamespace(sources=[LOOPS["for"]])
    with pytest.raises(GradingError, match="forbids loops"):
        rules.assert_no_loops("f", ns, "Part X")
    rules.assert_no_loops("f", SimpleNamespace(sources=[VECTORISED]), "Part X")


# ------------------------------------------------------------- finding the definition

LOOPY_CLASS = (
    "class {name}(nn.Module):\n"
    "    def forward(self, x):\n"
    "        for _ in range(2):\n"
    "            x = x * 2\n"
    "        return x\n"
)
CLEAN_CLASS = (
    "class {name}(nn.Module):\n    def forward(self, x):\n        return x.view(-1).sum(-1)\n"
)


def test_an_alias_is_followed_to_its_definition():
    loopy = [LOOPY_CLASS.format(name="_Impl"), "MyMHA = _Impl"]
    with pytest.raises(GradingError, match="forbids loops"):
        rules.assert_no_loops("MyMHA", loopy, "Part 5")
    rules.assert_no_loops("MyMHA", [CLEAN_CLASS.format(name="_Impl"), "MyMHA = _Impl"], "Part 5")


def test_a_method_assigned_later_in_another_cell_counts():
    cells = [
        CLEAN_CLASS.format(name="MyMHA"),
        "def loopy_forward(self, x):\n    while x.sum() > 0:\n        x = x - 1\n    return x",
        "MyMHA.forward = loopy_forward",
    ]
    with pytest.raises(
        GradingError, match=r"while loop in `loopy_forward`, line 2 of a cell you added"
    ):
        rules.assert_no_loops("MyMHA", cells, "Part 5")
    rules.assert_no_loops("MyMHA", cells[:2], "Part 5")  # control: never attached


def test_a_loop_in_a_base_class_of_the_student_counts():
    cells = [
        "class Base(nn.Module):\n    def heads(self, x):\n        return [x for _ in range(2)]",
        "class MyMHA(Base):\n    def forward(self, x):\n        return self.heads(x)[0]",
    ]
    with pytest.raises(GradingError, match="list comprehension"):
        rules.assert_no_loops("MyMHA", cells, "Part 5")
    control = [
        "class Base(nn.Module):\n    def heads(self, x):\n        return x.expand(2, *x.shape)",
        cells[1],
    ]
    rules.assert_no_loops("MyMHA", control, "Part 5")


def test_every_definition_is_judged_not_only_the_last():
    """The kernel may hold any binding (a later clean one under ``if False:``, after a raise):
    a loopy draft anywhere in the student's cells counts; clean drafts pass."""
    clean, loopy = CLEAN_CLASS.format(name="MyMHA"), LOOPY_CLASS.format(name="MyMHA")
    rules.assert_no_loops("MyMHA", [clean, clean], "Part 5")
    for cells in (
        [loopy, clean],
        [clean, loopy],
        [loopy, "if False:\n" + textwrap.indent(clean, "    ")],
        [clean, "def _install():\n    global MyMHA\n" + textwrap.indent(loopy, "    ")],
    ):
        with pytest.raises(GradingError, match="forbids loops"):
            rules.assert_no_loops("MyMHA", cells, "Part 5")


def test_setattr_on_the_answer_counts():
    cells = [
        CLEAN_CLASS.format(name="MyMHA"),
        "def _fwd(self, x, y):\n    for h in range(3):\n        pass\n    return x\n"
        "setattr(MyMHA, 'forward', _fwd)",
    ]
    with pytest.raises(GradingError, match="forbids loops"):
        rules.assert_no_loops("MyMHA", cells, "Part 5")


def test_a_local_name_does_not_reach_a_global_of_the_same_name():
    """forward's parameter ``x`` is not the student's top-level ``x`` built with a comprehension."""
    cells = [CLEAN_CLASS.format(name="MyMHA"), "x = [i for i in range(3)]"]
    rules.assert_no_loops("MyMHA", cells, "Part 5")


@pytest.mark.parametrize(
    "cells",
    [
        ['exec("class MyMHA:\\n    pass")'],
        ['MyMHA = type("MyMHA", (nn.Module,), {"forward": lambda self, x: x})'],
        ['globals()["MyMHA"] = type("MyMHA", (), {})'],
        [],
        ["def other(x):\n    return x"],
    ],
    ids=["exec", "type", "globals", "no_cells", "other_name"],
)
def test_a_definition_the_source_does_not_show_fails(cells):
    with pytest.raises(GradingError, match="could not find the definition of `MyMHA`"):
        rules.assert_no_loops("MyMHA", cells, "Part 5")


def test_a_renamed_class_is_still_judged_by_its_notebook_name():
    cells = [
        "def innocent(x):\n    return x",
        LOOPY_CLASS.format(name="MyMHA"),
        'MyMHA.__name__ = innocent.__name__\nMyMHA.__qualname__ = "innocent"',
    ]
    with pytest.raises(GradingError, match="forbids loops"):
        rules.assert_no_loops("MyMHA", cells, "Part 5")
    rules.assert_no_loops("innocent", cells, "Part 5")
    # and an innocent function calling itself "MyMHA" does not stand in for the class
    cells = [
        LOOPY_CLASS.format(name="MyMHA"),
        'def innocent(x):\n    return x\ninnocent.__name__ = "MyMHA"',
    ]
    with pytest.raises(GradingError, match="forbids loops"):
        rules.assert_no_loops("MyMHA", cells, "Part 5")


def test_ipython_magics_do_not_break_parsing():
    cells = [
        "%matplotlib inline\n" + VECTORISED + "x = torch.ones(2, 3, 4)\n%timeit f(x)\n!ls\n",
        "f?",
    ]
    rules.assert_no_loops("f", cells, "Part X")
    loopy = ["%precision 3\n" + LOOPS["for"] + "\n%timeit f(1)\n"]
    with pytest.raises(GradingError, match="forbids loops"):
        rules.assert_no_loops("f", loopy, "Part X")


@pytest.mark.parametrize("magic", ["%%time\n", "%%capture out\n"], ids=["time", "capture"])
def test_code_run_by_a_cell_magic_is_read(magic):
    """%%time and %%capture run their body in the notebook: a definition there is the
    definition (an honest student timing the answer cell is still judged, and a loopy
    redefinition hidden under the magic is seen)."""
    rules.assert_no_loops("MyMHA", [magic + CLEAN_CLASS.format(name="MyMHA")], "Part 5")
    hidden = [CLEAN_CLASS.format(name="MyMHA"), magic + LOOPY_CLASS.format(name="MyMHA")]
    with pytest.raises(GradingError, match="forbids loops"):
        rules.assert_no_loops("MyMHA", hidden, "Part 5")
    line = [CLEAN_CLASS.format(name="MyMHA"), LOOPY_CLASS.format(name="_L"), "%time MyMHA = _L"]
    with pytest.raises(GradingError, match="forbids loops"):
        rules.assert_no_loops("MyMHA", line, "Part 5")


def test_a_cell_that_does_not_parse_is_skipped():
    rules.assert_no_loops("f", ["def broken(:\n    pass", VECTORISED, '"""unterminated'], "P")


# ------------------------------------------------------------- fused attention, torch

FUSED = {
    "functional": "def f(q, k, v):\n    return nn.functional.scaled_dot_product_attention(q, k, v)",
    "imported name": "from torch.nn.functional import scaled_dot_product_attention as sdpa\n\n\ndef f(q, k, v):\n    return sdpa(q, k, v)",
    "module": "class f(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.mha = nn.MultiheadAttention(8, 2)",
    "getattr": 'def f(q, k, v):\n    return getattr(nn.functional, "scaled_dot_product_attention")(q, k, v)',
    "in a helper": "def attend(q, k, v):\n    return torch.nn.functional.multi_head_attention_forward(q, k, v)\n\n\ndef f(q, k, v):\n    return attend(q, k, v)",
}


@pytest.mark.parametrize("kind", FUSED)
def test_fused_attention_is_found(kind):
    with pytest.raises(GradingError, match="by hand"):
        rules.assert_no_fused_attention("f", [FUSED[kind]], "Part 5")


def test_attention_by_hand_passes_the_fused_rule():
    by_hand = (
        "def f(q, k, v):\n"
        "    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5\n"
        "    return torch.softmax(scores, dim=-1) @ v\n"
    )
    rules.assert_no_fused_attention("f", [by_hand], "Part 5")
    rules.assert_no_loops("f", [by_hand], "Part 5")


def test_torch_in_a_numpy_only_answer_is_found():
    with pytest.raises(GradingError, match="numpy only"):
        rules.assert_no_torch(
            "f", ["def f(W):\n    return torch.linalg.svd(torch.from_numpy(W))"], "Part 10"
        )
    with pytest.raises(GradingError, match="numpy only"):
        rules.assert_no_torch("f", ["def f(W):\n    return nn.Linear(2, 2)(W)"], "Part 10")
    helper = ["def g(W):\n    return torch.as_tensor(W)", "def f(W):\n    return g(W).numpy()"]
    with pytest.raises(GradingError, match="numpy only"):
        rules.assert_no_torch("f", helper, "Part 10")
    imported = ["def f(W):\n    import torch.linalg as L\n    return L.svd(W)"]
    with pytest.raises(GradingError, match="numpy only"):
        rules.assert_no_torch("f", imported, "Part 10")
    top_level = ["from torch import from_numpy as as_array", "def f(W):\n    return as_array(W)"]
    with pytest.raises(GradingError, match="numpy only"):
        rules.assert_no_torch("f", top_level, "Part 10")
    rules.assert_no_torch("f", ["def f(W):\n    return np.linalg.svd(W)"], "Part 10")
    honest = [
        "import numpy.linalg as la",
        "def f(W):\n    import numpy\n    return la.svd(numpy.asarray(W))",
    ]
    rules.assert_no_torch("f", honest, "Part 10")


# ------------------------------------------------------------ one statement per output

GOOD = """
def reduced_matrices(W_DKV, W_UK, W_UV, W_Q, W_O, H):
    r, D = W_DKV.shape
    d = D // H
    scale = (r / d) ** 0.5
    W_K_MLA_hat = W_DKV
    W_V_MLA_hat = W_K_MLA_hat
    W_Q_MLA_hat = scale * (W_UK.view(H, d, r).mT @ W_Q.view(H, d, D)).reshape(H * r, D)
    W_O_MLA_hat = (W_O.view(D, H, d).transpose(0, 1) @ W_UV.view(H, d, r)).transpose(0, 1).reshape(D, H * r)
    return W_K_MLA_hat, W_V_MLA_hat, W_Q_MLA_hat, W_O_MLA_hat
"""

DIRECT = """
def reduced_matrices(W_DKV, W_UK, W_UV, W_Q, W_O, H):
    r = W_DKV.shape[0]
    D = W_DKV.shape[1]
    return W_DKV, W_DKV, np.sqrt(r / (D / H)) * W_Q, W_O
"""

ONE_LINE_HELPER = (
    'def heads(W, H):\n    """One statement."""\n    return W.reshape(H, -1)\n\n'
    + DIRECT.replace(", W_O\n", ", heads(W_O, H).reshape(W_O.shape)\n")
)


@pytest.mark.parametrize(
    "source",
    [GOOD, DIRECT, ONE_LINE_HELPER],
    ids=["sizes_and_scalars", "expressions_in_return", "one_statement_helper"],
)
def test_one_statement_per_output_accepts_size_helpers(source):
    rules.assert_one_statement_per_output(
        "reduced_matrices", [source], "Part 13", OUTPUTS, size_params=("H",)
    )
    rules.assert_one_statement_per_output("reduced_matrices", [source], "Part 13", OUTPUTS)


CHAINED = {
    "intermediate tensor": GOOD.replace(
        "    W_K_MLA_hat = W_DKV\n", "    A = W_Q.view(H, d, D)\n    W_K_MLA_hat = W_DKV\n"
    ).replace("@ W_Q.view(H, d, D)", "@ A"),
    "assigned twice": GOOD.replace("    return", "    W_O_MLA_hat = W_O_MLA_hat + 0\n    return"),
    "augmented assignment": GOOD.replace("    return", "    W_Q_MLA_hat *= 1.0\n    return"),
    "in-place method": GOOD.replace("    return", "    W_Q_MLA_hat.mul_(1.0)\n    return"),
    "alias of an argument": GOOD.replace("    scale =", "    Wq = W_Q\n    scale =").replace(
        "@ W_Q.view", "@ Wq.view"
    ),
    "return of an intermediate": DIRECT.replace(
        "    return W_DKV,", "    T = W_O * 2\n    return W_DKV,"
    ).replace(", W_O\n", ", T\n"),
    "multi-statement helper": (
        "def helper(W):\n    t = W * 2\n    return t\n\n"
        + DIRECT.replace(", W_O\n", ", helper(W_O)\n")
    ),
}


@pytest.mark.parametrize("kind", CHAINED)
def test_one_statement_per_output_rejects_chains(kind):
    with pytest.raises(GradingError, match="one statement"):
        rules.assert_one_statement_per_output(
            "reduced_matrices", [CHAINED[kind]], "Part 13", OUTPUTS, size_params=("H",)
        )


def test_one_statement_per_output_reads_a_helper_of_another_cell():
    cells = [
        "def helper(W):\n    t = W * 2\n    return t",
        DIRECT.replace(", W_O\n", ", helper(W_O)\n"),
    ]
    with pytest.raises(
        GradingError,
        match=r"helper 'helper' \(in a cell you added\) computes its result in 2 statements",
    ):
        rules.assert_one_statement_per_output(
            "reduced_matrices", cells, "Part 13", OUTPUTS, size_params=("H",)
        )


def test_one_statement_per_output_refuses_a_class_naming_part_kind_and_place():
    """The rule is proved on the last def or class of the name: a class there (the name later
    rebound to a function the kernel runs) is refused, not a crash of the judge; the same
    function as a def beside it is the control."""
    function = DIRECT.replace("def reduced_matrices(", "def _reduced(")
    source = "class reduced_matrices:\n    pass\n" + function + "\nreduced_matrices = _reduced\n"
    with pytest.raises(GradingError) as refused:
        rules.assert_one_statement_per_output("reduced_matrices", [source], "Part 13", OUTPUTS)
    message = str(refused.value)
    assert message.startswith("Part 13: reduced_matrices must be a function"), message
    assert "expected: `def reduced_matrices(...)`" in message
    assert "got:      a class `reduced_matrices` on line 1 of a cell you added" in message
    rules.assert_one_statement_per_output("reduced_matrices", [DIRECT], "Part 13", OUTPUTS)


def test_rules_fail_clearly_without_source():
    for rule in (rules.assert_no_loops, rules.assert_no_fused_attention, rules.assert_no_torch):
        with pytest.raises(GradingError, match="could not find the definition"):
            rule("f", [], "Part X")
    with pytest.raises(GradingError, match="could not find the definition"):
        rules.assert_one_statement_per_output("reduced_matrices", [], "Part 13", OUTPUTS)


# ------------------------------------------------- one resolution per answer and notebook

SHARED = {
    "loop": "def f(x):\n    for _ in range(2):\n        x = x * 2\n    return x",
    "fused": "def f(q, k, v):\n    return torch.nn.functional.scaled_dot_product_attention(q, k, v)",
    "torch": "def f(x):\n    return torch.softmax(x, -1)",
    "clean": VECTORISED,
    "tensor subclass": "class T(torch.Tensor):\n    pass\n\n\ndef f(x):\n    return T(x)",
}
RULES = {
    "no loops": lambda ns: rules.assert_no_loops("f", ns, "Part X"),
    "fused": lambda ns: rules.assert_no_fused_attention("f", ns, "Part X"),
    "numpy only": lambda ns: rules.assert_no_torch("f", ns, "Part X"),
    "footprint": lambda ns: recordable.assert_recorded("f", ns, "Part X"),
}


def _verdict(rule, namespace):
    try:
        rule(namespace)
    except GradingError as error:
        return str(error)
    return None


@pytest.mark.parametrize("kind", SHARED)
def test_the_rules_of_one_notebook_share_its_resolution_and_keep_their_verdicts(kind):
    """Every check of a notebook reads one Reach per answer (the StudentNamespace's program
    caches it): each rule's verdict, in any order and after every other rule, is the verdict
    it gives on a notebook parsed afresh."""
    cells = ["import torch", SHARED[kind]]
    alone = {name: _verdict(rule, cells) for name, rule in RULES.items()}
    for order in (list(RULES), list(reversed(RULES))):
        shared = SimpleNamespace(program=Program(as_cells(cells)))
        for _ in range(2):
            assert {name: _verdict(RULES[name], shared) for name in order} == alone
        assert reach(shared.program, "f") is reach(shared.program, "f")
        assert reach(shared.program, "f", ["g"]) is not reach(shared.program, "f")
    assert kind == "clean" or any(alone.values()), alone
