"""Assignment 5 (attention_at_scale), what is its own: the shared tests are in
``test_assignments``; the claims of its model answers are checked here on numbers."""

import contextlib
import io
import json
import math
import os

import nbformat
import numpy as np
import pytest
import torch

from attncourse.cells import grade_id
from attncourse.cli import main
from attncourse.course import ROOT, notebook_path
from attncourse.grading.attention_at_scale import references as ref
from attncourse.preprocessors.pininstance import INSTANCE_CELL
from devtools.submissions import strip_markers

# one worker: the module's fixtures are built once (spread over workers, each built them)
pytestmark = pytest.mark.xdist_group("attention_at_scale_lab")

ASSIGNMENT = "attention_at_scale"
IDS = [f"s{i:05d}" for i in range(1000)]


def cells(kind="source"):
    """grade_id -> source of the notebook's code cells."""
    nb = nbformat.read(notebook_path(ROOT, kind, ASSIGNMENT), as_version=4)
    return {grade_id(c) or "": c.source for c in nb.cells if c.cell_type == "code"}


def markdown(gid):
    nb = nbformat.read(notebook_path(ROOT, "source", ASSIGNMENT), as_version=4)
    return next(c.source for c in nb.cells if grade_id(c) == gid)


def run(names, *gids, kind="source"):
    """Run the cells ``gids`` (answers without their markers) in ``names``, quietly."""
    code = cells(kind)
    with contextlib.redirect_stdout(io.StringIO()):
        for gid in gids:
            exec(strip_markers(code[gid]), names)
    return names


def test_the_provided_instance_cell_draws_the_judges_numbers():
    """The notebook's student_instance cell is the judge's scale_instance, run on the hub login."""
    for student in ("example", "alice", "s01234"):
        names = {"__name__": "__main__", "STUDENT_ID": ""}
        run(names, "setup_imports")
        provided = cells()[INSTANCE_CELL].replace(
            'os.environ.get("JUPYTERHUB_USER")', repr(student), 1
        )
        with contextlib.redirect_stdout(io.StringIO()):
            exec(provided, names)
        mine, theirs = names["mine"], ref.scale_instance(student)
        assert names["student"] == student
        assert {k: np.asarray(v).tolist() for k, v in mine.items()} == {
            k: np.asarray(v).tolist() for k, v in theirs.items()
        }


def test_every_instance_is_as_hard_as_every_other():
    """Five distinct scores, the largest overflowing float16, the second 1 or 2 below it, one
    shifted score underflowing float16, none within 1 of a threshold; ids differ."""
    thresholds = (ref.FP16_OVERFLOW, ref.BF16_OVERFLOW, ref.FP16_UNDERFLOW, ref.BF16_UNDERFLOW)
    drawn = set()
    for student in IDS:
        s = ref.scale_instance(student)["scores"]
        top, second = sorted(s)[-1], sorted(s)[-2]
        shifted = s - top
        assert len(set(s.tolist())) == 5 and top > ref.FP16_OVERFLOW and 1 <= top - second <= 2
        assert (shifted < ref.FP16_UNDERFLOW).any()
        assert min(abs(v - t) for v in (*s, *shifted) for t in thresholds) >= 1
        drawn.add(tuple(s.tolist()))
    assert len(drawn) > 990


def test_counts_by_hand_are_what_torch_computes_in_half_precision():
    """The thresholds of the text give the counts torch's float16 and bfloat16 exp give."""
    for student in IDS[:200]:
        s = torch.tensor(ref.scale_instance(student)["scores"], dtype=torch.float64)
        got = ref.own_answers(student)
        assert got["fp16_overflows"] == int(torch.isinf(torch.exp(s.half())).sum())
        assert got["bf16_overflows"] == int(torch.isinf(torch.exp(s.bfloat16())).sum())
        assert got["fp16_underflows"] == int((torch.exp((s - s.max()).half()) == 0).sum())
        assert got["bf16_underflows"] == int((torch.exp((s - s.max()).bfloat16()) == 0).sum())


def test_the_part_1_model_answer_quotes_the_example_instance():
    text = markdown("p1_why_max")
    s = ref.scale_instance("example")["scores"].tolist()
    answers = ref.own_answers("example")
    assert f"s = ({', '.join(map(str, s))})" in text and f"m = {max(s)}" in text
    assert f"{answers['lse_mine']:.3f}" in text
    assert ", ".join(str(v - max(s)) for v in s) in text  # the shifted exponents
    assert (answers["fp16_underflows"], answers["bf16_overflows"]) == (3, 2)
    assert "(here three of them)" in text


