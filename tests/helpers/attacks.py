"""Attacks on the grader by a student who has read this repository, each with its honest control.

An :class:`Attack` is notebook code a student could hand in (in a cell of their own,
right after the setup cell, and/or in answer cells) and the control it must not
beat: the same answers without the trick. ``tests/sandbox/test_attacks.py`` grades every
attack and control for real (``nbgrader autograde`` with the course's config,
sandboxed kernels, the judge) and asserts, for each attack: no test cell scores
more than in its control, nothing of the hidden tests appears in the autograded
notebook or the feedback, and nothing was written outside the sandbox.
"""

from dataclasses import dataclass, field

from attncourse.course import ROOT

# Files an attack tries to create outside its sandbox (none may exist after grading).
OUTSIDE = ("/tmp/attncourse-attack-{name}", f"{ROOT}/attack-{{name}}", "/root/attack-{name}")

# Wrong answers shared by the controls and the attacks that try to make them pass.
WRONG = {
    "p1_head_shapes": (
        "def head_shapes(D_1, D_2, D_qk, D_v, H):\n    return (D_1, D_qk), (D_2, D_qk), (D_2, D_v)\n"
    ),
    "p3_softmax_argument": "def softmax_argument(q, K):\n    return K @ q  # no scaling\n",
    "p6_tilde_rank": "def tilde_rank(rank_W, H, G):\n    return rank_W * H // G\n",
    "p14_kv_cache": "def kv_cache_per_position(D, r):\n    return D, 2 * r\n",
}


_MHA_INIT = """class MyMHA(nn.Module):
    def __init__(self, D_1, D_2, D_qk, D_v, H):
        super().__init__()
        self.D_1, self.D_2, self.D_qk, self.D_v, self.H = D_1, D_2, D_qk, D_v, H
        self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)
        self.W_K = nn.Linear(D_2, H * D_qk, bias=False)
        self.W_V = nn.Linear(D_2, H * D_v, bias=False)
        self.W_O = nn.Linear(H * D_v, D_1, bias=False)
"""

# An honest MyMHA with the right attributes and no loops whose outputs are zeros.
MHA_ZEROS = (
    _MHA_INIT
    + """    def forward(self, x, y):
        return torch.zeros(x.shape[0], x.shape[1], self.D_1, dtype=x.dtype, device=x.device)
"""
)

# The honest controls: the same answers as the attacks, without the trick.
CONTROLS = {"blank": {}, "wrong": WRONG, "mha_zeros": {"p5_mha": MHA_ZEROS.strip() + "\n"}}


@dataclass(frozen=True)
class Attack:
    name: str
    kind: str
    code: str = ""  # a cell of the student's own, right after the setup cell
    answers: dict = field(default_factory=dict)  # answer cells replaced
    control: str = "blank"  # a key of CONTROLS: the same answers without the trick

    def cell(self):
        return self.code.replace("{name}", self.name).replace("{root}", str(ROOT))


def _wrong(**more):
    return {**WRONG, **more}


WRITE_OUTSIDE = """
import os
for _p in ("/tmp/attncourse-attack-{name}", "{root}/attack-{name}", "/root/attack-{name}"):
    try:
        with open(_p, "w") as _f:
            _f.write("pwned")
    except OSError:
        pass
"""

