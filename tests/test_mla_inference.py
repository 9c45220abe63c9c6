"""Assignment 4 (mla_inference): every correct alternative earns its part, every named mistake loses it.

The fast tests run each case of ``cases_mla_inference`` in this process: the solution's
cells with the case's answers run in a dict namespace, and at every test cell of the
notebook the judge runs the check of ``attncourse.grading.mla_inference.CHECKS`` through
the same request/reply encoding a kernel uses, under a fresh secret. A case must fail
exactly the tests it names, anywhere in the notebook, which is what lets the slow test
pack case k of every group into submission k and autograde the whole table with the
real ``nbgrader autograde`` in one run.
"""

import contextlib
import io

import nbformat
import pytest
from cases_mla_inference import ASSIGNMENT, CASES, GROUPS
from casetable import (
    DISPLAY_ONLY,
    assert_packed_scores,
    assert_table_size,
    autograde_table,
    run_in_process,
)
from cellrun import run_cell

from attncourse.cells import grade_id, is_answer, is_test_cell, student_sources
from attncourse.course import ROOT, notebook_path
from attncourse.grading import mla_inference
from attncourse.judge import verdict
from attncourse.judge.channel import LocalChannel
from attncourse.judge.remote import Session, StudentNamespace
from attncourse.submissions import solution_submission

# This notebook's display-only cells: the course's plots, the position demo and the timing lab
# (seconds of timing) only draw or print, and no check reads them. Added here until
# casetable.DISPLAY_ONLY lists them with the other assignments' ones.
DISPLAY_ONLY.update({"p1_merged_demo", "p4_cache_plot", "p5_timing_lab", "p5_timing_plot"})

SOURCE = nbformat.read(notebook_path(ROOT, "source", ASSIGNMENT), as_version=4)
TESTS = [grade_id(cell) for cell in SOURCE.cells if is_test_cell(cell)]
CODING_ANSWERS = [grade_id(c) for c in SOURCE.cells if c.cell_type == "code" and is_answer(c)]


def solution_namespace(answers=None):
    """(globals, the student's sources) of the solution with ``answers``, its cells run here."""
    nb = solution_submission(ROOT, ASSIGNMENT, answers or {})
    ns = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for cell in nb.cells:
            if cell.cell_type == "code" and not is_test_cell(cell):
                if grade_id(cell) not in DISPLAY_ONLY:
                    with contextlib.suppress(Exception):
                        run_cell(cell.source, ns)
    return ns, student_sources(nb)


def failures(answers, secret=None):
    """{test: failure message} of every test cell of the notebook for the solution with ``answers``."""
    results = run_in_process(ASSIGNMENT, answers, set(TESTS), secret)
    assert set(results) == set(TESTS), f"test cells did not run: {set(TESTS) - set(results)}"
    return {test: message for test, message in results.items() if message is not None}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_case_is_classified_in_process(case):
    failed = failures(case.answers)
    missed = set(case.fails) - set(failed)
    extra = {t: m for t, m in failed.items() if t not in case.fails}
    assert not missed, f"{case.id}: {sorted(missed)} should fail but passed"
    assert not extra, f"{case.id}: these should pass but failed:\n{extra}"


def test_every_coding_answer_has_four_correct_and_eight_wrong_cases():
    assert_table_size(CASES, lambda group: group)
    for cell in CODING_ANSWERS:
        cases = [c for c in CASES if cell in c.answers]
        right = sum(c.correct for c in cases)
        wrong = len(cases) - right
        assert right >= 4 and wrong >= 8, (cell, right, wrong)


def test_packing_hides_no_verdict():
    """A case that fails another group's tests shares its submission only with a case of that
    group that fails them too, so the slow run still shows every case's own verdicts."""
    by_group = {g: [c for c in CASES if c.group == g] for g in GROUPS}
    for k in range(max(len(cases) for cases in by_group.values())):
        row = [cases[k] for cases in by_group.values() if k < len(cases)]
        for case in row:
            for other in row:
                hidden = set(other.fails) & set(GROUPS[case.group][1]) - set(case.fails)
                assert not hidden, f"{other.id} hides {sorted(hidden)} of {case.id}"


def test_case_names_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_checks_are_exactly_the_test_cells_of_the_source_notebook():
    assert len(TESTS) == len(set(TESTS)), f"duplicate test cell ids: {TESTS}"
    assert set(mla_inference.CHECKS) == set(TESTS), (
        f"checks without a test cell: {set(mla_inference.CHECKS) - set(TESTS)}; "
        f"test cells without a check: {set(TESTS) - set(mla_inference.CHECKS)}"
    )
    grouped = [test for _, tests in GROUPS.values() for test in tests]
    assert sorted(grouped) == sorted(TESTS), "the case table's groups cover every test cell"
    answered = [cell for cells, _ in GROUPS.values() for cell in cells]
    assert sorted(answered) == sorted(CODING_ANSWERS), "every coding answer is in one group"


