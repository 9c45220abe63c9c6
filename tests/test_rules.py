"""attncourse.rules: the source rules see loops, fused attention, torch and chained outputs."""

import pytest
from cellrun import fresh_namespace, run_cell

from attncourse import rules
from attncourse.checks import GradingError

OUTPUTS = ("W_K_MLA_hat", "W_V_MLA_hat", "W_Q_MLA_hat", "W_O_MLA_hat")


def defined(source, name):
    ns = run_cell(source, fresh_namespace())
    return ns[name], ns


LOOPS = {
    "for": "def f(x):\n    for i in range(3):\n        x = x + i\n    return x",
    "while": "def f(x):\n    while x.sum() > 0:\n        x = x - 1\n    return x",
    "list comprehension": "def f(x):\n    return torch.stack([x[i] for i in range(2)])",
    "generator": "def f(x):\n    return sum(x[i] for i in range(2))",
    "dict comprehension": "def f(x):\n    return {i: x for i in range(2)}",
    "loop in a helper": "def g(x):\n    for _ in range(2):\n        x = x * 2\n    return x\n\n\ndef f(x):\n    return g(x)",
    "loop in a method": "class f:\n    def forward(self, x):\n        for _ in range(2):\n            x = x * 2\n        return x",
}


@pytest.mark.parametrize("kind", LOOPS)
def test_loops_are_found(kind):
    obj, ns = defined(LOOPS[kind], "f")
    with pytest.raises(GradingError, match="forbids loops"):
        rules.assert_no_loops(obj, ns, "Part X")


def test_loop_free_code_and_loop_free_helpers_pass():
    source = (
        "def g(t, H):\n    B, L, F = t.shape\n    return t.view(B, L, H, F // H).transpose(1, 2)\n\n\n"
        "def f(x):\n    return g(x, 2).sum(-1)  # a comment with for in it"
    )
    obj, ns = defined(source, "f")
    rules.assert_no_loops(obj, ns, "Part X")


def test_fused_attention_and_torch_are_found():
    obj, ns = defined(
        "def f(q, k, v):\n    return nn.functional.scaled_dot_product_attention(q, k, v)", "f"
    )
    with pytest.raises(GradingError, match="by hand"):
        rules.assert_no_fused_attention(obj, ns, "Part 5")
    obj, ns = defined("def f(W):\n    return torch.linalg.svd(torch.from_numpy(W))", "f")
    with pytest.raises(GradingError, match="numpy only"):
        rules.assert_no_torch(obj, ns, "Part 10")
    obj, ns = defined("def f(W):\n    return np.linalg.svd(W)", "f")
    rules.assert_no_torch(obj, ns, "Part 10")


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


@pytest.mark.parametrize(
    "source", [GOOD, DIRECT], ids=["sizes_and_scalars", "expressions_in_return"]
)
def test_one_statement_per_output_accepts_size_helpers(source):
    func, ns = defined(source, "reduced_matrices")
    rules.assert_one_statement_per_output(func, ns, "Part 13", OUTPUTS, size_params=("H",))
    rules.assert_one_statement_per_output(func, ns, "Part 13", OUTPUTS)  # inferred sizes


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
    func, ns = defined(CHAINED[kind], "reduced_matrices")
    with pytest.raises(GradingError, match="one statement"):
        rules.assert_one_statement_per_output(func, ns, "Part 13", OUTPUTS, size_params=("H",))


def test_rules_fail_clearly_without_source():
    with pytest.raises(GradingError, match="could not find the source"):
        rules.assert_no_loops(len, {}, "Part X")