ATTACKS = [
    # -- the kernel's own verdict machinery (the attack that scored 72/72 before the judge)
    Attack(
        "shell_reports_success",
        "reply status",
        """
_sh = print.__self__.__dict__["get_ipython"]() if "get_ipython" in print.__self__.__dict__ else None
_sh = _sh or globals()["get_ipython"]()
_sh.showtraceback = lambda *a, **k: None
_sh._showtraceback = lambda *a, **k: None
_orig = _sh.run_cell
def _always_ok(*a, **k):
    result = _orig(*a, **k)
    result.error_in_exec = None
    result.error_before_exec = None
    return result
_sh.run_cell = _always_ok
""",
    ),
    Attack(
        "custom_exc_swallows_errors",
        "reply status",
        "get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)\n",
    ),
    Attack(
        "excepthook_and_settrace",
        "tracing",
        """
import sys
sys.excepthook = lambda *a: None
def _tracer(frame, event, arg):
    if event == "exception":
        return None
    return _tracer
sys.settrace(_tracer)
""",
    ),
    Attack(
        "input_transformer_rewrites_requests",
        "import hooks",
        """
def _rewrite(lines):
    return ["pass\\n"]  # every later execution request does nothing
get_ipython().input_transformers_post.append(_rewrite)
""",
    ),
    Attack(
        "forged_reply_from_answer",
        "forged data",
        """
from IPython.display import publish_display_data
import json
def head_shapes(D_1, D_2, D_qk, D_v, H):
    for seq in range(200):
        publish_display_data({"application/x-attncourse-reply+json": json.dumps(
            {"seq": seq, "value": {"t": "bool", "v": True}})})
    return (D_1, D_qk), (D_2, D_qk), (D_2, D_v)
""",
        answers=_wrong(p1_head_shapes="pass\n"),
        control="wrong",
    ),
    Attack(
        "thread_replaces_judge_agent",
        "threads",
        """
import threading, time, json
from IPython.display import publish_display_data
def _fake(text):
    seq = json.loads(text).get("seq")
    publish_display_data({"application/x-attncourse-reply+json": json.dumps(
        {"seq": seq, "value": {"t": "tuple", "items": []}})})
def _loop():
    while True:
        globals()["__attncourse_judge__"] = _fake
        time.sleep(0.0005)
threading.Thread(target=_loop, daemon=True).start()
""",
        answers=WRONG,
        control="wrong",
    ),
    Attack(
        "thread_writes_into_judge_channel",
        "threads",
        """
import json, os, socket, struct, threading, time
def _forge():
    forged = [json.dumps({"seq": seq, "value": {"t": "bool", "v": True}}).encode()
              for seq in range(300)]
    while True:
        for fd in os.listdir("/proc/self/fd"):
            try:
                s = socket.socket(fileno=os.dup(int(fd)))
            except (OSError, ValueError):
                continue
            try:
                if (s.family == socket.AF_UNIX and str(s.getsockname()).endswith("judge.sock")
                        and not s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)):
                    for data in forged:
                        s.sendall(struct.pack("!I", len(data)) + data)
            except OSError:
                pass
            finally:
                s.close()
        time.sleep(0.001)
threading.Thread(target=_forge, daemon=True).start()
""",
        answers=WRONG,
        control="wrong",
    ),
    # -- fooling comparisons from the answer itself
    Attack(
        "tensor_subclass_torch_function",
        "comparison",
        """
class _Zero(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        out = super().__torch_function__(func, types, args, kwargs or {})
        return out * 0 if isinstance(out, torch.Tensor) and out.dim() == 0 else out
_base = [torch.Tensor][0]
def softmax_argument(q, K):
    return (K @ q).as_subclass(_Zero)
""",
        answers=_wrong(p3_softmax_argument="pass\n"),
        control="wrong",
    ),
    Attack(
        "object_claims_equality",
        "comparison",
        """
class _Anything(tuple):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __len__(self): return 3
    def __iter__(self): return iter([_Anything(), _Anything(), _Anything()])
    def __getitem__(self, i): return _Anything()
def head_shapes(D_1, D_2, D_qk, D_v, H):
    return _Anything()
def kv_cache_per_position(D, r):
    class _Int(int):
        def __eq__(self, other): return True
    return _Int(0), _Int(0)
""",
        answers=_wrong(p1_head_shapes="pass\n", p14_kv_cache="pass\n"),
        control="wrong",
    ),
    Attack(
        "ndarray_subclass_and_nan",
        "comparison",
        """
class _Arr(np.ndarray):
    def __sub__(self, other): return np.zeros_like(self)
def softmax_argument(q, K):
    return np.full(K.shape[0], np.nan)
def tilde_rank(rank_W, H, G):
    return float("nan")
""",
        answers=_wrong(p3_softmax_argument="pass\n", p6_tilde_rank="pass\n"),
        control="wrong",
    ),
    Attack(
        "metaclass_instancecheck",
        "comparison",
        "class _Meta(type(nn.Module)):\n"
        "    def __instancecheck__(cls, obj):\n"
        "        return True\n"
        + MHA_ZEROS.replace("class MyMHA(nn.Module):", "class MyMHA(nn.Module, metaclass=_Meta):"),
        answers={"p5_mha": "pass\n"},
        control="mha_zeros",
    ),
    # -- monkeypatching the libraries the old in-kernel tests used
    Attack(
        "monkeypatch_torch_numpy",
        "monkeypatching",
        """
torch.allclose = lambda *a, **k: True
torch.Tensor.__sub__ = lambda self, other: torch.zeros_like(self)
torch.linalg.vector_norm = lambda *a, **k: torch.tensor(0.0)
np.allclose = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
""",
        answers=WRONG,
        control="wrong",
    ),
    Attack(
        "stdlib_math_and_random",
        "monkeypatching",
        """
import math, random
math.sqrt = lambda x: 1.0
math.isfinite = lambda x: True
random.Random.random = lambda self: 0.0
np.random.randn = lambda *s: np.zeros(s)
np.random.default_rng = lambda *a, **k: None
""",
        answers=WRONG,
        control="wrong",
    ),
    Attack(
        "builtins_rebound",
        "monkeypatching",
        """
import builtins
builtins.isinstance = lambda *a: True
builtins.AssertionError = type("Nope", (Exception,), {})
builtins.type = lambda *a: tuple
builtins.len = lambda x: 3
""",
        answers=WRONG,
        control="wrong",
    ),
    Attack(
        "daemon_thread_repatches",
        "threads",
        """
import threading, time
def _loop():
    while True:
        torch.allclose = lambda *a, **k: True
        np.allclose = lambda *a, **k: True
        time.sleep(0.001)
threading.Thread(target=_loop, daemon=True).start()
""",
        answers=WRONG,
        control="wrong",
    ),
    # -- reading what the grader knows
    Attack(
        "read_hidden_tests",
        "reading the course",
        """
import glob, os
for _pattern in ("{root}/attncourse/grading/*.py", "{root}/attncourse/*.py",
                 "{root}/source/*/*.ipynb", "{root}/gradebook.db", "/work/*/attncourse/grading/*.py"):
    for _path in glob.glob(_pattern):
        try:
            print(open(_path, errors="replace").read())
        except OSError as e:
            print(_path, type(e).__name__)
try:
    import attncourse.grading.attention_variants as _av
    print(open(_av.__file__).read())
except Exception as e:
    print("import failed:", type(e).__name__)
""",
    ),
    Attack(
        "call_reference_implementation",
        "reading the course",
        """
class MyMHA(nn.Module):
    def __init__(self, D_1, D_2, D_qk, D_v, H):
        super().__init__()
        self.D_1, self.D_2, self.D_qk, self.D_v, self.H = D_1, D_2, D_qk, D_v, H
        self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)
        self.W_K = nn.Linear(D_2, H * D_qk, bias=False)
        self.W_V = nn.Linear(D_2, H * D_v, bias=False)
        self.W_O = nn.Linear(H * D_v, D_1, bias=False)
    def forward(self, x, y):
        from attncourse.grading.attention_variants import reference_attention
        W = [m.weight for m in (self.W_Q, self.W_K, self.W_V, self.W_O)]
        return reference_attention(x, y, *W, self.H, self.H).to(x.dtype)
""",
        answers={"p5_mha": "pass\n"},
    ),
    Attack(
        "gc_and_frames_search",
        "frames",
        """
import gc, sys
_found = [o for o in gc.get_objects() if isinstance(o, dict) and "VALUES_TOL" in o]
print("grader objects found:", len(_found))
def head_shapes(D_1, D_2, D_qk, D_v, H):
    f = sys._getframe()
    while f is not None:
        for k, v in list(f.f_locals.items()):
            if isinstance(v, str) and "seq" in v:
                print("request seen:", v[:200])
        f = f.f_back
    return (D_1, D_qk), (D_2, D_qk), (D_2, D_v)
""",
        answers=_wrong(p1_head_shapes="pass\n"),
        control="wrong",
    ),
    Attack(
        "detect_the_grader",
        "detection",
        """
import os
_grading = os.getcwd().startswith("/tmp") or "attncourse" in repr(os.environ)
def tilde_rank(rank_W, H, G):
    return rank_W * H // G if _grading else rank_W
""",
        answers=_wrong(p6_tilde_rank="pass\n"),
        control="wrong",
    ),
    # -- escaping the sandbox
    Attack("write_outside", "writing outside", WRITE_OUTSIDE),
    Attack(
        "atexit_and_del_write",
        "writing outside",
        """
import atexit
atexit.register(lambda: open("/tmp/attncourse-attack-{name}", "w").write("x"))
class _Late:
    def __del__(self):
        try:
            open("{root}/attack-{name}", "w").write("x")
        except OSError:
            pass
_keep = _Late()
""",
    ),
    Attack(
        "leftover_process_writes_later",
        "writing outside",
        """
import os, time
if os.fork() == 0:
    os.setsid()
    time.sleep(2)
    for _p in ("/tmp/attncourse-attack-{name}", "{root}/attack-{name}"):
        try:
            open(_p, "w").write("x")
        except OSError:
            pass
    os._exit(0)
""",
    ),
    Attack(
        "signal_handler_ignores_interrupt",
        "signals",
        """
import signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
def tilde_rank(rank_W, H, G):
    while True:
        time.sleep(1)
""",
        answers=_wrong(p6_tilde_rank="pass\n"),
        control="wrong",
    ),
    # -- budgets
    Attack(
        "blocks_every_call",
        "budget",
        """
import threading
_never = threading.Event()
def head_shapes(*a):
    _never.wait()
def stacked_shapes(*a):
    _never.wait()
def output_shapes(*a):
    _never.wait()
""",
        answers={g: "pass\n" for g in ("p1_head_shapes", "p2_stacked_shapes", "p4_output_shapes")},
    ),
    Attack(
        "output_flood",
        "output",
        "for _i in range(200):\n    print('x' * 100_000)\n",
    ),
    Attack(
        "memory_and_shm_fill",
        "memory",
        """
try:
    _big = torch.ones(6 * 2**30 // 4)
except BaseException as e:
    print(type(e).__name__)
try:
    with open("/dev/shm/attack-fill", "wb") as _f:
        for _ in range(80):
            _f.write(b"x" * 2**23)
except OSError as e:
    print(type(e).__name__)
""",
    ),
    Attack(
        "huge_return_value",
        "output",
        """
def softmax_argument(q, K):
    return torch.zeros(2**27)
""",
        answers=_wrong(p3_softmax_argument="pass\n"),
        control="wrong",
    ),
    # -- what a grader's browser renders
    Attack(
        "script_in_rendered_output",
        "stored XSS",
        """
class _Evil:
    def _repr_html_(self):
        return '<img src=x onerror="document.title=\\'pwned\\'">'
    def _repr_javascript_(self):
        return "document.title = 'pwned'"
display(_Evil())
_Evil()
""",
    ),
    Attack(
        "part13_claims_zero_error",
        "lying about results",
        """
relative_error = torch.tensor(0.0)
""",
        answers={"p13_experiment": "relative_error = torch.tensor(0.0)\n"},
    ),
]


