"""Part 13 of ``attention_variants``: the experiment, judged in float64 from the student's own data.

Nothing compares two float32 computations with each other: relative_error is recomputed from
the student's outputs, the models' weights are compared with what the student's matrices give,
and a few secret batch elements' rows with the MLA recomputed here (see ``tolerances``).
"""

import math
from dataclasses import dataclass
from typing import Any

import torch

from attncourse.judge.checks import (
    answer,
    check_close,
    check_shape,
    describe,
    fail,
    generator,
    layer_weight,
    randn,
    rel_error,
    rng_for,
    submodule,
    tensor,
)
from attncourse.judge.remote import Remote, StudentNamespace

from .models import check_values, is_instance, mha_args
from .references import EXPERIMENT, F64, MLA_DATA, draw_dims, mla_rows, row_ratios
from .shapes import check_shape_named
from .tolerances import (
    EXPERIMENT_BATCHES,
    EXPERIMENT_PROBES,
    EXPERIMENT_WEIGHT_TOL,
    RELATIVE_ERROR_TOL,
    ROWS_TOL,
)

LAYERS = ("W_Q", "W_K", "W_V", "W_O")


def _experiment_number(value):
    """relative_error as a float: a one-element tensor or a Python number."""
    if type(value) is torch.Tensor and value.numel() == 1:
        return float(tensor(value, "relative_error").reshape(()))
    if type(value) in (int, float):
        return float(value)
    fail("Part 13: relative_error must be a number", "a 0-d tensor or a float", describe(value))


def _experiment_data(ns):
    """The experiment's tensors as the kernel holds them, checked to have the task's sizes."""
    D, H, r, B, L_1, L_2 = EXPERIMENT.values()
    shapes = {
        "W_DKV": (r, D),
        "W_UK": (D, r),
        "W_UV": (D, r),
        "W_Q": (D, D),
        "W_O": (D, D),
        "x": (B, L_1, D),
        "y": (B, L_2, D),
        "output_vanilla": (B, L_1, D),
        "output_reduced": (B, L_1, D),
    }
    data = {}
    for name, shape in shapes.items():
        value = answer(ns, name, "Part 13")
        if type(value) is not torch.Tensor:
            fail(f"Part 13: `{name}` must be a tensor", "torch.Tensor", describe(value))
        check_shape_named(f"Part 13: `{name}` (the task's sizes)", tuple(value.shape), shape)
        if value.dtype == torch.bool:
            fail(f"Part 13: `{name}` must hold numbers", "a floating-point tensor", "booleans")
        data[name] = value
    return data


def _check_relative_error(rel, vanilla, reduced):
    """relative_error is what the student's own two outputs give (computed here in float64)."""
    recomputed = rel_error(reduced, vanilla)
    if not math.isfinite(recomputed):
        fail(
            "Part 13: output_vanilla or output_reduced contains NaN or inf",
            "finite outputs",
            "NaN or inf",
        )
    # Two computations through different matrices (inner sizes d and r) never agree in every
    # one of 3.3 million numbers: equal outputs are a copy.
    if recomputed == 0.0:
        fail(
            "Part 13: output_reduced is identical to output_vanilla",
            "output_reduced = model_MHA_reduced(x, y)",
            "a copy of output_vanilla",
        )
    check_close(
        "Part 13: relative_error against the one your output_vanilla and output_reduced give",
        torch.tensor([rel], dtype=F64),
        torch.tensor([recomputed], dtype=F64),
        RELATIVE_ERROR_TOL,
        {
            "the mean-squared error, not its square root: relative_error = "
            "sqrt(mse_output) / sqrt(mean(output_vanilla**2))": torch.tensor([recomputed**2]),
        },
    )


def _experiment_model(ns, cls, name, size, H):
    """The student's MyMHA instance ``name`` with heads of ``size``, its projections bias-free."""
    model = answer(ns, name, "Part 13")
    if not is_instance(model, cls):
        fail(f"Part 13: `{name}` must be a MyMHA", "a MyMHA instance", describe(model))
    sizes = tuple(getattr(model, key, None) for key in ("D_qk", "D_v", "H"))
    if sizes != (size, size, H):
        fail(
            f"Part 13: `{name}` has the wrong sizes",
            f"D_qk = D_v = {size}, H = {H}",
            "D_qk, D_v, H = " + ", ".join(repr(v)[:20] for v in sizes),
        )
    for layer_name in LAYERS:
        layer = submodule(model, layer_name)
        bias = getattr(layer, "bias", None) if isinstance(layer, Remote) else None
        if bias is not None and not (type(bias) is torch.Tensor and not bool(bias.any())):
            fail(
                f"Part 13: `{name}.{layer_name}` has a bias",
                "projections without bias, as the MLA's",
                "a bias vector",
                "bias present: the experiment's outputs must be the MLA's",
            )
    return model


