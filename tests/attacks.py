"""Attacks on the grader by a student who has read this repository, each with its honest control.

An :class:`Attack` is notebook code a student could hand in (in a cell of their own,
right after the setup cell, and/or in answer cells) and the control it must not
beat: the same answers without the trick. ``tests/test_attacks.py`` grades every
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


# An honest MyMHA with the right attributes and no loops whose outputs are zeros.
MHA_ZEROS = """
class MyMHA(nn.Module):
    def __init__(self, D_1, D_2, D_qk, D_v, H):
        super().__init__()
        self.D_1, self.D_2, self.D_qk, self.D_v, self.H = D_1, D_2, D_qk, D_v, H
        self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)
        self.W_K = nn.Linear(D_2, H * D_qk, bias=False)
        self.W_V = nn.Linear(D_2, H * D_v, bias=False)
        self.W_O = nn.Linear(H * D_v, D_1, bias=False)
    def forward(self, x, y):
        return torch.zeros(x.shape[0], x.shape[1], self.D_1, dtype=x.dtype, device=x.device)
"""

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
