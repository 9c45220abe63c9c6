"""Hidden checks of assignment 4, mla_inference: RoPE, decoupled-RoPE MLA, absorbed decoding, cache sizes.

The checks run in the judge, never in the student's kernel. Each draws its
dimensions, weights, inputs and positions from the run's secret
(:func:`attncourse.judge.checks.rng_for`, :func:`~attncourse.judge.checks.generator`), loads the
weights into the student's own ``MLAAttention`` in the kernel (float64, on the
kernel's grading device) and compares what comes back with references computed
here in float64 on the CPU, written independently of the model answer: RoPE
from explicit block rotation matrices, MLA head by head with an explicit
causal mask, decoding against the full forward.

**Your rope, carried forward.** Parts 1(b), 2 and 3 use the student's ``rope``.
When it is wrong but still a rotation that depends on the position (checked on a
probe: finite, lengths kept, not the identity), a comparison that fails against
the task's rotation is repeated with references built on the student's rope, so
a mistake in Part 1(a) costs its points once. The rule checks of Parts 2 and 3
skip the student's ``rope`` for the same reason.

Thresholds sit beside each constant with the margins measured by
``tests/margins_mla_inference.py`` (worst correct answer, closest named mistake).
"""

import ast
import functools
import math
from dataclasses import dataclass

import torch

from attncourse.judge import rules
from attncourse.judge.checks import (
    GradingError,
    answer,
    call,
    check_close,
    describe,
    fail,
    generator,
    layer_weight,
    load_linear,
    randn,
    rel_error,
    rng_for,
    submodule,
    tensor,
    to_grading,
)
from attncourse.judge.remote import Remote

F64 = torch.float64
BASE = 10000.0

# Thresholds (relative error, float64), with the margins measured by
# tests/margins_mla_inference.py over 100 secrets on every case of tests/cases_mla_inference.py
# (93 cases; no wrong verdict).
#
# rope: worst correct 1.2e-13 (theta through exp/log, positions up to 4000: 8e3x below);
# closest mistake "angles in float32" 2.4e-7 (230x above: float32 keeps theta_0 = 1 and the
# integer positions exact, so only its cos/sin round); the closest structural mistake
# ("positions plus one") is at 0.30.
ROPE_TOL = 1e-9
# merged_score_matrix: worst correct 2.6e-15 (4e5x below); closest mistake ("no rotation")
# 0.18 (1.8e8x above).
MERGED_TOL = 1e-9
# MLA forward, latent_query, the decode cache and decoding: worst correct 1.3e-15 (8e6x
# below); closest mistake 2.0e-2 ("positions counted from 1" in the step from the judge's
# cache, 2e6x above). A wrong rope carried forward (--every-test, 20 secrets): worst correct
# 8.6e-16 against the references built on it (a float32 rope lands ~1e-8 from the task's
# reference in Part 2, so its carried comparison is the one that decides).
VALUES_TOL = 1e-8
# An answer this close to the reference but outside its threshold is a precision mistake
# (float32 somewhere, measured at 2e-7 .. 1e-4); every structural mistake measured is at
# 2.0e-2 or more.
PRECISION_BAND = 1e-3
# The student's rope counts as a rotation (for carrying it forward) when it keeps every
# vector's length to this relative error: float32 angles keep it to ~1e-7; "cos only" and
# other non-rotations are off by >= 0.1.
ROTATION_TOL = 1e-6


# ================================================================= helpers


def single_threaded(check):
    """Run ``check`` with torch on one thread in the judge's process, then restore the count.

    The references are many tiny float64 operations; on a loaded 2-core machine torch's
    second thread made them 600x slower (0.08 s vs 48 s for the MLA mistakes of one draw,
    load average 16), and they gain nothing from it. Kernels are separate processes.
    """

    @functools.wraps(check)
    def run(ns):
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return check(ns)
        finally:
            torch.set_num_threads(threads)

    return run


def _close(what, got, ref, tol, mistakes=None, shape_cause=None):
    """check_close, naming a precision mistake or a NaN before the table of named mistakes."""
    got_t = tensor(got, what)
    ref_t = tensor(ref, "reference")
    if tuple(got_t.shape) == tuple(ref_t.shape):
        if not bool(torch.isfinite(got_t).all()):
            fail(
                f"{what}: the output contains NaN or inf",
                "finite values",
                "NaN or inf",
                "for instance a row of scores masked entirely: position t sees positions "
                "s <= t, itself included",
            )
        err = rel_error(got_t, ref_t)
        if tol < err < PRECISION_BAND:
            fail(
                f"{what}: values differ slightly from the reference",
                f"relative error <= {tol:.1e}",
                f"relative error {err:.3e}",
                "a precision mistake: angles computed in float32 (compute t * theta_i in "
                "float64) or a result rounded to float32",
            )
    return check_close(what, got_t, ref_t, tol, mistakes, shape_cause)


def _pair(value, what, names):
    if type(value) not in (tuple, list) or len(value) != 2:
        fail(f"{what}: return a pair {names}", "a tuple of two tensors", describe(value))
    return value


# ================================================================= RoPE, written block by block


@dataclass(frozen=True)
class Rope:
    """The task's rotation, or a named wrong one (every field at its default is the task's)."""

    pairing: str = "neighbours"  # or "halves": i with i + d/2
    sign: int = 1  # -1 rotates the other way (R_{-t})
    exponent: float = 2.0  # theta_i = base^(-exponent * i / d)
    first_index: int = 0  # 1: theta indexed from i = 1
    offset: int = 0  # angle (t + offset) theta_i
    base: float | None = None  # a base other than the one asked for
    swap_outputs: bool = False  # writes the rotated pair in the wrong order


TASK_ROPE = Rope()