def _weight(model, layer_name, name):
    """``model.<layer_name>.weight`` as float64 data."""
    layer = submodule(model, layer_name)
    if (weight := layer_weight(layer)) is None:
        fail(
            f"Part 13: `{name}.{layer_name}` has no `.weight` tensor",
            "an nn.Linear layer",
            describe(layer),
        )
    return weight.to(F64)


def _check_experiment_mha(ns, dtype):
    """MyMHA in the experiment's two shapes at small sizes, as in Part 5: D_qk = D_v = d with
    H*d = D (the vanilla model) and D_qk = D_v = r (the reduced one). It runs in the dtype of the
    experiment's data (float32 as the course gives it): a MyMHA that fails only in float64 costs
    Part 5, not the experiment it ran right."""
    H, d, r = draw_dims("p13_experiment/mha", ["H", "d", "r"]).values()
    for test_id, size in (("vanilla", d), ("reduced", r)):
        spec = {"D_1": H * d, "D_2": H * d, "D_qk": size, "D_v": size, "H": H, "G": H}
        part, test = "Part 13 (the experiment's MyMHA)", f"p13_experiment/{test_id}"
        check_values(ns, "MyMHA", spec, part, mha_args(spec), test, trials=1, dtype=dtype)


def _check_vanilla_weights(weights, w):
    """model_MHA_vanilla holds the MLA's projections (float32 products: ~1e-7 off)."""
    projections = {
        "the query projection W_Q": w["W_Q"],
        "the key projection W_UK @ W_DKV": w["W_UK"] @ w["W_DKV"],
        "the value projection W_UV @ W_DKV": w["W_UV"] @ w["W_DKV"],
        "the output projection W_O": w["W_O"],
    }
    for name, (what, want) in zip(LAYERS, projections.items(), strict=True):
        check_close(
            f"Part 13: model_MHA_vanilla.{name}.weight",
            weights["model_MHA_vanilla", name],
            want,
            EXPERIMENT_WEIGHT_TOL,
            {
                f"model_MHA_vanilla.{name} holds {other}, not {what}": matrix
                for other, matrix in projections.items()
                if other != what
            },
        )


def _check_reduced_weights(weights, w, H):
    """model_MHA_reduced satisfies equations (1) and (2) head by head, checked through probes.

    W_K and W_V hold H copies of the latent projections; any gauge is fine. Each side
    is a D x D matrix per head; both are compared through the same random probes
    P, R (D x k): P^T M R for each head's M. Equal matrices give equal probes; for
    unequal ones the probes' relative error estimates the full one (a scale error
    exactly), and it costs H*k*k numbers instead of H*D*D (1 GB in float64).
    """
    D, r = w["W_Q"].shape[0], w["W_DKV"].shape[0]
    d = D // H
    q_r, k_r, v_r, o_r = (weights["model_MHA_reduced", n] for n in LAYERS)
    for name, weight, shape in (
        ("W_Q", q_r, (H * r, D)),
        ("W_K", k_r, (H * r, D)),
        ("W_V", v_r, (H * r, D)),
        ("W_O", o_r, (D, H * r)),
    ):
        check_shape(
            f"Part 13: model_MHA_reduced.{name}.weight",
            tuple(weight.shape),
            shape,
            f"W_K and W_V of model_MHA_reduced hold H copies of the latent projections: "
            f"({H}*r, D); W_Q is W_Q_MLA_hat ({H}*r, D) and W_O is W_O_MLA_hat (D, {H}*r)",
        )
    gen = generator("p13_experiment/probes")
    P, R = randn(gen, D, EXPERIMENT_PROBES), randn(gen, D, EXPERIMENT_PROBES)
    latent_R = w["W_DKV"] @ R  # (r, k)

    def per_head(m, size):  # (H*size, k) -> (H, size, k)
        return m.reshape(H, size, EXPERIMENT_PROBES)

    def probes(left, right):  # (H, n, k), (H, n, k) -> (H, k, k): left_h^T right_h
        return torch.einsum("hnk,hnl->hkl", left, right)

    check_close(
        "Part 13: model_MHA_reduced's logits, equation (1), head by head",
        probes(per_head(q_r @ P, r), per_head(k_r @ R, r)),
        probes(per_head(w["W_Q"] @ P, d), per_head(w["W_UK"] @ latent_R, d)) * math.sqrt(r / d),
        EXPERIMENT_WEIGHT_TOL,
        {
            "missing the sqrt(r/d) factor in W_Q_MLA_hat": probes(
                per_head(w["W_Q"] @ P, d), per_head(w["W_UK"] @ latent_R, d)
            ),
        },
    )
    check_close(
        "Part 13: model_MHA_reduced's value-to-output maps, equation (2), head by head",
        probes(per_head(o_r.T @ P, r), per_head(v_r @ R, r)),
        probes(per_head(w["W_O"].T @ P, d), per_head(w["W_UV"] @ latent_R, d)),
        EXPERIMENT_WEIGHT_TOL,
    )


