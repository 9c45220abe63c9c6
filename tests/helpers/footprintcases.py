"""Tiled attention forwards for the footprint check: honest ones, named mistakes, and attacks.

Shared by ``test_footprint`` (in this process) and ``test_footprint_kernel`` (one sandboxed
kernel for the whole table). Each entry is an answer cell (``flash_forward``) and, for some
attacks, a cell of the student's own that runs before it.
"""

from dataclasses import dataclass

FIRST = "import math\nimport torch\nimport torch.nn as nn\nimport numpy as np\n"

# A tiled forward; NAMES below replace its pieces.
TILED = """
def flash_forward(Q, K, V, block_q, block_k, causal=False):
    B, H, L, d = Q.shape
    scale = 1 / math.sqrt(d)
    O = torch.empty_like(Q)
    lse = torch.empty(B, H, L, dtype=Q.dtype, device=Q.device)
    for q0 in range(0, L, block_q):
        q1 = min(q0 + block_q, L)
        q = Q[:, :, q0:q1] * scale
        m = torch.full(q.shape[:-1], -math.inf, dtype=Q.dtype, device=Q.device)
        l = torch.zeros_like(m)
        acc = torch.zeros_like(q)
        for k0 in range(0, q1 if causal else L, block_k):
            k1 = min(k0 + block_k, L)
            s = SCORES
            if causal and k1 > q0:
                rows = torch.arange(q0, q1, device=Q.device)[:, None]
                cols = torch.arange(k0, k1, device=Q.device)[None, :]
                s = s.masked_fill(cols > rows, -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            p = torch.exp(s - m_new[..., None])
            alpha = torch.exp(m - m_new)
            l = alpha * l + p.sum(-1)
            acc = alpha[..., None] * acc + p @ V[:, :, k0:k1]
            m = m_new
        O[:, :, q0:q1] = acc / l[..., None]
        lse[:, :, q0:q1] = m + torch.log(l)
    return O, lse
"""
EINSUM = 'torch.einsum("bhid,bhjd->bhij", q, K[:, :, k0:k1])'
MATMUL = "q @ K[:, :, k0:k1].transpose(-2, -1)"


def tiled(scores=MATMUL, **swaps):
    text = TILED.replace("SCORES", scores)
    for old, new in swaps.items():
        text = text.replace(old, new)
    return text


# Concatenates the blocks of O and lse at the end instead of writing into preallocated ones.
CONCAT = (
    tiled(EINSUM)
    .replace("    O = torch.empty_like(Q)\n", "    outs, lses = [], []\n")
    .replace("    lse = torch.empty(B, H, L, dtype=Q.dtype, device=Q.device)\n", "")
    .replace(
        "        O[:, :, q0:q1] = acc / l[..., None]\n", "        outs.append(acc / l[..., None])\n"
    )
    .replace(
        "        lse[:, :, q0:q1] = m + torch.log(l)\n", "        lses.append(m + torch.log(l))\n"
    )
    .replace("    return O, lse", "    return torch.cat(outs, 2), torch.cat(lses, 2)")
)
FLOAT32 = (
    tiled(MATMUL)
    .replace(
        "    B, H, L, d = Q.shape\n",
        "    B, H, L, d = Q.shape\n    dtype = Q.dtype\n    Q, K, V = Q.float(), K.float(), V.float()\n",
    )
    .replace("    return O, lse", "    return O.to(dtype), lse.to(dtype)")
)
HONEST = {
    "matmul": tiled(MATMUL),
    "einsum": tiled(EINSUM),
    "bmm batched over heads": tiled(
        "torch.bmm(q.reshape(B * H, q1 - q0, d), "
        "K[:, :, k0:k1].reshape(B * H, k1 - k0, d).transpose(1, 2)).reshape(B, H, q1 - q0, k1 - k0)"
    ),
    "float32 inside": FLOAT32,
    "blocks concatenated": CONCAT,
}

NAIVE = """
def flash_forward(Q, K, V, block_q, block_k, causal=False):
    d = Q.shape[-1]
    s = SCORES / math.sqrt(d)
    if causal:
        L = Q.shape[-2]
        s = s.masked_fill(torch.ones(L, L, dtype=torch.bool, device=Q.device).triu(1), -math.inf)
    lse = torch.logsumexp(s, -1)
    return torch.exp(s - lse[..., None]) @ V, lse
"""
# The full L x L matrix, built from small pieces (blocks stacked into it).
STACKED = """
def flash_forward(Q, K, V, block_q, block_k, causal=False):
    L, d = Q.shape[-2:]
    rows = [torch.cat([Q[:, :, i:i + block_q] @ K[:, :, j:j + block_k].transpose(-2, -1)
                       for j in range(0, L, block_k)], -1) for i in range(0, L, block_q)]
    s = torch.cat(rows, -2) / math.sqrt(d)
    if causal:
        s = s.masked_fill(torch.ones(L, L, dtype=torch.bool, device=Q.device).triu(1), -math.inf)
    lse = torch.logsumexp(s, -1)
    return torch.exp(s - lse[..., None]) @ V, lse
"""
# A preallocated L x L buffer filled block by block in place.
BUFFER = STACKED.replace(
    """    rows = [torch.cat([Q[:, :, i:i + block_q] @ K[:, :, j:j + block_k].transpose(-2, -1)
                       for j in range(0, L, block_k)], -1) for i in range(0, L, block_q)]
    s = torch.cat(rows, -2) / math.sqrt(d)
""",
    """    s = Q.new_empty(Q.shape[:-1] + (L,))
    for i in range(0, L, block_q):
        s[:, :, i:i + block_q] = Q[:, :, i:i + block_q] @ K.transpose(-2, -1) / math.sqrt(d)
""",
)
STRIP = tiled(MATMUL).replace(
    "            s = q @ K[:, :, k0:k1].transpose(-2, -1)\n",
    "            s = (q @ K.transpose(-2, -1))[..., k0:k1]  # a block_q x L strip, sliced\n",
)
MISTAKES = {
    "the full L x L matrix": (NAIVE.replace("SCORES", "Q @ K.transpose(-2, -1)"), "L x L"),
    "a block_q x L strip": (STRIP, "strip"),
    "blocks stacked into L x L": (STACKED, "L x L"),
    "a preallocated L x L buffer": (BUFFER, "L x L"),
    "blocks above the diagonal computed and masked": (
        tiled(MATMUL, **{"range(0, q1 if causal else L, block_k)": "range(0, L, block_k)"}),
        "above the diagonal",
    ),
    "a causal loop one block too far": (
        tiled(
            MATMUL,
            **{
                "range(0, q1 if causal else L, block_k)": (
                    "range(0, min(q1 + block_k, L) if causal else L, block_k)"
                )
            },
        ),
        "above the diagonal",
    ),
}

