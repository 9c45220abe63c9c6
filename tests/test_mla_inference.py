"""Assignment 4 (mla_inference), what is its own: the shared tests are in ``test_assignments``."""

from casetable import calls, kernel_requests, load, run_in_process, solution_namespace

from attncourse.judge import verdict

ASSIGNMENT = "mla_inference"


def test_rope_rule_check_runs_the_answer():
    """The rope's rule check has no random input, yet calls the answer before reading its source."""
    ns, sources = solution_namespace(ASSIGNMENT)
    checks = verdict.checks_of(ASSIGNMENT)
    for test in sorted(load(ASSIGNMENT).fixed_inputs):
        assert calls(kernel_requests(checks[test], ns, sources, "secret-a")), test


def test_a_rope_that_is_no_rotation_costs_the_later_parts_too():
    """Carrying rope forward is for rotations: one that scales vectors is not trusted."""
    cos_only = (
        "def rope(x, positions, base=10000.0):\n"
        "    d = x.shape[-1]\n"
        "    i = torch.arange(d // 2, dtype=torch.float64)\n"
        "    angle = positions.to(torch.float64)[..., None] * base ** (-2 * i / d)\n"
        "    return x * angle.cos().repeat_interleave(2, -1).to(x.dtype)\n"
    )
    tests = set(load(ASSIGNMENT).tests)
    results = run_in_process(ASSIGNMENT, {"p1_rope_answer": cos_only}, tests)
    assert set(results) == tests
    failed = {test for test, message in results.items() if message is not None}
    assert {"p1_rope", "p2_mla_forward", "p3_decode_forward", "p3_latent_query"} <= failed