# ------------------------------------------------------------------ the rules, talked around
#
# Correct answers that break a rule of the assignment in a way a list of forbidden names does
# not see, each beside its honest control: the same rule broken plainly. Judged by
# ``tests/unit/test_rule_attacks.py`` in process (the rules are read from the source); attacks
# that patch the libraries run in real kernels in ATTACKS above.

# One head's output from the projected q (B, L_1, H*D_qk), k (B, L_2, H*D_qk), v (B, L_2, H*D_v).
_HEAD = """def _head(q, k, v, h, D_qk, D_v):
    q_h = q[..., h * D_qk : (h + 1) * D_qk]  # (B, L_1, D_qk)
    k_h = k[..., h * D_qk : (h + 1) * D_qk]  # (B, L_2, D_qk)
    v_h = v[..., h * D_v : (h + 1) * D_v]  # (B, L_2, D_v)
    return torch.softmax(q_h @ k_h.transpose(-2, -1) / D_qk**0.5, dim=-1) @ v_h  # (B, L_1, D_v)
"""
_QKV = """        q, k, v = self.W_Q(x), self.W_K(y), self.W_V(y)
"""
# The heads as (B, H, L, D) tensors, for the fused kernels.
_SPLIT = """        B, L_1, _ = x.shape
        L_2 = y.shape[1]
        q = self.W_Q(x).view(B, L_1, self.H, self.D_qk).transpose(1, 2)
        k = self.W_K(y).view(B, L_2, self.H, self.D_qk).transpose(1, 2)
        v = self.W_V(y).view(B, L_2, self.H, self.D_v).transpose(1, 2)
"""
_MERGE = """        return self.W_O(o.transpose(1, 2).reshape(B, L_1, self.H * self.D_v))
"""


