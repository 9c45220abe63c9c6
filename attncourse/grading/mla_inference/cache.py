"""Part 4 of ``mla_inference``: elements cached per token per layer for MHA, GQA, MQA and MLA."""

from typing import Any

from attncourse.judge.checks import answer, call, fail, integer, rng_for
from attncourse.judge.remote import StudentNamespace

from .references_cache import cache_expected, cache_mistakes

DEEPSEEK_V2 = {"H": 128, "d_h": 128, "r": 512, "d_R": 64}


def check_cache_elements(ns: StudentNamespace) -> None:
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
            # every count gets all (Any: they travel as call's keyword options)
            kwargs: dict[str, Any] = {n: cfg[n] for n in ("H", "d_h", "G", "r", "d_R")}
            args = ", ".join(f"{k}={v}" for k, v in kwargs.items())
            what = f"{part}: cache_elements({kind!r}, {args}) ({label})"
            got = integer(call(fn, (kind,), what, **kwargs), what, "an integer count")
            expected = cache_expected(kind, cfg["H"], cfg["d_h"], cfg["G"], cfg["r"], cfg["d_R"])
            if got != expected:
                causes = cache_mistakes(kind, cfg["H"], cfg["d_h"], cfg["G"], cfg["r"], cfg["d_R"])
                fail(f"{what}: wrong count", expected, got, causes.get(got))
