"""Part 14 of ``attention_variants``: the kv-cache per position of MHA and of MLA."""

from attncourse.judge.checks import answer, call, fail, integer, rng_for
from attncourse.judge.remote import StudentNamespace


def check_kv_cache(ns: StudentNamespace) -> None:
    """Part 14: kv_cache_per_position(D, r) -> (2*D for MHA, r for MLA)."""
    func = answer(ns, "kv_cache_per_position", "Part 14")
    rng = rng_for("p14_kv_cache")
    for _ in range(3):
        D = rng.choice([64, 96, 128, 512, 4096])
        r = rng.randint(3, 40)
        got = call(func, (D, r), f"kv_cache_per_position({D}, {r})")
        if type(got) not in (tuple, list) or len(got) != 2:
            fail("kv_cache_per_position must return (mha, mla)", "two numbers", repr(got)[:80])
        mha = integer(got[0], "MHA kv-cache per position")
        mla = integer(got[1], "MLA kv-cache per position")
        if mha != 2 * D:
            cause = "both k_l and v_l (D numbers each) are cached" if mha == D else None
            fail(f"MHA kv-cache per position (D={D})", 2 * D, mha, cause)
        if mla != r:
            cause = (
                "k_hat and v_hat are the same vector W^DKV y_l: it is cached once"
                if mla == 2 * r
                else None
            )
            fail(f"MLA kv-cache per position (D={D}, r={r})", r, mla, cause)
