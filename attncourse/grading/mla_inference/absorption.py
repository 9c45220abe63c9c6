"""Part 3(a) of ``mla_inference``: latent_query, the query with W_UK absorbed and its rotary part."""

import math
from typing import Any

import torch

from attncourse.judge.checks import answer, call, describe, fail, generator, randn, rng_for, tensor
from attncourse.judge.remote import StudentNamespace

from .attention import loaded_model, mla_dims
from .references import Variant, head_rows, latent_query_reference, rope_reference
from .rope import close, with_rope
from .tolerances import VALUES_TOL


def pair(value: Any, what: str, names: str) -> Any:
    """``value`` as a pair of answers, or a failure naming the pair ``names``."""
    if type(value) not in (tuple, list) or len(value) != 2:
        fail(f"{what}: return a pair {names}", "a tuple of two tensors", describe(value))
    return value


def check_latent_query(ns: StudentNamespace) -> None:
    """Part 3(a): latent_query returns W_UK_h^T W_Q_h x_t and R_t W_QR_h x_t for every head."""
    part = "Part 3(a)"
    fn = answer(ns, "latent_query", part)
    dims = mla_dims("p3_latent_query")
    model, w = loaded_model(ns, part, dims, "p3_latent_query")
    rng = rng_for("p3_latent_query/x")
    B, t = rng.randint(2, 4), rng.randint(40, 2000)
    H, d_h, r, d_R = dims["H"], dims["d_h"], dims["r"], dims["d_R"]
    x = randn(generator("p3_latent_query/x"), B, dims["D"])
    what = f"{part}: latent_query(model, x_t ({B}, {dims['D']}), t={t})"
    q_lat, q_rope = pair(
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
    ref_lat, _ = latent_query_reference(x, w, dims, t, rope_reference)
    scale = math.sqrt(d_h + d_R)
    close(
        f"{what}: q_lat",
        q_lat,
        ref_lat,
        VALUES_TOL,
        {
            "W_UV absorbed into the query: W_UK belongs to the query side, W_UV to the output side": latent_query_reference(
                x, w, dims, t, rope_reference, Variant(swap_up=True)
            )[0],
            "scaled by 1/sqrt(d_h + d_R): latent_query returns the unscaled query (decode_step "
            "scales the scores)": ref_lat / scale,
            "scaled by 1/sqrt(d_h): latent_query returns the unscaled query": ref_lat
            / math.sqrt(d_h),
            "heads split interleaved: head h owns a contiguous block of rows": latent_query_reference(
                x, w, dims, t, rope_reference, Variant(heads="interleaved")
            )[0],
            "W_UK.weight split per head as (H, r, d_h): its rows are (H*d_h) = H blocks of d_h": torch.einsum(
                "bhd,hrd->bhr",
                (x @ w["W_Q"].T).view(B, H, d_h),
                w["W_UK"].reshape(H, r, d_h),
            ),
        },
    )
    rope_shapes: dict[tuple[int, ...], str] = {
        (B, d_R): "one rotary query per head: q_rope is (B, H, d_R) (the shared one is the key)",
        (B, H * d_R): "keep the heads on their own axis: (B, H, d_R)",
    }
    got_shape = tuple(tensor(q_rope, f"{what}: q_rope").shape)
    if got_shape != (B, H, d_R):
        fail(f"{what}: shape of q_rope", (B, H, d_R), got_shape, rope_shapes.get(got_shape))

    def attempt(rotate):
        ref_rope = latent_query_reference(x, w, dims, t, rotate)[1]
        close(
            f"{what}: q_rope",
            q_rope,
            ref_rope,
            VALUES_TOL,
            {
                "not rotated: q_rope[:, h] = R_t W_QR_h x_t": torch.stack(
                    [x @ w["W_QR"][head_rows(h, H, d_R, "contiguous")].T for h in range(H)], 1
                ),
                "rotated at t + 1: the token's position is t": latent_query_reference(
                    x, w, dims, t, rotate, q_off=1
                )[1],
                "rotated at t - 1: the token's position is t": latent_query_reference(
                    x, w, dims, t, rotate, q_off=-1
                )[1],
                "scaled by 1/sqrt(d_h + d_R): latent_query returns the unscaled query": ref_rope
                / scale,
                "heads split interleaved: head h owns a contiguous block of rows": latent_query_reference(
                    x, w, dims, t, rotate, Variant(heads="interleaved")
                )[1],
            },
        )

    with_rope(ns, attempt)