@functools.lru_cache(maxsize=8192)
def rotation(t, d, base=BASE, variant=TASK_ROPE):
    """R_t (d, d) in float64, one 2x2 block at a time (planes (2i, 2i+1) for the task)."""
    R = torch.zeros(d, d, dtype=F64)
    base = variant.base if variant.base is not None else base
    for i in range(d // 2):
        theta = base ** (-variant.exponent * (i + variant.first_index) / d)
        angle = variant.sign * (t + variant.offset) * theta
        c, s = math.cos(angle), math.sin(angle)
        a, b = (2 * i, 2 * i + 1) if variant.pairing == "neighbours" else (i, i + d // 2)
        out_a, out_b = (b, a) if variant.swap_outputs else (a, b)
        R[out_a, a], R[out_a, b] = c, -s
        R[out_b, a], R[out_b, b] = s, c
    return R


def rope_reference(x, positions, base=BASE, variant=TASK_ROPE):
    """R_t x for every vector of x (..., d), t its entry of ``positions`` (broadcast), float64."""
    x = x.to(F64)
    d = x.shape[-1]
    pos = torch.broadcast_to(torch.as_tensor(positions), x.shape[:-1]).reshape(-1)
    flat = x.reshape(-1, d)
    unique, index = torch.unique(pos, return_inverse=True)
    mats = torch.stack([rotation(int(t), d, float(base), variant) for t in unique.tolist()])
    return torch.einsum("kij,kj->ki", mats[index], flat).reshape(x.shape)


def _rope_mistakes(x, positions, base):
    def variant(**changes):
        return rope_reference(x, positions, base, Rope(**changes))

    return {
        "rotate-half pairing: coordinate i paired with i + d/2; this task pairs neighbours "
        "(2i, 2i+1)": variant(pairing="halves"),
        "rotated the wrong way (R_{-t}): the first coordinate is x_2i cos - x_2i+1 sin": variant(
            sign=-1
        ),
        "theta_i = base^(-i/d): the exponent is -2i/d": variant(exponent=1.0),
        "theta indexed from i = 1: the first pair rotates by t * base^0 = t": variant(
            first_index=1
        ),
        "positions off by one: rotated by (t + 1) theta_i": variant(offset=1),
        "positions off by one: rotated by (t - 1) theta_i": variant(offset=-1),
        "the rotated pair is written back in the wrong order": variant(swap_outputs=True),
        "positions ignored (nothing rotated)": x.to(F64),
    } | ({"the base argument is ignored (10000 used)": variant(base=BASE)} if base != BASE else {})


def _student_rotation(ns):
    """The student's rope as a reference rotation, or None (see the module docstring)."""
    fn = ns.get("rope")
    if not isinstance(fn, Remote):
        return None
    gen = generator("mla/rope-probe")
    x = randn(gen, 5, 6)
    positions = torch.tensor([0, 3, 1, 250, 17])
    try:
        got = tensor(call(fn, (x, positions), "rope (probe)"), "rope (probe)")
    except GradingError:
        return None
    if tuple(got.shape) != tuple(x.shape) or not bool(torch.isfinite(got).all()):
        return None
    if not bool(((got.norm(dim=-1) - x.norm(dim=-1)).abs() <= ROTATION_TOL * x.norm(dim=-1)).all()):
        return None  # not a rotation: no carrying forward
    if rel_error(got[1:], x[1:]) < 1e-3:
        return None  # positions ignored: nothing to carry forward
    if rel_error(got, rope_reference(x, positions)) <= ROPE_TOL:
        return None  # the task's rotation: the first reference already is it

    def rotate(v, pos):
        out = call(fn, (v, torch.as_tensor(pos)), "rope (your Part 1, used in the reference)")
        return tensor(out, "rope")

    return rotate


def _with_rope(ns, attempt):
    """``attempt(rotate)`` with the task's rotation; on failure, again with the student's rope.

    When the student's rope is carried forward and both fail, the student reads the second
    failure (its named mistakes are computed with their own rope), marked as such.
    """
    try:
        attempt(rope_reference)
    except GradingError:
        student = _student_rotation(ns)
        if student is None:
            raise
        try:
            attempt(student)
        except GradingError as error:
            raise GradingError(
                f"{error}\n  note: compared with a reference built on your rope of Part 1(a)"
            ) from None


# ================================================================= Part 1(a): rope


def check_rope(ns):
    """Part 1(a): rope(x, positions, base) rotates neighbouring pairs by t * base^(-2i/d)."""
    part = "Part 1(a)"
    fn = answer(ns, "rope", part)
    rng = rng_for("p1_rope")
    trials = [
        # (shape, positions shape, base): a batch of sequences, heads, and a 0-d position
        ("(B, L, d), positions (L,)", (rng.randint(2, 3), rng.randint(4, 7)), None),
        ("(B, H, L, d), positions (L,)", (2, rng.randint(2, 4), rng.randint(3, 6)), None),
        ("(B, d), one 0-d position", (rng.randint(2, 4),), "scalar"),
    ]
    for k, (label, lead, kind) in enumerate(trials):
        d = 2 * rng.randint(2, 6)
        base = BASE if k == 0 else rng.choice([500.0, 2048.0, 50000.0])
        gen = generator(f"p1_rope/{k}")
        x = randn(gen, *lead, d)
        if kind == "scalar":
            positions = torch.tensor(rng.randint(1000, 4000))
        else:
            positions = torch.tensor(rng.sample(range(100, 4000), lead[-1]))
        args = (x, positions) if k == 0 else (x, positions, base)
        what = f"{part}: rope for x {label}, d = {d}, base = {base:g}"
        got = call(fn, args, what)
        _close(
            what,
            got,
            rope_reference(x, positions, base),
            ROPE_TOL,
            _rope_mistakes(x, positions, base),
            shape_cause="return x's shape: every vector rotated in place",
        )
        if type(got) is torch.Tensor and got.dtype != F64:
            fail(f"{what}: dtype", "float64 (x's dtype)", str(got.dtype), "return x's dtype")


def check_rope_rules(ns):
    """Part 1(a): rope works and uses no loop, also not in the helpers it calls."""
    part = "Part 1(a)"
    fn = answer(ns, "rope", part)
    call(
        fn,
        (torch.ones(2, 4, dtype=F64), torch.arange(2)),
        f"{part}: rope (rules are checked on a working answer)",
    )
    rules.assert_no_loops("rope", ns, part)


# ================================================================= Part 1(b): merged matrix


def check_merged_score_matrix(ns):
    """Part 1(b): M = (R_t W_Q_h)^T (R_s W_UK_h), so that q_t . k_s = x_t^T M c_s."""
    part = "Part 1(b)"
    fn = answer(ns, "merged_score_matrix", part)
    rng = rng_for("p1_merged")
    for trial in range(2):
        d_h = 2 * rng.randint(2, 5)
        D, r = rng.sample([v for v in range(3, 14) if v != d_h], 2)
        t, s = rng.sample(range(1, 400), 2)
        gen = generator(f"p1_merged/{trial}")
        W_Q_h, W_UK_h = randn(gen, d_h, D), randn(gen, d_h, r)
        what = f"{part}: merged_score_matrix for d_h = {d_h}, D = {D}, r = {r}, t = {t}, s = {s}"
        got = call(fn, (W_Q_h, W_UK_h, t, s), what)

        def attempt(rotate, got=got, W_Q_h=W_Q_h, W_UK_h=W_UK_h, t=t, s=s, what=what):
            R_t_W_Q = rotate(W_Q_h.T, torch.tensor(t)).T  # (d_h, D)
            R_s_W_UK = rotate(W_UK_h.T, torch.tensor(s)).T  # (d_h, r)
            R_t_W_UK = rotate(W_UK_h.T, torch.tensor(t)).T
            R_s_W_Q = rotate(W_Q_h.T, torch.tensor(s)).T
            R_ts_W_UK = rotate(W_UK_h.T, torch.tensor(t + s)).T
            mistakes = {
                "no rotation: W_Q_h^T W_UK_h": W_Q_h.T @ W_UK_h,
                "positions swapped: (R_s W_Q_h)^T (R_t W_UK_h), i.e. R_{t-s} instead of "
                "R_{s-t}": R_s_W_Q.T @ R_t_W_UK,
                "only the query rotated": R_t_W_Q.T @ W_UK_h,
                "only the key rotated": W_Q_h.T @ R_s_W_UK,
                "angles added (R_t R_s): the query's rotation enters transposed, "
                "R_t^T R_s = R_{s-t}": W_Q_h.T @ R_ts_W_UK,
            }
            _close(
                what,
                got,
                R_t_W_Q.T @ R_s_W_UK,
                MERGED_TOL,
                mistakes,
                shape_cause="M sits between x_t (D) and c_s (r): (D, r)",
            )

        _with_rope(ns, attempt)


# ================================================================= Part 2: MLAAttention

LAYERS = ("W_DKV", "W_UK", "W_UV", "W_Q", "W_QR", "W_KR", "W_O")


def _mla_dims(test_id):
    """Secret dimensions, pairwise distinct, d_h and d_R even (so a rotated content part exists)."""
    rng = rng_for(test_id)
    while True:
        dims = {
            "D": rng.randint(6, 13),
            "H": rng.choice([2, 3, 5]),
            "d_h": rng.choice([4, 6, 8]),
            "r": rng.choice([3, 5, 7, 9]),
            "d_R": rng.choice([2, 4, 6]),
        }
        if len(set(dims.values())) == 5:
            return dims


def _args(dims):
    return tuple(dims[k] for k in ("D", "H", "d_h", "r", "d_R"))


def _shapes(dims):
    D, H, d_h, r, d_R = _args(dims)
    return {
        "W_DKV": (r, D),
        "W_UK": (H * d_h, r),
        "W_UV": (H * d_h, r),
        "W_Q": (H * d_h, D),
        "W_QR": (H * d_R, D),
        "W_KR": (d_R, D),
        "W_O": (D, H * d_h),
    }


def _weights(test_id, dims):
    """The test's weights: entries N(0, 1/fan_in), so every score is of order one."""
    gen = generator(f"{test_id}/weights")
    return {n: randn(gen, *s, scale=1 / math.sqrt(s[1])) for n, s in _shapes(dims).items()}


def _build(ns, part, dims):
    """The student's MLAAttention(D, H, d_h, r, d_R) in the kernel (a handle)."""
    cls = answer(ns, "MLAAttention", part)
    args = _args(dims)
    cause = None if part.startswith("Part 2") else "Part 3 runs on your MLAAttention of Part 2"
    return call(cls, args, f"{part}: MLAAttention{args}", cause)


def _set_linear(model, name, weight, part):
    """Load ``weight`` into ``model.<name>`` in the kernel (a bias, if any, is zeroed)."""
    cause = "see the attribute test of Part 2"
    load_linear(model, name, weight, part, cause, lambda _: cause, expected="an nn.Module")


def _loaded_model(ns, part, dims, test_id):
    """(model in float64 on the grading device with the test's weights, the weights)."""
    model = _build(ns, part, dims)
    model = to_grading(ns, model, part, f"{part}: model", expected="an nn.Module")
    weights = _weights(test_id, dims)
    for name, weight in weights.items():
        _set_linear(model, name, weight, part)
    return model, weights


def _shape_mistakes(name, dims):
    D, H, d_h, r, d_R = _args(dims)
    found = {
        "W_KR": {(H * d_R, D): "one rotary key per head: the rotary key is shared by all heads"},
        "W_DKV": {(r * H, D): "a latent per head: the latent is shared by all heads"},
    }.get(name, {})
    expected = _shapes(dims)[name]
    found[expected[::-1]] = "nn.Linear(in, out) stores its weight as (out, in)"
    return found


def check_mla_attributes(ns):
    """Part 2: attributes, bias-free nn.Linear layers of the task's shapes, output shape."""
    part = "Part 2"
    dims = _mla_dims("p2_mla_attributes")
    model = _build(ns, part, dims)
    if not (isinstance(model, Remote) and model.is_a("module")):
        fail(f"{part}: MLAAttention must subclass nn.Module", "nn.Module", describe(model))
    for key, value in dims.items():
        got = getattr(model, key, None)
        if type(got) is not int or got != value:
            fail(
                f"{part}: attribute `{key}` of MLAAttention{_args(dims)}",
                value,
                describe(got) if isinstance(got, Remote) else repr(got)[:80],
                "store the constructor's arguments under the names given in the task",
            )
    for name, shape in _shapes(dims).items():
        layer = submodule(model, name)
        if not (isinstance(layer, Remote) and layer.is_a("linear")):
            fail(f"{part}: `{name}` must be an nn.Linear", "nn.Linear", describe(layer))
        weight = layer_weight(layer)
        if weight is None:
            fail(f"{part}: `{name}.weight` must be a plain tensor", "a Parameter", "none")
        got = tuple(weight.shape)
        if got != shape:
            fail(
                f"{part}: {name}.weight of MLAAttention{_args(dims)}",
                shape,
                got,
                _shape_mistakes(name, dims).get(got),
            )
        if getattr(layer, "bias", None) is not None:
            fail(f"{part}: `{name}` has a bias", "bias=False", "a bias vector", "bias present")
    rng = rng_for("p2_mla_attributes/x")
    B, L = rng.randint(2, 4), rng.randint(3, 7)
    model = to_grading(ns, model, part, f"{part}: model", expected="an nn.Module")
    x = randn(generator("p2_mla_attributes/x"), B, L, dims["D"])
    out = tensor(call(model, (ns.on_device(x),), f"{part}: forward(x)", no_grad=True), "forward")
    if tuple(out.shape) != (B, L, dims["D"]):
        fail(
            f"{part}: output shape of forward(x) for x ({B}, {L}, {dims['D']})",
            (B, L, dims["D"]),
            tuple(out.shape),
        )


@dataclass(frozen=True)
class Variant:
    """The task's MLA, or a named wrong one (every field at its default is the task's)."""

    mask: str = "causal"  # "none": no mask; "strict": s < t (the token does not see itself)
    # "sum": 1/sqrt(d_h + d_R); "d_h", "d_R", "none"; "separate": content and rotary apart
    scale: str = "sum"
    rotary: bool = True  # False: q^R and k^R never rotated
    rotate_content: bool = False  # True: q^C and k^C rotated too
    swap_up: bool = False  # W_UV for keys and W_UK for values
    heads: str = "contiguous"  # "interleaved": head h owns features h, h + H, ...
    softmax_dim: int = -1  # -2: softmax over the queries


TASK = Variant()


def _head_rows(h, H, size, heads):
    if heads == "contiguous":
        return torch.arange(h * size, (h + 1) * size)
    return torch.arange(size) * H + h


def mla_reference(x, w, dims, rotate=rope_reference, variant=TASK, q_pos=None, k_pos=None):
    """Decoupled-RoPE MLA of x (B, L, D) in float64, head by head, with an explicit mask.

    ``q_pos``/``k_pos`` are the positions the queries and the keys are rotated at
    (default 0 .. L-1); a decoder's off-by-one mistakes are references with other ones.
    """
    B, L, D = x.shape
    H, d_h, d_R = dims["H"], dims["d_h"], dims["d_R"]
    q_pos = torch.arange(L) if q_pos is None else q_pos
    k_pos = torch.arange(L) if k_pos is None else k_pos
    v = variant
    c = x @ w["W_DKV"].T  # (B, L, r)
    k_r = x @ w["W_KR"].T  # (B, L, d_R)
    if v.rotary:
        k_r = rotate(k_r, k_pos)
    W_UK, W_UV = (w["W_UV"], w["W_UK"]) if v.swap_up else (w["W_UK"], w["W_UV"])
    t_idx, s_idx = torch.arange(L)[:, None], torch.arange(L)[None, :]
    allowed = {"causal": s_idx <= t_idx, "strict": s_idx < t_idx, "none": s_idx >= 0}[v.mask]
    y = torch.zeros(B, L, D, dtype=F64)
    for h in range(H):
        rows = _head_rows(h, H, d_h, v.heads)
        q_c = x @ w["W_Q"][rows].T  # (B, L, d_h)
        k_c = c @ W_UK[rows].T  # (B, L, d_h)
        val = c @ W_UV[rows].T  # (B, L, d_h)
        q_r = x @ w["W_QR"][_head_rows(h, H, d_R, v.heads)].T  # (B, L, d_R)
        if v.rotary:
            q_r = rotate(q_r, q_pos)
        if v.rotate_content:
            q_c, k_c = rotate(q_c, q_pos), rotate(k_c, k_pos)
        content = q_c @ k_c.transpose(1, 2)  # (B, L, L): [t, s]
        rot = q_r @ k_r.transpose(1, 2)  # (B, L, L)
        if v.scale == "separate":
            scores = content / math.sqrt(d_h) + rot / math.sqrt(d_R)
        else:
            divisor = {"sum": d_h + d_R, "d_h": d_h, "d_R": d_R, "none": 1}[v.scale]
            scores = (content + rot) / math.sqrt(divisor)
        scores = scores.masked_fill(~allowed, -math.inf)
        alpha = torch.nan_to_num(torch.softmax(scores, dim=v.softmax_dim))  # empty rows: 0
        y += (alpha @ val) @ w["W_O"][:, rows].T
    return y


MLA_MISTAKES = {
    "no causal mask: position t also reads the tokens after it": Variant(mask="none"),
    "scores scaled by 1/sqrt(d_h) only: the dot product has d_h + d_R terms": Variant(scale="d_h"),
    "scores scaled by 1/sqrt(d_R)": Variant(scale="d_R"),
    "scores not scaled: divide by sqrt(d_h + d_R)": Variant(scale="none"),
    "content and rotary parts scaled separately (1/sqrt(d_h), 1/sqrt(d_R)): one scale "
    "1/sqrt(d_h + d_R) for their sum": Variant(scale="separate"),
    "RoPE applied to the content part too: q^C and k^C are never rotated": Variant(
        rotate_content=True
    ),
    "the rotary query and key are not rotated": Variant(rotary=False),
    "W_UK and W_UV swapped: keys come from W_UK, values from W_UV": Variant(swap_up=True),
    "heads split interleaved: head h owns a contiguous block of rows": Variant(heads="interleaved"),
    "softmax over the queries: normalise over the keys s (last axis)": Variant(softmax_dim=-2),
}


def _mla_mistakes(x, w, dims, rotate):
    out = {name: mla_reference(x, w, dims, rotate, v) for name, v in MLA_MISTAKES.items()}
    shifted = torch.arange(x.shape[1]) + 1
    out["rotary queries rotated one position ahead of the keys: both use the token's t"] = (
        mla_reference(x, w, dims, rotate, TASK, q_pos=shifted)
    )
    return out


def check_mla_forward(ns):
    """Part 2: forward(x) matches the float64 head-by-head reference with the test's weights."""
    part = "Part 2"
    answer(ns, "MLAAttention", part)
    rules.assert_no_fused_attention("MLAAttention", ns, part)
    for trial in range(2):
        dims = _mla_dims(f"p2_mla_forward/{trial}")
        model, w = _loaded_model(ns, part, dims, f"p2_mla_forward/{trial}")
        rng = rng_for(f"p2_mla_forward/x{trial}")
        B, L = rng.randint(1, 3), rng.randint(5, 11)
        x = randn(generator(f"p2_mla_forward/x{trial}"), B, L, dims["D"])
        what = f"{part}: forward(x) of MLAAttention{_args(dims)} for x ({B}, {L}, {dims['D']})"
        got = call(model, (ns.on_device(x),), what, no_grad=True)

        def attempt(rotate, got=got, x=x, w=w, dims=dims, what=what):
            _close(
                what,
                got,
                mla_reference(x, w, dims, rotate),
                VALUES_TOL,
                _mla_mistakes(x, w, dims, rotate),
                shape_cause="the output is (B, L, D)",
            )

        _with_rope(ns, attempt)


def _rope_definitions(ns):
    """Names of the definitions reachable from the student's rope (its helpers), if any."""
    try:
        nodes = rules.reachable_definitions("rope", ns)
    except GradingError:
        return set()
    return {n.name for n in nodes if isinstance(n, ast.FunctionDef | ast.ClassDef)}


def _own_definitions(name, ns, skip):
    """The definitions reachable from ``name``, without those named in ``skip``."""
    return [
        node
        for node in rules.reachable_definitions(name, ns)
        if getattr(node, "name", None) not in skip or getattr(node, "name", None) == name
    ]


def _assert_no_loops(name, ns, part, skip):
    """rules.assert_no_loops, with the definitions in ``skip`` (graded elsewhere) left out."""
    for node in _own_definitions(name, ns, skip):
        for sub in ast.walk(node):
            kind = rules.LOOP_NODES.get(type(sub))
            if kind:
                fail(
                    f"{part}: the task forbids loops",
                    "vectorised tensor operations only",
                    f"{kind} at line {sub.lineno} of {getattr(node, 'name', 'the cell')}",
                    "iterating over heads, positions or tokens instead of using tensor operations",
                )


def _runs_mla(ns, part):
    """The rule points are for a model that works: build a small one and run it."""
    dims = {"D": 6, "H": 2, "d_h": 4, "r": 3, "d_R": 2}
    model = _build(ns, part, dims)
    x = torch.randn(1, 3, 6, generator=generator(f"{part}/runs"))
    call(model, (x,), f"{part}: forward (the rules are checked on a working answer)", no_grad=True)
    return model, x


def check_mla_rules(ns):
    """Part 2: no loop and no fused attention in MLAAttention (its helpers included, rope aside)."""
    part = "Part 2"
    _runs_mla(ns, part)
    rules.assert_no_fused_attention("MLAAttention", ns, part)
    _assert_no_loops("MLAAttention", ns, part, _rope_definitions(ns))


# ================================================================= Part 3: absorbed decoding


def _latent_query_reference(x, w, dims, t, rotate, which="W_UK", heads="contiguous", q_off=0):
    H, d_h, d_R = dims["H"], dims["d_h"], dims["d_R"]
    q_lat, q_rope = [], []
    for h in range(H):
        rows = _head_rows(h, H, d_h, heads)
        q_c = x @ w["W_Q"][rows].T  # (B, d_h)
        q_lat.append(q_c @ w[which][rows])  # (B, r): W_UK_h^T q_c
        q_r = x @ w["W_QR"][_head_rows(h, H, d_R, heads)].T  # (B, d_R)
        q_rope.append(rotate(q_r, torch.tensor(t + q_off)))
    return torch.stack(q_lat, 1), torch.stack(q_rope, 1)


def check_latent_query(ns):
    """Part 3(a): latent_query returns W_UK_h^T W_Q_h x_t and R_t W_QR_h x_t for every head."""
    part = "Part 3(a)"
    fn = answer(ns, "latent_query", part)
    dims = _mla_dims("p3_latent_query")
    model, w = _loaded_model(ns, part, dims, "p3_latent_query")
    rng = rng_for("p3_latent_query/x")
    B, t = rng.randint(2, 4), rng.randint(40, 2000)
    H, d_h, r, d_R = dims["H"], dims["d_h"], dims["r"], dims["d_R"]
    x = randn(generator("p3_latent_query/x"), B, dims["D"])
    what = f"{part}: latent_query(model, x_t ({B}, {dims['D']}), t={t})"
    q_lat, q_rope = _pair(
        call(fn, (model, ns.on_device(x), t), what, no_grad=True), what, "(q_lat, q_rope)"
    )
    lat_shapes = {
        (B, H, d_h): "that is the content query q^C: absorb W_UK, q_lat[:, h] = W_UK_h^T q^C",
        (B, H * r): "keep the heads on their own axis: (B, H, r)",
        (B, r, H): "axes in the order (B, H, r)",
    }
    got_shape = tuple(tensor(q_lat, f"{what}: q_lat").shape)
    if got_shape != (B, H, r):
        fail(f"{what}: shape of q_lat", (B, H, r), got_shape, lat_shapes.get(got_shape))
    ref_lat, _ = _latent_query_reference(x, w, dims, t, rope_reference)
    scale = math.sqrt(d_h + d_R)
    _close(
        f"{what}: q_lat",
        q_lat,
        ref_lat,
        VALUES_TOL,
        {
            "W_UV absorbed into the query: W_UK belongs to the query side, W_UV to the output side": _latent_query_reference(
                x, w, dims, t, rope_reference, which="W_UV"
            )[0],
            "scaled by 1/sqrt(d_h + d_R): latent_query returns the unscaled query (decode_step "
            "scales the scores)": ref_lat / scale,
            "scaled by 1/sqrt(d_h): latent_query returns the unscaled query": ref_lat
            / math.sqrt(d_h),
            "heads split interleaved: head h owns a contiguous block of rows": _latent_query_reference(
                x, w, dims, t, rope_reference, heads="interleaved"
            )[0],
            "W_UK.weight split per head as (H, r, d_h): its rows are (H*d_h) = H blocks of d_h": torch.einsum(
                "bhd,hrd->bhr",
                (x @ w["W_Q"].T).view(B, H, d_h),
                w["W_UK"].reshape(H, r, d_h),
            ),
        },
    )
    rope_shapes = {
        (B, d_R): "one rotary query per head: q_rope is (B, H, d_R) (the shared one is the key)",
        (B, H * d_R): "keep the heads on their own axis: (B, H, d_R)",
    }
    got_shape = tuple(tensor(q_rope, f"{what}: q_rope").shape)
    if got_shape != (B, H, d_R):
        fail(f"{what}: shape of q_rope", (B, H, d_R), got_shape, rope_shapes.get(got_shape))

    def attempt(rotate):
        ref_rope = _latent_query_reference(x, w, dims, t, rotate)[1]
        _close(
            f"{what}: q_rope",
            q_rope,
            ref_rope,
            VALUES_TOL,
            {
                "not rotated: q_rope[:, h] = R_t W_QR_h x_t": torch.stack(
                    [x @ w["W_QR"][_head_rows(h, H, d_R, "contiguous")].T for h in range(H)], 1
                ),
                "rotated at t + 1: the token's position is t": _latent_query_reference(
                    x, w, dims, t, rotate, q_off=1
                )[1],
                "rotated at t - 1: the token's position is t": _latent_query_reference(
                    x, w, dims, t, rotate, q_off=-1
                )[1],
                "scaled by 1/sqrt(d_h + d_R): latent_query returns the unscaled query": ref_rope
                / scale,
                "heads split interleaved: head h owns a contiguous block of rows": _latent_query_reference(
                    x, w, dims, t, rotate, heads="interleaved"
                )[1],
            },
        )

    _with_rope(ns, attempt)


def _decode(ns, fn, model, x_t, cache, what):
    """One call of the student's decode_step; (y_t, cache as data)."""
    sent = None
    if cache is not None:
        if type(cache) is not dict:
            fail(
                f"{what}: the cache must be a dict",
                "{'c': (B, L, r), 'k_rope': (B, L, d_R)}",
                describe(cache),
            )
        sent = {k: ns.on_device(tensor(v, f"{what}: cache[{k!r}]")) for k, v in cache.items()}
    out = _pair(
        call(fn, (model, ns.on_device(x_t), sent), what, no_grad=True), what, "(y_t, cache)"
    )
    return out[0], out[1]


def _check_cache_layout(cache, B, L, dims, what):
    """The returned cache is exactly {"c": (B, L, r), "k_rope": (B, L, d_R)}."""
    D, H, d_h, r, d_R = _args(dims)
    if type(cache) is not dict:
        fail(f"{what}: the cache must be a dict", "{'c': ..., 'k_rope': ...}", describe(cache))
    extra = sorted(set(cache) - {"c", "k_rope"})
    missing = sorted({"c", "k_rope"} - set(cache))
    if extra:
        fail(
            f"{what}: the cache holds more than c and k_rope",
            "exactly the keys 'c' and 'k_rope'",
            f"extra keys {extra}",
            "caching the up-projected keys or values (or a position): MLA caches only the "
            "latent and the rotary key; absorption makes keys and values unnecessary",
        )
    if missing:
        fail(f"{what}: the cache lacks {missing}", "the keys 'c' and 'k_rope'", sorted(cache))
    c_shapes = {
        (B, L, H * d_h): "c holds up-projected keys or values (H*d_h per token), not the latent",
        (B, H, L, r): "one latent per head: the latent is shared by all heads, cache it once",
        (B, L, 2 * r): "the latent cached twice (for keys and values): it serves both",
        (L, B, r): "axes swapped: the cache is (B, L, r)",
        (B, L + 1, r): "one row too many: the cache holds one row per token so far",
        (B, L - 1, r): "the new token's latent was not appended",
    }
    k_shapes = {
        (B, L, H * d_R): "one rotary key per head: the rotary key is shared by all heads",
        (B, H, L, d_R): "one rotary key per head: the rotary key is shared by all heads",
        (B, L, H * d_h): "content keys cached: only the rotary key is cached",
        (L, B, d_R): "axes swapped: k_rope is (B, L, d_R)",
        (B, L - 1, d_R): "the new token's rotary key was not appended",
    }
    for key, expected, named in (("c", (B, L, r), c_shapes), ("k_rope", (B, L, d_R), k_shapes)):
        got = tuple(tensor(cache[key], f"{what}: cache[{key!r}]").shape)
        if got != expected:
            fail(f"{what}: shape of cache[{key!r}] after {L} tokens", expected, got, named.get(got))


def check_decode_cache(ns):
    """Part 3(b): decode_step caches exactly c (B, L, r) and the rotated k_rope (B, L, d_R)."""
    part = "Part 3(b)"
    fn = answer(ns, "decode_step", part)
    dims = _mla_dims("p3_decode_cache")
    model, w = _loaded_model(ns, part, dims, "p3_decode_cache")
    rng = rng_for("p3_decode_cache/x")
    B, steps = rng.randint(2, 4), 3
    x = randn(generator("p3_decode_cache/x"), B, steps, dims["D"])
    cache = None
    for t in range(steps):
        what = f"{part}: decode_step after {t + 1} token(s) (B = {B})"
        _, cache = _decode(ns, fn, model, x[:, t], cache, what)
        _check_cache_layout(cache, B, t + 1, dims, what)
    what = f"{part}: the cache after {steps} tokens"
    _close(
        f"{what}: c",
        cache["c"],
        x @ w["W_DKV"].T,
        VALUES_TOL,
        {"c holds x, not the latent W_DKV x": x},
        shape_cause="c is (B, L, r)",
    )
    raw = x @ w["W_KR"].T  # (B, L, d_R)

    def attempt(rotate):
        positions = torch.arange(steps)
        _close(
            f"{what}: k_rope",
            cache["k_rope"],
            rotate(raw, positions),
            VALUES_TOL,
            {
                "k_rope cached before rotation: cache R_s W_KR x_s, rotated once when written": raw,
                "positions counted from 1: token s is rotated at s, the first at 0": rotate(
                    raw, positions + 1
                ),
                "every cached key rotated at the newest position t, not at its own s": rotate(
                    raw, torch.full((steps,), steps - 1)
                ),
            },
        )

    _with_rope(ns, attempt)


DECODE_MISTAKES = {
    name: variant
    for name, variant in MLA_MISTAKES.items()
    if variant not in (Variant(rotate_content=True), Variant(mask="none"))
}
DECODE_MISTAKES["the token does not attend to itself: append it to the cache before attending"] = (
    Variant(mask="strict")
)


def _decode_mistakes(x, w, dims, rotate, step=False):
    """Named wrong decoders: the MLA mistakes, and positions off by one.

    ``step``: the mistakes of one step from the judge's cache (only the last token, at the
    last row, is the student's); otherwise every token was decoded by the student, and a
    key rotated at t + 1 is the same mistake as a query at t - 1 (only offsets count).
    """
    out = {name: mla_reference(x, w, dims, rotate, v) for name, v in DECODE_MISTAKES.items()}
    base = torch.arange(x.shape[1])
    if not step:
        out[
            "queries and keys rotated one position apart (the new token's key at t + 1, or its "
            "query at t - 1): both belong at t, the number of cached tokens"
        ] = mla_reference(x, w, dims, rotate, TASK, k_pos=base + 1)
        return out
    ahead, behind = base.clone(), base.clone()
    ahead[-1] += 1
    behind[-1] -= 1
    named = {
        "the new token's rotary key rotated at t + 1: the token at position t is rotated by "
        "R_t": dict(k_pos=ahead),
        "the query rotated at t - 1: the new token is at t = number of cached tokens": dict(
            q_pos=behind
        ),
        "positions counted from 1: the new token is at t = number of cached tokens": dict(
            q_pos=ahead, k_pos=ahead
        ),
    }
    for name, positions in named.items():
        out[name] = mla_reference(x, w, dims, rotate, TASK, **positions)
    return {k: v[:, -1] for k, v in out.items()}


def check_decode_forward(ns):
    """Part 3(b): token-by-token decoding equals the full causal forward (float64)."""
    part = "Part 3(b)"
    fn = answer(ns, "decode_step", part)
    dims = _mla_dims("p3_decode_forward")
    model, w = _loaded_model(ns, part, dims, "p3_decode_forward")
    rng = rng_for("p3_decode_forward/x")
    B, L = rng.randint(1, 3), rng.randint(5, 8)
    x = randn(generator("p3_decode_forward/x"), B, L, dims["D"])
    rows, cache = [], None
    for t in range(L):
        what = f"{part}: decode_step for token {t} (B = {B})"
        y_t, cache = _decode(ns, fn, model, x[:, t], cache, what)
        y_t = tensor(y_t, f"{what}: y_t")
        if tuple(y_t.shape) != (B, dims["D"]):
            fail(f"{what}: shape of y_t", (B, dims["D"]), tuple(y_t.shape))
        rows.append(y_t)
    got = torch.stack(rows, dim=1)  # (B, L, D)
    what = f"{part}: {L} decode steps from an empty cache, MLAAttention{_args(dims)}"

    def from_empty(rotate):
        _close(
            what,
            got,
            mla_reference(x, w, dims, rotate),
            VALUES_TOL,
            _decode_mistakes(x, w, dims, rotate),
        )

    _with_rope(ns, from_empty)

    # One step from a cache the judge wrote, far into a sequence.
    L0 = rng.randint(20, 60)
    x2 = randn(generator("p3_decode_forward/x2"), B, L0 + 1, dims["D"])
    what = f"{part}: one decode step at position {L0} from a cache of {L0} tokens"

    def from_cache(rotate):
        prefix = x2[:, :L0]
        cache = {
            "c": prefix @ w["W_DKV"].T,
            "k_rope": rotate(prefix @ w["W_KR"].T, torch.arange(L0)),
        }
        y_t, _ = _decode(ns, fn, model, x2[:, L0], cache, what)
        _close(
            what,
            y_t,
            mla_reference(x2, w, dims, rotate)[:, L0],
            VALUES_TOL,
            _decode_mistakes(x2, w, dims, rotate, step=True),
            shape_cause="y_t is (B, D)",
        )

    _with_rope(ns, from_cache)


def _mentions(node, name):
    """Line of the first mention of ``name`` (a name, an attribute, a string) in ``node``, or None."""
    for sub in ast.walk(node):
        if (
            (isinstance(sub, ast.Name) and sub.id == name)
            or (isinstance(sub, ast.Attribute) and sub.attr == name)
            or (isinstance(sub, ast.Constant) and sub.value == name)
        ):
            return sub.lineno
    return None


def check_decode_rules(ns):
    """Part 3(b): decode_step uses latent_query, never W_UK itself, no loop, no fused attention."""
    part = "Part 3(b)"
    fn = answer(ns, "decode_step", part)
    model, x = _runs_mla(ns, part)
    call(
        fn,
        (model, x[:, 0], None),
        f"{part}: decode_step (the rules are checked on a working answer)",
        no_grad=True,
    )
    reached = rules.reachable_definitions("decode_step", ns)
    if not any(_mentions(node, "latent_query") for node in reached):
        fail(
            f"{part}: decode_step must get its queries from latent_query",
            "a call of latent_query(model, x_t, t)",
            "no use of latent_query",
        )
    skip = _rope_definitions(ns) | {"MLAAttention"}  # graded in Parts 1 and 2
    for name in ("decode_step", "latent_query"):
        rules.assert_no_fused_attention(name, ns, part)
        _assert_no_loops(name, ns, part, skip)
    query_side = skip | {"MLAAttention"}
    query_side |= {
        n.name
        for n in rules.reachable_definitions("latent_query", ns)
        if isinstance(n, ast.FunctionDef | ast.ClassDef)
    }
    for node in _own_definitions("decode_step", ns, query_side):
        line = _mentions(node, "W_UK")
        if line is not None:
            fail(
                f"{part}: decode_step uses W_UK (line {line} of {getattr(node, 'name', 'a cell')})",
                "W_UK only inside latent_query, absorbed into the query",
                "W_UK applied in decode_step",
                "rebuilding keys from the cached latents: with W_UK absorbed into the query the "
                "keys are never formed",
            )


# ================================================================= Part 4: cache sizes

DEEPSEEK_V2 = {"H": 128, "d_h": 128, "r": 512, "d_R": 64}


def _cache_expected(kind, H, d_h, G, r, d_R):
    return {"mha": 2 * H * d_h, "gqa": 2 * G * d_h, "mqa": 2 * d_h, "mla": r + d_R}[kind]


def _cache_mistakes(kind, H, d_h, G, r, d_R):
    """A named wrong count for each kind (first match is reported)."""
    return {
        "mha": {
            H * d_h: "keys only: MHA caches a key and a value per head",
            4 * H * d_h: "bytes of bf16, not elements",
            2 * d_h: "one head only: every head caches its own key and value",
        },
        "gqa": {
            2 * H * d_h: "G ignored: GQA caches only its G key/value heads",
            G * d_h: "keys only: a key and a value per key/value head",
            2
            * (H // G)
            * d_h: "H/G heads: GQA keeps G key/value heads, H/G query heads share each",
        },
        "mqa": {
            d_h: "keys only: one key and one value",
            2 * H * d_h: "that is MHA: MQA keeps one key/value head for all query heads",
        },
        "mla": {
            r: "the rotary key is missing: MLA caches c_s and k^R_s",
            2 * r + d_R: "the latent counted twice: one c_s serves keys and values",
            r + H * d_R: "one rotary key per head: it is shared by all heads",
            2 * (r + d_R): "counted twice (keys and values): c_s and k^R_s are cached once",
            r + 2 * d_R: "the rotary part counted twice",
        },
    }[kind]


def _count(value, what):
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    fail(f"{what}: expected an integer count", "an int", describe(value))


def check_cache_elements(ns):
    """Part 4(a): elements cached per token per layer for MHA, GQA, MQA and MLA."""
    part = "Part 4(a)"
    fn = answer(ns, "cache_elements", part)
    rng = rng_for("p4_cache_elements")
    configs = [("DeepSeek-V2", {**DEEPSEEK_V2, "G": 8})]
    for trial in range(3):
        H = rng.choice([6, 8, 12, 16, 20])
        G = rng.choice([g for g in range(2, H) if H % g == 0])
        configs.append(
            (
                f"draw {trial}",
                {
                    "H": H,
                    "G": G,
                    "d_h": rng.choice([24, 40, 48, 80, 96]),
                    "r": rng.choice([72, 160, 192, 320]),
                    "d_R": rng.choice([8, 16, 32]),
                },
            )
        )
    for label, cfg in configs:
        for kind in ("mha", "gqa", "mqa", "mla"):
            kwargs = {n: cfg[n] for n in ("H", "d_h", "G", "r", "d_R")}  # every count gets all
            args = ", ".join(f"{k}={v}" for k, v in kwargs.items())
            what = f"{part}: cache_elements({kind!r}, {args}) ({label})"
            got = _count(call(fn, (kind,), what, **kwargs), what)
            expected = _cache_expected(kind, cfg["H"], cfg["d_h"], cfg["G"], cfg["r"], cfg["d_R"])
            if got != expected:
                causes = _cache_mistakes(kind, cfg["H"], cfg["d_h"], cfg["G"], cfg["r"], cfg["d_R"])
                fail(f"{what}: wrong count", expected, got, causes.get(got))


# grade_id of each test cell -> the check the judge runs for it
CHECKS = {
    grade_id: single_threaded(check)
    for grade_id, check in {
        "p1_rope": check_rope,
        "p1_rope_rules": check_rope_rules,
        "p1_merged_score_matrix": check_merged_score_matrix,
        "p2_mla_attributes": check_mla_attributes,
        "p2_mla_forward": check_mla_forward,
        "p2_mla_rules": check_mla_rules,
        "p3_latent_query": check_latent_query,
        "p3_decode_cache": check_decode_cache,
        "p3_decode_forward": check_decode_forward,
        "p3_decode_rules": check_decode_rules,
        "p4_cache_elements": check_cache_elements,
    }.items()
}