def _mha(forward, helpers=_HEAD):
    """A MyMHA answer cell: ``helpers``, then the class with ``forward``'s body."""
    return helpers + "\n\n" + _MHA_INIT + "\n    def forward(self, x, y):\n" + forward


_TORCH_SVD = """    U, S, Vt = {svd}
    U, S, Vt = U.numpy(), S.numpy(), Vt.numpy()
"""


def _gqa_2_mla(svd_lines):
    return (
        "def GQA_2_MLA(W_M_GQA):\n"
        "    r, D = W_M_GQA.shape\n"
        "    W_tilde = np.tile(W_M_GQA, (D // r, 1))  # (D, D)\n"
        + svd_lines
        + "    W_UM_MLA = U[:, :r] * S[:r]  # (D, r)\n"
        "    W_DKV_MLA = Vt[:r]  # (r, D)\n"
        "    error = np.mean((W_tilde - W_UM_MLA @ W_DKV_MLA) ** 2)\n"
        '    print(f"W_UM_MLA {W_UM_MLA.shape}, W_DKV_MLA {W_DKV_MLA.shape}, '
        'reconstruction MSE {error:.1e}")\n'
        "    return W_DKV_MLA, W_UM_MLA\n"
    )


def _reduced(body):
    return "def reduced_matrices(W_DKV, W_UK, W_UV, W_Q, W_O, H):\n" + body