# Tiled forwards with wrong values: the values checks' mistakes, never the footprint's.
VALUES_MISTAKES = {
    "the running sum not rescaled": tiled(MATMUL, **{"l = alpha * l + ": "l = l + "}),
    "lse the max alone": tiled(MATMUL, **{"= m + torch.log(l)": "= m"}),
    "the diagonal block not masked inside": tiled(
        MATMUL, **{"if causal and k1 > q0:": "if False:"}
    ),
    "the partial last blocks dropped": tiled(
        MATMUL,
        **{
            "range(0, L, block_q)": "range(0, L - block_q + 1, block_q)",
            "range(0, q1 if causal else L, block_k)": (
                "range(0, (q1 if causal else L) - block_k + 1, block_k)"
            ),
        },
    ),
}
# Forms nothing, computes nothing: no footprint point for it.
NOTHING = """
def flash_forward(Q, K, V, block_q, block_k, causal=False):
    return torch.zeros_like(Q), torch.zeros(Q.shape[:-1], dtype=Q.dtype)
"""


@dataclass(frozen=True)
class Attack:
    """An answer (and a cell of the student's own) that tries to hide what it forms; its
    control forms the same L x L matrix plainly (``MISTAKES["the full L x L matrix"]``)."""

    name: str
    answer: str
    cell: str = ""


def naive(scores, before=""):
    text = NAIVE.replace("SCORES", scores)
    if before:
        text = text.replace("    d = Q.shape[-1]\n", "    d = Q.shape[-1]\n" + before)
    return text


ATTACKS = [
    Attack("numpy", naive("torch.from_numpy(Q.numpy() @ K.numpy().swapaxes(-1, -2))")),
    Attack("np on the data", naive("torch.as_tensor(np.matmul(Q, np.swapaxes(K, -1, -2)))")),
    Attack(
        "tolist", naive("torch.tensor(Q.tolist()) @ torch.tensor(K.tolist()).transpose(-2, -1)")
    ),
    Attack("torch.compile", naive("torch.compile(lambda a, b: a @ b.transpose(-2, -1))(Q, K)")),
    Attack(
        "a popped dispatch mode",
        naive(
            "Q @ K.transpose(-2, -1)",
            "    _mode = torch.utils._python_dispatch._pop_mode()\n",
        ),
    ),
    Attack(
        "torch._C guard",
        naive("Q @ K.transpose(-2, -1)", "    _guard = torch._C._DisableTorchDispatch()\n"),
    ),
    Attack(
        "torch.utils.checkpoint",
        naive(
            "torch.utils.checkpoint.checkpoint(torch.matmul, Q, K.transpose(-2, -1), "
            "use_reentrant=False)"
        ),
    ),
    Attack("torch.jit.script", naive("torch.jit.script(torch.matmul)(Q, K.transpose(-2, -1))")),
    Attack("torch.ops.aten", naive("torch.ops.aten.matmul(Q, K.transpose(-2, -1))")),
    Attack(
        "a tensor subclass",
        naive("Q.as_subclass(Hidden) @ K.transpose(-2, -1)")
        + "\n\nclass Hidden(torch.Tensor):\n    pass\n",
    ),
    Attack(
        "getattr by a string",
        naive("torch.from_numpy(getattr(Q, 'numpy')() @ getattr(K, 'numpy')().swapaxes(-1, -2))"),
    ),
    Attack(
        "a mode pushed in another cell",
        naive("Q @ K.transpose(-2, -1)"),
        "from torch.utils._python_dispatch import _pop_mode, _push_mode\n",
    ),
    Attack(
        "a __torch_dispatch__ class in another cell",
        naive("Q @ K.transpose(-2, -1)"),
        "class Quiet(torch.Tensor):\n"
        "    @classmethod\n"
        "    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):\n"
        "        return func(*args, **(kwargs or {}))\n",
    ),
    Attack(
        "a fused kernel",
        """
def flash_forward(Q, K, V, block_q, block_k, causal=False):
    out = torch.nn.functional.scaled_dot_product_attention(Q, K, V, is_causal=causal)
    s = Q[..., :1, :] @ K.transpose(-2, -1)
    return out, torch.logsumexp(s, -1)
""",
    ),
]
