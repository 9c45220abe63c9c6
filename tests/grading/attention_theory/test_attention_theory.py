"""Assignment 2 (attention_theory), what is its own: the shared tests are in ``test_assignments``."""

from casetable import run_in_process

ASSIGNMENT = "attention_theory"
SCALED = (
    "def attention(Q, K, V):\n"
    "    A = torch.softmax(Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5, -1)\n"
    "    return A @ V, A\n"
)
ALONG = "def weights_along(K, u, betas):\n    Q = betas[:, None] * u\n{}"
OWN = ALONG.format("    _, A = attention(Q[None], K[None], K[None])\n    return A[0]\n")
BETAS_IGNORED = ALONG.format(
    "    _, A = attention(u[None, None].expand(1, len(betas), -1), K[None], K[None])\n    return A[0]\n"
)
TESTS = {"lab_attention", "lab_sharpen_weights"}


def test_a_wrong_attention_costs_lab_1_only_where_lab_b_builds_on_it():
    """weights_along built on the student's own (scaled) attention: Lab 1 fails, Lab (b) is
    compared with the weights of that attention and keeps its points."""
    verdicts = run_in_process(
        ASSIGNMENT, {"lab_attention_answer": SCALED, "lab_sharpen_answer": OWN}, TESTS
    )
    assert verdicts["lab_attention"] is not None and verdicts["lab_sharpen_weights"] is None


def test_lab_b_built_on_attention_still_fails_its_own_mistake():
    """The controls: a mistake of (b) itself fails, with a correct attention or a wrong one."""
    right = run_in_process(ASSIGNMENT, {"lab_sharpen_answer": BETAS_IGNORED}, TESTS)
    assert "betas ignored" in right["lab_sharpen_weights"]
    answers = {"lab_attention_answer": SCALED, "lab_sharpen_answer": BETAS_IGNORED}
    wrong = run_in_process(ASSIGNMENT, answers, TESTS)
    assert "your attention of Lab 1" in wrong["lab_sharpen_weights"]