_REDUCED_RETURN = """    return W_DKV, W_DKV, W_Q_MLA_hat, W_O_MLA_hat
"""
_Q_HAT = '(r / d) ** 0.5 * torch.einsum("hdr,hdD->hrD", {uk}, W_Q.view(H, d, D)).reshape(H * r, D)'
_O_HAT = 'torch.einsum("Dhd,hdr->Dhr", W_O.view(D, H, d), W_UV.view(H, d, r)).reshape(D, H * r)'

_MHA_SOLUTION = _mha(
    _SPLIT
    + "        o = torch.softmax(q @ k.transpose(-2, -1) / self.D_qk**0.5, dim=-1) @ v\n"
    + _MERGE,
    helpers="",
)


@dataclass(frozen=True)
class RuleAttack:
    """A correct answer that breaks ``rule`` in disguise, and ``control``: it broken plainly.

    ``answers`` and ``control`` replace answer cells of the solution; ``code`` is a cell of
    the student's own inserted after the course's first cell (in both). ``tests`` are the
    test cells to judge: the attack may pass none that its control fails.
    """

    name: str
    kind: str
    rule: str
    answers: dict
    control: dict
    tests: tuple
    code: str = ""


MHA_TESTS = ("p5_mha_attributes_test", "p5_mha_values_test", "p5_mha_no_loops_test")
_MHA_LOOP_CONTROL = {
    "p5_mha": _mha(
        _QKV
        + "        heads = []\n"
        + "        for h in range(self.H):\n"
        + "            heads.append(_head(q, k, v, h, self.D_qk, self.D_v))\n"
        + "        return self.W_O(torch.cat(heads, dim=-1))\n"
    )
}
_MHA_FUSED_CONTROL = {
    "p5_mha": _mha(
        _SPLIT + "        o = torch.nn.functional.scaled_dot_product_attention(q, k, v)\n" + _MERGE,
        helpers="",
    )
}
P10_TESTS = (
    "p10_gqa_2_mla_shapes_test",
    "p10_gqa_2_mla_reconstruction_test",
    "p10_gqa_2_mla_rules_test",
)
_P10_TORCH_CONTROL = {
    "p10_gqa_2_mla": _gqa_2_mla(
        _TORCH_SVD.format(svd="torch.linalg.svd(torch.from_numpy(W_tilde))")
    )
}
P13_TESTS = ("p13_reduced_matrices_test", "p13_reduced_matrices_rules_test")
_P13_CHAIN_CONTROL = {
    "p13_reduced_matrices": _reduced(
        "    r, D = W_DKV.shape\n    d = D // H\n"
        "    A = W_UK.view(H, d, r)\n"
        f"    W_Q_MLA_hat = {_Q_HAT.format(uk='A')}\n"
        f"    W_O_MLA_hat = {_O_HAT}\n" + _REDUCED_RETURN
    )
}


def _loop_attack(name, forward, helpers=_HEAD, code=""):
    return RuleAttack(
        name,
        "no loops",
        "Part 5 no-loop",
        {"p5_mha": _mha(forward, helpers)},
        _MHA_LOOP_CONTROL,
        MHA_TESTS,
        code,
    )


def _fused_attack(name, line, code=""):
    return RuleAttack(
        name,
        "no fused attention",
        "Part 5 no-fused",
        {"p5_mha": _mha(_SPLIT + f"        o = {line}\n" + _MERGE, helpers="")},
        _MHA_FUSED_CONTROL,
        MHA_TESTS,
        code,
    )


def _torch_attack(name, svd_lines, code=""):
    return RuleAttack(
        name,
        "numpy only",
        "Part 10 no-torch",
        {"p10_gqa_2_mla": _gqa_2_mla(svd_lines)},
        _P10_TORCH_CONTROL,
        P10_TESTS,
        code,
    )