def check_rows(what: str, got: Any, ref: torch.Tensor, slack: torch.Tensor, cause: str) -> float:
    """Every row of ``got`` within ROWS_TOL * |ref row| + its rounding slack; the worst ratio."""
    ratio = row_ratios(got, ref, slack)
    worst = float(ratio.max()) if bool(torch.isfinite(ratio).all()) else math.inf
    if not worst <= 1.0:
        off = int((~(ratio <= 1.0)).sum())
        size = torch.linalg.vector_norm(ref, dim=-1).clamp_min(1e-300)
        relative = torch.linalg.vector_norm(tensor(got, what) - ref, dim=-1) / size
        fail(
            f"{what}: rows differ from the MLA recomputed in float64 from your data",
            f"every row within {ROWS_TOL:.0e} relative error (plus what float32 rounding "
            "of its logits can move)",
            f"{off} of {ratio.numel()} rows off, the worst by {float(relative.max()):.2e} relative",
            cause,
        )
    return worst


@dataclass(frozen=True)
class ExperimentRead:
    """What the experiment's check reads from the kernel, the same under every secret: the data
    and outputs as the student left them, and the models' weights {(model, layer): float64}."""

    data: dict
    weights: dict


def read_experiment(ns: StudentNamespace) -> ExperimentRead:
    """Part 13: the experiment's names, checked for what needs no secret (the number, the sizes,
    relative_error against the outputs, the models' classes, sizes and biases), and read."""
    rel = _experiment_number(answer(ns, "relative_error", "Part 13"))
    D, H, r = EXPERIMENT["D"], EXPERIMENT["H"], EXPERIMENT["r"]
    data = _experiment_data(ns)
    _check_relative_error(rel, data["output_vanilla"], data["output_reduced"])
    weights: dict[tuple[str, str], torch.Tensor] = {}
    for name, size in (("model_MHA_vanilla", D // H), ("model_MHA_reduced", r)):
        model = _experiment_model(ns, ns.get("MyMHA"), name, size, H)
        weights |= {(name, layer): _weight(model, layer, name) for layer in LAYERS}
    return ExperimentRead(data, weights)


def judge_experiment(ns: StudentNamespace, read: ExperimentRead) -> None:
    """Part 13: what the secret decides: MyMHA in the experiment's shapes at secret sizes, the
    weights through secret probes, and the rows of secret batch elements against the vanilla
    MLA recomputed in float64 from the student's data (~0.2 s a secret; reading the 130 MB of
    the experiment, raw bytes since the binary frame, is :func:`read_experiment`'s ~0.1 s)."""
    H, B = EXPERIMENT["H"], EXPERIMENT["B"]
    dtype = read.data["x"].dtype
    _check_experiment_mha(ns, dtype if dtype in (torch.float32, torch.float64) else F64)
    w = {name: read.data[name].to(F64) for name in MLA_DATA}
    _check_vanilla_weights(read.weights, w)
    _check_reduced_weights(read.weights, w, H)
    batches = sorted(rng_for("p13_experiment/rows").sample(range(B), EXPERIMENT_BATCHES))
    ref, slack = mla_rows(read.data["x"][batches], read.data["y"][batches], w, H)
    for name in ("output_vanilla", "output_reduced"):
        model = name.replace("output", "model_MHA")
        check_rows(
            f"Part 13: {name} at batch elements {batches}",
            read.data[name][batches],
            ref,
            slack,
            f"{name} must be {model}(x, y), computed after the weights were loaded",
        )


def check_experiment(ns: StudentNamespace) -> None:
    """Part 13: the experiment ran the task's setup and reports the reduced model's error."""
    judge_experiment(ns, read_experiment(ns))
