"""Cache sizes of ``mla_inference``: the elements each kind of attention caches, and the
named wrong counts.

Counted per kind (MHA, GQA, MQA, MLA with decoupled RoPE), per token and per layer, from the
dimensions alone; each wrong count maps to the mistake that gives it.
"""


def cache_expected(kind: str, H: int, d_h: int, G: int, r: int, d_R: int) -> int:
    """Elements cached per token per layer by ``kind`` (mha, gqa, mqa, mla)."""
    return {"mha": 2 * H * d_h, "gqa": 2 * G * d_h, "mqa": 2 * d_h, "mla": r + d_R}[kind]


def cache_mistakes(kind: str, H: int, d_h: int, G: int, r: int, d_R: int) -> dict[int, str]:
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