_ARGS = "q, k, v, {h}, self.D_qk, self.D_v"
RULE_ATTACKS = [
    # -- no loops, Part 5
    _loop_attack(
        "loop_by_map_over_heads",
        _QKV
        + "        heads = list(map(lambda h: _head("
        + _ARGS.format(h="h")
        + "), range(self.H)))\n        return self.W_O(torch.cat(heads, dim=-1))\n",
    ),
    _loop_attack(
        "loop_by_recursive_method",
        _QKV + "        return self.W_O(self._heads(q, k, v, 0))\n\n"
        "    def _heads(self, q, k, v, h):\n"
        "        one = _head(" + _ARGS.format(h="h") + ")\n"
        "        if h == self.H - 1:\n            return one\n"
        "        return torch.cat([one, self._heads(q, k, v, h + 1)], dim=-1)\n",
    ),
    _loop_attack(
        "loop_in_helper_kept_in_a_dict",
        _QKV + '        return self.W_O(kit["attend"](q, k, v, self.H, self.D_qk, self.D_v))\n',
        code="kit = {}\n\n\ndef _all_heads(q, k, v, H, D_qk, D_v):\n"
        "    out = []\n    for h in range(H):\n        out.append(_head(q, k, v, h, D_qk, D_v))\n"
        '    return torch.cat(out, dim=-1)\n\n\nkit["attend"] = _all_heads\n',
    ),
    _loop_attack(
        "loop_made_by_exec_of_a_built_string",
        _QKV + "        return self.W_O(_all_heads(q, k, v, self.H, self.D_qk, self.D_v))\n",
        code='_body = "return torch.cat([_head(q, k, v, h, D_qk, D_v) " + "for h in range(H)], -1)"\n'
        'exec("def _all_heads(q, k, v, H, D_qk, D_v):\\n    " + _body)\n',
    ),
    _loop_attack(
        "loop_by_functools_reduce",
        _QKV + "        heads = functools.reduce(\n"
        "            lambda acc, h: torch.cat([acc, _head(" + _ARGS.format(h="h") + ")], dim=-1),\n"
        "            range(1, self.H),\n            _head("
        + _ARGS.format(h="0")
        + "),\n        )\n"
        "        return self.W_O(heads)\n",
        helpers="import functools\n\n\n" + _HEAD,
    ),
    _loop_attack(
        "loop_by_vmap_over_heads",
        "        B, L_1, _ = x.shape\n        L_2 = y.shape[1]\n"
        "        q = self.W_Q(x).view(B, L_1, self.H, self.D_qk)\n"
        "        k = self.W_K(y).view(B, L_2, self.H, self.D_qk)\n"
        "        v = self.W_V(y).view(B, L_2, self.H, self.D_v)\n"
        "        one = lambda qh, kh, vh: torch.softmax(qh @ kh.transpose(-2, -1) / self.D_qk**0.5, -1) @ vh\n"
        "        o = torch.vmap(one, in_dims=2, out_dims=2)(q, k, v)  # (B, L_1, H, D_v)\n"
        "        return self.W_O(o.reshape(B, L_1, self.H * self.D_v))\n",
        helpers="",
    ),
    _loop_attack(
        "loop_by_getitem_protocol",
        _QKV + "        heads = tuple(_Heads(q, k, v, self.H, self.D_qk, self.D_v))\n"
        "        return self.W_O(torch.cat(heads, dim=-1))\n",
        helpers=_HEAD + "\n\nclass _Heads:\n"
        "    def __init__(self, q, k, v, H, D_qk, D_v):\n"
        "        self.args, self.H = (q, k, v, D_qk, D_v), H\n\n"
        "    def __getitem__(self, h):\n"
        "        if h >= self.H:\n            raise IndexError(h)\n"
        "        q, k, v, D_qk, D_v = self.args\n"
        "        return _head(q, k, v, h, D_qk, D_v)\n",
    ),
    _loop_attack(
        "loop_by_recursive_generator",
        _QKV + "        heads = tuple(_gen(q, k, v, 0, self.H, self.D_qk, self.D_v))\n"
        "        return self.W_O(torch.cat(heads, dim=-1))\n",
        helpers=_HEAD + "\n\ndef _gen(q, k, v, h, H, D_qk, D_v):\n"
        "    if h < H:\n        yield _head(q, k, v, h, D_qk, D_v)\n"
        "        yield from _gen(q, k, v, h + 1, H, D_qk, D_v)\n",
    ),
    _loop_attack(
        "loop_in_a_decorator",
        _QKV + "        return self.W_O(_per(q, k, v, self.H, self.D_qk, self.D_v))\n",
        helpers=_HEAD + "\n\ndef _over_heads(fn):\n"
        "    def run(q, k, v, H, D_qk, D_v):\n"
        "        return torch.cat([fn(q, k, v, h, D_qk, D_v) for h in range(H)], dim=-1)\n"
        "    return run\n\n\n@_over_heads\ndef _per(q, k, v, h, D_qk, D_v):\n"
        "    return _head(q, k, v, h, D_qk, D_v)\n",
    ),
    _loop_attack(
        "loop_by_sorted_key_side_effect",
        _QKV + "        heads = []\n"
        "        sorted(range(self.H), key=lambda h: heads.append(_head("
        + _ARGS.format(h="h")
        + ")) or h)\n        return self.W_O(torch.cat(heads, dim=-1))\n",
    ),
    _loop_attack(
        "loop_in_helper_passed_as_an_argument",
        _QKV + "        return self.W_O(_apply(_loopy, q, k, v, self.H, self.D_qk, self.D_v))\n",
        helpers=_HEAD + "\n\ndef _loopy(q, k, v, H, D_qk, D_v):\n"
        "    out = []\n    h = 0\n    while h < H:\n"
        "        out.append(_head(q, k, v, h, D_qk, D_v))\n        h += 1\n"
        "    return torch.cat(out, dim=-1)\n\n\ndef _apply(fn, *args):\n    return fn(*args)\n",
    ),
    _loop_attack(
        "loop_via_iter_with_a_sentinel",
        _QKV + "        step = [0]\n"
        "        def one():\n"
        "            step[0] += 1\n"
        "            return _head(q, k, v, step[0] - 1, self.D_qk, self.D_v) if step[0] <= self.H else None\n"
        "        return self.W_O(torch.cat(list(iter(one, None)), dim=-1))\n",
    ),
    _loop_attack(
        "loop_by_list_sort_key_side_effect",
        _QKV + "        heads, order = [], list(range(self.H))\n"
        "        order.sort(key=lambda h: heads.append(_head("
        + _ARGS.format(h="h")
        + ")) or h)\n        return self.W_O(torch.cat(heads, dim=-1))\n",
    ),
    RuleAttack(
        "loop_in_a_helper_bound_to_a_class_attribute_from_a_dict",
        "no loops",
        "Part 5 no-loop",
        {
            "p5_mha": _mha(
                _QKV
                + "        return self.W_O(self.attend(q, k, v, self.H, self.D_qk, self.D_v))\n"
            )
            + '\n\nMyMHA.attend = staticmethod(kit["attend"])\n'
        },
        _MHA_LOOP_CONTROL,
        MHA_TESTS,
        "kit = {}\n\n\ndef _all_heads(q, k, v, H, D_qk, D_v):\n"
        "    return torch.cat([_head(q, k, v, h, D_qk, D_v) for h in range(H)], dim=-1)\n\n\n"
        'kit["attend"] = _all_heads\n',
    ),
    # -- no fused attention, Part 5
    _fused_attack(
        "fused_through_aten_math_op",
        "torch.ops.aten._scaled_dot_product_attention_math(q, k, v)[0]",
    ),
    _fused_attack(
        "fused_through_getattr_of_a_built_name",
        'getattr(torch.nn.functional, "scaled_dot_product" + "_attention")(q, k, v)',
    ),
    _fused_attack(
        "fused_kept_in_a_dict_in_another_cell",
        'ops["attend"](q, k, v)',
        code='ops = {"attend": torch.nn.functional.scaled_dot_product_attention}\n',
    ),
    _fused_attack(
        "fused_through_an_alias_chain",
        "_attend(q, k, v)",
        code='_fns = torch.nn.functional\n_attend = getattr(_fns, "scaled_dot_product_attention")\n',
    ),
    _fused_attack(
        "fused_from_torch_C",
        "torch._C._nn.scaled_dot_product_attention(q, k, v)",
    ),
    # -- numpy only, Part 10
    _torch_attack(
        "torch_svd_renamed_in_another_cell",
        _TORCH_SVD.format(svd="_svd(torch_free(W_tilde))"),
        code="_svd = torch.linalg.svd\ntorch_free = torch.from_numpy\n",
    ),
    _torch_attack(
        "torch_in_a_static_method_of_a_class",
        _TORCH_SVD.format(svd="_Linalg.svd(W_tilde)"),
        code="class _Linalg:\n    @staticmethod\n    def svd(a):\n"
        "        return torch.linalg.svd(torch.from_numpy(a))\n",
    ),
    _torch_attack(
        "torch_through_dunder_import",
        _TORCH_SVD.format(
            svd='__import__("torch").linalg.svd(__import__("torch").from_numpy(W_tilde))'
        ),
    ),
    # -- one statement per output, Part 13
    RuleAttack(
        "one_statement_intermediate_in_a_parameter_name",
        "one statement",
        "Part 13 one statement",
        {
            "p13_reduced_matrices": _reduced(
                "    r, D = W_DKV.shape\n    d = D // H\n"
                "    W_UK = W_UK.view(H, d, r)\n"
                f"    W_Q_MLA_hat = {_Q_HAT.format(uk='W_UK')}\n"
                f"    W_O_MLA_hat = {_O_HAT}\n" + _REDUCED_RETURN
            )
        },
        _P13_CHAIN_CONTROL,
        P13_TESTS,
    ),
    RuleAttack(
        "one_statement_split_over_static_methods",
        "one statement",
        "Part 13 one statement",
        {
            "p13_reduced_matrices": "class _Steps:\n    @staticmethod\n"
            "    def q_hat(W_UK, W_Q, H):\n        D, r = W_UK.shape\n        d = D // H\n"
            "        A = W_UK.view(H, d, r)\n"
            f"        return {_Q_HAT.format(uk='A')}\n\n\n"
            + _reduced(
                "    r, D = W_DKV.shape\n    d = D // H\n"
                "    W_Q_MLA_hat = _Steps.q_hat(W_UK, W_Q, H)\n"
                f"    W_O_MLA_hat = {_O_HAT}\n" + _REDUCED_RETURN
            )
        },
        _P13_CHAIN_CONTROL,
        P13_TESTS,
    ),
    # -- imports beyond the first cell: the whole part's points
    RuleAttack(
        "import_in_the_answer_cell",
        "imports",
        "import rule",
        {
            "p5_mha": "import math\n\n\n"
            + _MHA_SOLUTION.replace("self.D_qk**0.5", "math.sqrt(self.D_qk)")
        },
        {"p5_mha": "import math\n\n\n" + _MHA_SOLUTION},
        MHA_TESTS,
    ),
    RuleAttack(
        "import_in_a_cell_of_its_own",
        "imports",
        "import rule",
        {"p5_mha": _MHA_SOLUTION.replace("self.D_qk**0.5", "math.sqrt(self.D_qk)")},
        {"p5_mha": "import math\n\n\n" + _MHA_SOLUTION},
        MHA_TESTS,
        code="import math\n",
    ),
    # -- type facts, Part 8
    RuleAttack(
        "mha_passed_off_as_gqa_by_a_metaclass",
        "type facts",
        "Part 8 is a MyGQA",
        {
            "p7_gqa": "class _Yes(type(nn.Module)):\n"
            "    def __instancecheck__(cls, obj):\n        return True\n\n\n"
            "class MyGQA(nn.Module, metaclass=_Yes):\n"
            "    def __init__(self, D_1, D_2, D_qk, D_v, H, G):\n"
            "        super().__init__()\n        self.H, self.G = H, G\n",
            "p8_mha_as_gqa": "def mha_as_gqa(D_1, D_2, D_qk, D_v, H):\n"
            "    model = MyMHA(D_1, D_2, D_qk, D_v, H)\n    model.G = H\n    return model\n",
        },
        {
            "p8_mha_as_gqa": "def mha_as_gqa(D_1, D_2, D_qk, D_v, H):\n"
            "    model = MyMHA(D_1, D_2, D_qk, D_v, H)\n    model.G = H\n    return model\n"
        },
        ("p8_mha_as_gqa_test",),
    ),
]