def test_release_stubs_earn_no_autograded_point_in_process():
    release = nbformat.read(notebook_path(ROOT, "release", ASSIGNMENT), as_version=4)
    stubs = {grade_id(c): c.source for c in release.cells if is_answer(c) and c.cell_type == "code"}
    assert set(failures(stubs)) == set(TESTS)


def test_checks_draw_every_input_from_the_secret():
    """The same secret sends the kernel the same requests; another secret, other inputs."""
    ns, sources = solution_namespace()

    def requests(check, secret):
        channel = LocalChannel(ns)
        sent = []
        serve = channel.send

        def send(text):
            sent.append(text)
            return serve(text)

        channel.send = send
        student = StudentNamespace(Session(channel), sources)
        with contextlib.redirect_stdout(io.StringIO()):
            assert verdict.run_check(check, student, secret) is None
        return sent

    for test, check in mla_inference.CHECKS.items():
        first = requests(check, "secret-a")
        assert any('"op": "call"' in text for text in first), f"{test} calls nothing"
        assert requests(check, "secret-a") == first, f"{test}: same secret, other inputs"
        if test not in ("p1_rope_rules", "p2_mla_rules", "p3_decode_rules"):
            assert requests(check, "secret-b") != first, f"{test}: inputs ignore the secret"


MESSAGES = {
    "rope:rotate_half_pairing": ("p1_rope", "rotate-half pairing"),
    "rope:angles_in_float32": ("p1_rope", "angles computed in float32"),
    "rope:loop_over_pairs": ("p1_rope_rules", "a for loop"),
    "merged:positions_swapped": ("p1_merged_score_matrix", "positions swapped"),
    "mla:no_causal_mask": ("p2_mla_forward", "no causal mask"),
    "mla:scaled_by_sqrt_d_h": ("p2_mla_forward", "1/sqrt(d_h) only"),
    "mla:rope_on_the_content_part": ("p2_mla_forward", "RoPE applied to the content part"),
    "mla:mask_hides_the_token_itself": ("p2_mla_forward", "itself included"),
    "mla:rotary_key_per_head": ("p2_mla_attributes", "shared by all heads"),
    "mla:fused_attention": ("p2_mla_rules", "build the attention by hand"),
    "decode:latent_query_absorbs_W_UV": ("p3_latent_query", "W_UV absorbed into the query"),
    "decode:latent_query_not_absorbed": ("p3_latent_query", "absorb W_UK"),
    "decode:latent_query_scaled": ("p3_latent_query", "unscaled"),
    "decode:decode_caches_the_values_too": ("p3_decode_cache", "more than c and k_rope"),
    "decode:decode_caches_k_rope_unrotated": ("p3_decode_cache", "cached before rotation"),
    "decode:decode_attends_before_appending": ("p3_decode_forward", "does not attend to itself"),
    "decode:decode_new_key_rotated_at_t_plus_1": ("p3_decode_forward", "one position apart"),
    "decode:decode_positions_counted_from_1": ("p3_decode_forward", "counted from 1"),
    "decode:decode_rebuilds_the_keys": ("p3_decode_rules", "rebuilding keys"),
    "decode:decode_without_latent_query": ("p3_decode_rules", "from latent_query"),
    "decode:decode_loop_over_heads": ("p3_decode_rules", "a list comprehension"),
    "cache:mla_latent_only": ("p4_cache_elements", "rotary key is missing"),
    "cache:gqa_ignores_G": ("p4_cache_elements", "G ignored"),
}


def test_failure_messages_name_the_mistake():
    by_id = {c.id: c for c in CASES}
    for case_id, (test, words) in MESSAGES.items():
        message = failures(by_id[case_id].answers).get(test) or ""
        assert words in message, (case_id, test, message)


def test_a_rope_that_is_no_rotation_costs_the_later_parts_too():
    """Carrying rope forward is for rotations: one that scales vectors is not trusted."""
    cos_only = (
        "def rope(x, positions, base=10000.0):\n"
        "    d = x.shape[-1]\n"
        "    i = torch.arange(d // 2, dtype=torch.float64)\n"
        "    angle = positions.to(torch.float64)[..., None] * base ** (-2 * i / d)\n"
        "    return x * angle.cos().repeat_interleave(2, -1).to(x.dtype)\n"
    )
    failed = failures({"p1_rope_answer": cos_only})
    assert {"p1_rope", "p2_mla_forward", "p3_decode_forward", "p3_latent_query"} <= set(failed)


@pytest.fixture(scope="module")
def autograded_table(tmp_path_factory):
    return autograde_table(
        tmp_path_factory.mktemp(ASSIGNMENT) / "course", ASSIGNMENT, CASES, GROUPS
    )


@pytest.mark.slow
@pytest.mark.xdist_group(ASSIGNMENT)
def test_nbgrader_classifies_every_case(autograded_table):
    packed, scores = autograded_table
    assert_packed_scores(packed, scores, GROUPS)