def test_instance_command_prints_the_students_numbers(capsys):
    with pytest.raises(SystemExit) as done:
        main(["instance", ASSIGNMENT, "--student", "alice"])
    assert done.value.code == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["answers"] == ref.own_answers("alice")


def test_merge_orders_differ_only_by_float32_rounding():
    """Part 2(c)'s model answer: the three orders agree with float64 to about 1e-7."""
    names = run({"__name__": "__main__"}, "setup_imports", "p2_merge_answer")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(cells()["p2_merge_orders"], names)
    numbers = [float(line.rsplit(" ", 1)[1]) for line in out.getvalue().splitlines()]
    assert len(numbers) == 4 and max(numbers) < 1e-6, out.getvalue()


@pytest.fixture(scope="module")
def lab():
    """The lab's functions with the solution's flash_forward, not yet run."""
    names = run({"__name__": "__main__"}, "setup_imports", "p3_tiles_answer")
    code = cells()["p4_lab"]
    exec(code[: code.index("grading = bool(")], names)
    names["lab_block"] = 128
    return names


def peak(lab, fn, L):
    Q, K, V = torch.randn(3, 1, 4, L, 64, generator=torch.Generator().manual_seed(L))
    with lab["PeakTensorBytes"]() as tracker:
        out = fn(Q, K, V)
    return tracker.peak, out


@pytest.mark.parametrize("L", [512, 1024])
def test_plain_attention_holds_two_score_matrices_the_tiled_one_a_few_blocks(lab, L):
    """Part 4(c)'s model answer: plain peak = two (B, H, L, L) float32 matrices plus the output;
    tiled peak = the output, lse and at most a few (B, H, 128, 128) blocks."""
    plain, out_plain = peak(lab, lab["plain_attention"], L)
    tiled, out_tiled = peak(lab, lab["tiled_attention"], L)
    scores, output, block = 2 * 4 * L * L * 4, 4 * L * 64 * 4, 4 * 128 * 128 * 4
    assert scores <= plain <= scores + 2 * output
    assert output + 4 * L * 4 <= tiled <= output + 4 * L * 4 + 6 * block
    assert torch.allclose(out_plain, out_tiled, atol=1e-5)


def test_peak_memory_grows_four_times_per_doubling_for_plain_and_less_than_twice_for_tiled(lab):
    plain = [peak(lab, lab["plain_attention"], L)[0] for L in (512, 1024)]
    tiled = [peak(lab, lab["tiled_attention"], L)[0] for L in (512, 1024)]
    assert 3.8 < plain[1] / plain[0] < 4.1
    assert 1.0 < tiled[1] / tiled[0] < 2.0


def test_the_numbers_the_lab_answer_derives():
    """537 MB for two 4096^2 matrices of 4 heads, 4.2 MB of output, 262 KB a block, 17 GFLOP."""
    text = markdown("p4_lab_interpretation")
    assert round(2 * 4 * 4096**2 * 4 / 1e6) == 537 and "537" in text
    assert round(4096 * 64 * 4 * 4 / 1e6, 1) == 4.2 and "4.2 MB" in text
    assert round(4 * 128 * 128 * 4 / 1e3) == 262 and "262 KB" in text
    assert round(4 * 4 * 4096**2 * 64 / 1e9) == 17 and "= 17$ GFLOP" in text
    assert round(4 * 4096 * 4 / 1e3) == 66 and "66 KB" in text


def test_lab_makes_one_quick_pass_while_grading(monkeypatch):
    """Under nbgrader (``NBGRADER_EXECUTION`` set) the lab runs two small lengths once each."""
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    names = run({"__name__": "__main__"}, "setup_imports", "p3_tiles_answer")
    with contextlib.redirect_stdout(io.StringIO()):
        exec(cells()["p4_lab"], names)
    assert names["lab_lengths"] == [128, 256] and names["lab_rounds"] == 1
    assert all(len(v) == 2 for v in names["seconds"].values())
    assert torch.get_num_threads() == names["_threads"]
    assert os.environ["NBGRADER_EXECUTION"] == "autograde"


def test_io_counts_of_the_text():
    """Part 4's counts: standard 4Nd + 4N^2; tiled Theta(N^2 d^2 / M) with B = M / 4d."""
    N, d, M = 8192, 64, 49152
    B = ref.block_rows(M, d)
    assert ref.standard_io(N, d) == 4 * N * d + 4 * N * N
    assert ref.tiled_io(N, d, B) == 2 * N * d + 2 * N * d * math.ceil(N / B) + N
    assert abs(ref.tiled_io(N, d, B) / (8 * N**2 * d**2 / M) - 1) < 0.05  # ceil, Q, O, lse