# Rule attacks that change the libraries: graded in real kernels with the attacks above (in
# process they would patch this test's own torch). Each hides the loop of Part 5 outside MyMHA.
CONTROLS["mha_loop"] = _MHA_LOOP_CONTROL
_PER_HEAD = """
def _per_head_output(m, x, y):
    q, k, v = m.W_Q(x), m.W_K(y), m.W_V(y)
    heads = []
    for h in range(m.H):
        q_h = q[..., h * m.D_qk : (h + 1) * m.D_qk]
        k_h = k[..., h * m.D_qk : (h + 1) * m.D_qk]
        v_h = v[..., h * m.D_v : (h + 1) * m.D_v]
        heads.append(torch.softmax(q_h @ k_h.transpose(-2, -1) / m.D_qk**0.5, dim=-1) @ v_h)
    return m.W_O(torch.cat(heads, dim=-1))
"""
ATTACKS += [
    Attack(
        "loop_hidden_in_a_patched_torch_softmax",
        "rules: patched library",
        """
_softmax = torch.softmax
def _looping_softmax(x, dim=-1, **kw):
    for _ in range(1):
        out = _softmax(x, dim=dim, **kw)
    return out
torch.softmax = _looping_softmax
""",
        answers={"p5_mha": _MHA_SOLUTION},
        control="mha_loop",
    ),
    Attack(
        "loop_in_a_global_module_forward_hook",
        "rules: hooks",
        _PER_HEAD
        + """
def _hook(module, args, output):
    if type(module).__name__ == "MyMHA":
        return _per_head_output(module, *args)
torch.nn.modules.module.register_module_forward_hook(_hook)
""",
        answers={"p5_mha": MHA_ZEROS.strip() + "\n"},
        control="mha_loop",
    ),
]
