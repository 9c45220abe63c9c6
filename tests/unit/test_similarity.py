"""``attncourse similarity``: disguised copies flagged, independent answers not, the release's
text never counted, the page escaped, the CSV as specified, the output the same every run.

No kernel starts: the notebooks are only read. The calibration (``similarity_calibration``)
is measured again here on every assignment's case table.
"""

import csv
import html
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from disguise import DISGUISES, disguise
from similarity_calibration import independent_answers, rates, release, required_names
from similarity_classes import before, measure, pool_answers
from similarity_pool import POOL

from attncourse.cells import grade_id, is_answer
from attncourse.cli import main
from attncourse.course import ASSIGNMENTS, ROOT, notebook_path
from attncourse.report.collect import ClassReport
from attncourse.report.model import AssignmentReport
from attncourse.report.page import render
from attncourse.similarity.compare import CODE_MIN_SHARED, Release, compare, flagged, score
from attncourse.similarity.fingerprint import code_tokens, text_tokens, winnow
from attncourse.similarity.page import COLUMNS, similarity_report
from attncourse.similarity.rarity import COMMON_MIN, weight
from devtools.submissions import fill, solution_answers, write_submission

ASSIGNMENT = "attention_variants"
SOLUTION = solution_answers(nbformat.read(notebook_path(ROOT, "source", ASSIGNMENT), as_version=4))
ALTERNATIVES = dict(independent_answers(ASSIGNMENT)["p5_mha"])
RELEASE = release(ASSIGNMENT)
STUBS = {grade_id(c): c.source for c in RELEASE.cells if is_answer(c)}


def _verdict(a, b, kind="code"):
    base = Release(RELEASE)
    value, rare, shared = score(base.answer(a, kind), base.answer(b, kind))
    return flagged(kind, value, rare, shared), value


def _texts(tokens):
    return [t.text for t in tokens]


# ------------------------------------------------------------------ normalisation


@pytest.mark.parametrize("how", ["rename", "comments_literals", "reorder", "reformat"])
def test_what_copying_hides_leaves_the_same_tokens(how):
    source = SOLUTION["p7_gqa"]
    copy = disguise(source, how, required_names(STUBS["p7_gqa"]))
    assert copy != source
    assert _texts(code_tokens(copy)) == _texts(code_tokens(source))


def test_dead_branches_and_docstrings_are_left_out():
    plain = "def f(x):\n    y = x + 1\n    return y\n"
    padded = (
        'def f(x):\n    """Adds one."""\n    if False:\n        print(x)\n    pass\n'
        "    y = x + 1\n    return y\n"
    )
    assert _texts(code_tokens(padded)) == _texts(code_tokens(plain))


def test_modules_builtins_attributes_and_keywords_stay_other_names_go():
    tokens = _texts(code_tokens("a = torch.softmax(len(x), dim=-1)", frozenset({"torch"})))
    assert tokens == "V = torch . softmax ( len ( V ) , dim = - N )".split()


def test_a_cell_that_does_not_parse_is_still_compared():
    assert _texts(code_tokens("x = (1,\n%time y = 2")) == ["V", "=", "(", "N", ","]


def test_written_answers_are_compared_as_words():
    assert _texts(text_tokens("**The** rank, *is* $r$.")) == ["the", "rank", "is", "r"]


def test_winnowing_keeps_the_smallest_hash_of_every_window():
    grams = [(h, i, i) for i, h in enumerate([5, 3, 9, 3, 7, 1, 8])]
    assert [g[0] for g in winnow(grams, 3)] == [3, 3, 1]


# ------------------------------------------------------------------ decisions


@pytest.mark.parametrize("how", [*DISGUISES, "all"])
def test_a_disguised_copy_is_flagged(how):
    source = SOLUTION["p5_mha"]
    copy = disguise(source, how, required_names(STUBS["p5_mha"]))
    assert _verdict(source, copy)[0]


def test_independent_correct_alternatives_are_not_flagged():
    """The closest independent pair of the calibration (0.544): same projections and head
    split, which the task dictates, and their own attention."""
    a, b = ALTERNATIVES["p5:p5_einsum"], ALTERNATIVES["p5:p5_per_head_weight_views"]
    verdict, value = _verdict(a, b)
    assert 0.4 < value < 0.6 and not verdict


def test_the_release_text_does_not_count():
    """A student who left the stub as it was has nothing of their own; two who pasted the
    instructor's visible code into their answer share only the few k-grams across the seam."""
    base = Release(RELEASE)
    assert base.answer(STUBS["p5_mha"]).prints == {}
    for cell in RELEASE.cells:
        if cell.cell_type == "code" and not is_answer(cell) and len(cell.source) > 300:
            pasted = STUBS["p5_mha"] + "\n" + cell.source
            assert len(base.answer(pasted).prints) < CODE_MIN_SHARED
            assert not _verdict(pasted, pasted)[0]
    question = next(c.source for c in RELEASE.cells if c.cell_type == "markdown")
    assert base.answer(question, "markdown").prints == {}


def test_what_reaches_into_the_stubs_lines_does_not_count():
    """Every student keeps ``super().__init__()`` and ``def forward(self, x, y):``: the
    k-grams joining them to the student's own first line are the release's, not evidence."""
    a = STUBS["p5_mha"].replace("raise NotImplementedError()", "self.total = 0", 1)
    b = STUBS["p5_mha"].replace("raise NotImplementedError()", "self.count = 1", 1)
    seams = Release(RELEASE, seams=True)
    assert seams.answer(a).prints.keys() & seams.answer(b).prints.keys()
    assert Release(RELEASE).answer(a).prints == {}


def test_a_copied_written_answer_is_flagged_and_a_different_one_is_not():
    text = SOLUTION["p9_proof"]
    reflowed = text.upper().replace(",", " ").replace("\n", " ")
    assert _verdict(text, reflowed, "markdown")[0]
    assert not _verdict(text, SOLUTION["p12_derivation"], "markdown")[0]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_calibration_holds(assignment):
    """The rates compare.py quotes: under 1% of independent pairs flagged, 90% of disguised
    copies of answers long enough to tell apart, every copied written answer."""
    measured = rates(assignment)
    assert measured["false positives"] <= 0.01 * measured["independent pairs"] + 1
    found, copies = measured["all detected (long answers)"]
    assert found >= 0.9 * copies
    assert measured["written: false positives"] == 0
    for how in ("reflow", "reorder", "reword", "all"):
        found, copies = measured[f"written: {how} detected"]
        assert found == copies


# ------------------------------------------------------------------ what the class shares


def test_a_fingerprint_counts_less_the_more_students_wrote_it():
    """A pair's passage counts fully, a common one not at all, between them less and less."""
    assert weight(1, 200) == weight(2, 200) == 1.0
    assert weight(2, 2) == 1.0  # a class of two: nothing is discounted
    falling = [weight(n, 200) for n in range(2, 22)]
    assert falling == sorted(falling, reverse=True) and 0 < falling[5] < 1
    assert weight(20, 200) == weight(COMMON_MIN, 5) == 0.0


def _class(part, answers):
    """{student: {part: Answer}} for ``answers`` ({student: source}) to ``part``."""
    base = Release(RELEASE)
    return {student: {part: base.answer(text)} for student, text in answers.items()}


def _flags(part, answers):
    return {(m.student_a, m.student_b): m for m in compare(_class(part, answers), [part])}


@pytest.mark.parametrize(
    "part, a, b",
    [("p5_mha", "ines", "priya"), ("p13_reduced_matrices", "oskar", "quinn")],
)
def test_independent_answers_sharing_the_skeleton_and_an_idiom_are_not_flagged(part, a, b):
    """In the held-out class, two students who wrote the task's four nn.Linear and the same
    einsum (or the same batched product) apart: flagged before the discounts, not after."""
    answers = pool_answers()[part]
    base = Release(RELEASE)
    assert before(*score(base.answer(answers[a]), base.answer(answers[b])))
    match = _flags(part, answers)[(a, b)]
    assert not match.flagged and match.rare < match.shared


@pytest.mark.parametrize("part", sorted(POOL))
def test_a_disguised_copy_in_the_class_is_flagged_and_nobody_else(part):
    answers = pool_answers()[part]
    copy = disguise(answers["ines"], "all", required_names(STUBS[part]))
    flags = _flags(part, {**answers, "zoe": copy})
    assert flags[("ines", "zoe")].flagged
    assert not any(m.flagged for pair, m in flags.items() if "zoe" not in pair)


def test_a_copy_in_a_class_of_two_is_flagged():
    """Nothing is common where only the two students are: every fingerprint counts."""
    answers = pool_answers()["p7_gqa"]
    copy = disguise(answers["nadia"], "all", required_names(STUBS["p7_gqa"]))
    assert _flags("p7_gqa", {"nadia": answers["nadia"], "zoe": copy})[("nadia", "zoe")].flagged


def test_the_class_calibration_holds():
    """The rates compare.py quotes (tests/helpers/similarity_classes.py): classes of five, the pool,
    and 200 simulated students on the pool's idioms with 20 disguised copies."""
    counts = measure()
    five, pool, large = counts["five"], counts["pool"], counts["large"]
    assert five.false_positives <= 0.01 * five.pairs
    assert five.detected >= 0.99 * five.copies
    assert pool.false_positives <= 0.01 * pool.pairs and pool.detected >= 0.9 * pool.copies
    assert large.false_positives <= 0.001 * large.pairs
    assert large.distinct_detected >= 0.9 * large.distinct >= 0.9 * 25


@pytest.mark.parametrize("part, student", [(p, s) for p in sorted(POOL) for s in POOL[p]])
def test_the_held_out_answers_are_correct(part, student):
    """Each pool answer does what the task asks (a per-head loop in float64 is the reference),
    so the calibration measures real answers."""
    import contextlib
    import io

    import numpy as np
    import torch
    from torch import nn

    scope = {"torch": torch, "nn": nn, "np": np}
    exec(POOL[part][student], scope)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 5, 6, generator=gen, dtype=torch.float64)
    y = torch.randn(2, 7, 9, generator=gen, dtype=torch.float64)
    if part in ("p5_mha", "p7_gqa"):
        G = 2 if part == "p7_gqa" else 6
        args = (6, 9, 3, 4, 6) + ((G,) if part == "p7_gqa" else ())
        m = scope["MyGQA" if part == "p7_gqa" else "MyMHA"](*args).double()
        q, k, v = m.W_Q(x), m.W_K(y), m.W_V(y)
        heads = [
            torch.softmax(
                q[..., 3 * h : 3 * h + 3] @ k[..., 3 * (h % G) : 3 * (h % G) + 3].mT / 3**0.5, -1
            )
            @ v[..., 4 * (h % G) : 4 * (h % G) + 4]
            for h in range(6)
        ]
        assert torch.allclose(m(x, y), m.W_O(torch.cat(heads, -1)))
    elif part == "p10_gqa_2_mla":
        W = np.random.default_rng(0).standard_normal((3, 12))
        with contextlib.redirect_stdout(io.StringIO()):
            dkv, um = scope["GQA_2_MLA"](W)
        assert dkv.shape == (3, 12) and np.allclose(um @ dkv, np.vstack([W] * 4))
    else:
        r, H, d = 3, 2, 4
        W = [
            torch.randn(*s, generator=gen, dtype=torch.float64)
            for s in [(r, 8), (8, r), (8, r), (8, 8), (8, 8)]
        ]
        k_hat, v_hat, q_hat, o_hat = scope["reduced_matrices"](*W, H)
        for h in range(H):
            rows, cols = slice(h * r, h * r + r), slice(h * d, h * d + d)
            assert torch.allclose(
                q_hat[rows].mT @ k_hat / r**0.5, W[3][cols].mT @ W[1][cols] @ W[0] / d**0.5
            )
            assert torch.allclose(o_hat[:, rows] @ v_hat, W[4][:, cols] @ W[2][cols] @ W[0])


# ------------------------------------------------------------------ the command

HOSTILE = '</pre><script>alert("x")</script><img src=x onerror=alert(1)>'


@pytest.fixture
def class_dir(tmp_path):
    """A course with the release and four submissions: ana's, bo's disguised copy of it with
    a script in a comment, cy's own answer, and a damaged notebook."""
    (tmp_path / "release" / ASSIGNMENT).mkdir(parents=True)
    nbformat.write(RELEASE, tmp_path / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    own = SOLUTION["p5_mha"] + f"\n# {HOSTILE}\n"
    copy = disguise(SOLUTION["p5_mha"], "all", required_names(STUBS["p5_mha"]))
    copy += f"\n# {HOSTILE}\n"
    students = {
        "ana": {"p5_mha": own, "p9_proof": SOLUTION["p9_proof"] + HOSTILE},
        "bo<b>": {"p5_mha": copy, "p9_proof": SOLUTION["p9_proof"].upper()},
        "cy": {"p5_mha": ALTERNATIVES["p5:p5_einsum"]},
    }
    for student, answers in students.items():
        write_submission(tmp_path, student, ASSIGNMENT, fill(RELEASE, answers))
    write_submission(tmp_path, "dan", ASSIGNMENT, "{not a notebook")
    return tmp_path


def _rows(course):
    with open(course / "reports" / f"similarity_{ASSIGNMENT}.csv", newline="") as f:
        return list(csv.reader(f))


def test_the_csv_has_the_columns_and_a_row_per_pair_and_part_sharing_anything(class_dir):
    similarity_report(class_dir, ASSIGNMENT)
    header, *rows = _rows(class_dir)
    assert tuple(header) == COLUMNS
    flags = {(a, b, part): f for a, b, part, _, f in rows}
    assert flags[("ana", "bo<b>", "p5_mha")] == "1"
    assert flags[("ana", "bo<b>", "p9_proof")] == "1"
    assert flags.get(("ana", "cy", "p5_mha"), "0") == "0"
    assert all(0 < float(value) <= 1 for *_, value, _ in rows)
    assert not any("dan" in row[:2] for row in rows)


def test_the_page_escapes_what_students_wrote(class_dir):
    _, page, count = similarity_report(class_dir, ASSIGNMENT)
    text = page.read_text()
    assert count == 2
    assert "<script" not in text and "<img" not in text and "<b>" not in text
    assert "&lt;script&gt;" in text and "bo&lt;b&gt;" in text
    assert "default-src 'none'" in text
    assert "dan/attention_variants.ipynb: unreadable" in text
    assert "<mark>" in text


def test_the_output_is_the_same_on_every_run(class_dir):
    """Byte for byte, whatever Python's string hashing seed: this process's (random) and
    a command's without hash randomisation."""
    reports = Path(class_dir) / "reports"
    similarity_report(class_dir, ASSIGNMENT)
    here = [p.read_bytes() for p in sorted(reports.iterdir())]
    subprocess.run(
        [str(Path(sys.executable).with_name("attncourse")), "similarity", ASSIGNMENT],
        cwd=class_dir,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        check=True,
        capture_output=True,
    )
    assert [p.read_bytes() for p in sorted(reports.iterdir())] == here


def test_the_command_line_writes_both_files(class_dir, capsys):
    with pytest.raises(SystemExit) as done:
        main(["similarity", ASSIGNMENT, "--course", str(class_dir)])
    assert done.value.code == 0
    assert "2 answers flagged" in capsys.readouterr().out
    assert (class_dir / "reports" / f"similarity_{ASSIGNMENT}.html").exists()


def test_the_main_report_links_the_similarity_page():
    course = ClassReport([AssignmentReport(ASSIGNMENT, 10.0)], {})
    assert f'href="similarity_{ASSIGNMENT}.html"' in render(course, similarity=(ASSIGNMENT,))
    assert "similarity_" not in render(course)


def test_code_moved_into_a_cell_the_student_added_is_compared(tmp_path):
    """A copy split between the answer cell and a new cell below it is still the copy."""
    (tmp_path / "release" / ASSIGNMENT).mkdir(parents=True)
    nbformat.write(RELEASE, tmp_path / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    write_submission(tmp_path, "ana", ASSIGNMENT, fill(RELEASE, {"p5_mha": SOLUTION["p5_mha"]}))
    moved = fill(RELEASE, {"p5_mha": "mha = None"})
    at = next(i for i, c in enumerate(moved.cells) if grade_id(c) == "p5_mha")
    moved.cells.insert(at + 1, nbformat.v4.new_code_cell(disguise(SOLUTION["p5_mha"], "all")))
    write_submission(tmp_path, "bo", ASSIGNMENT, moved)
    similarity_report(tmp_path, ASSIGNMENT)
    assert ["ana", "bo", "p5_mha"] in [row[:3] for row in _rows(tmp_path) if row[4] == "1"]


def test_an_assignment_without_a_release_is_an_error_that_says_so(tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        main(["similarity", ASSIGNMENT, "--course", str(tmp_path)])
    assert done.value.code == 2
    assert f"no assignment {ASSIGNMENT!r} in this course" in capsys.readouterr().err


def test_the_page_says_what_was_discounted_and_greys_what_the_class_shares(tmp_path):
    """The held-out class and a disguised copy of ines: the page explains the discounts, and
    the four nn.Linear lines everyone wrote are greyed, not marked, in the flagged pair."""
    (tmp_path / "release" / ASSIGNMENT).mkdir(parents=True)
    nbformat.write(RELEASE, tmp_path / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    answers = pool_answers()["p5_mha"]
    answers["zoe"] = disguise(answers["ines"], "all", required_names(STUBS["p5_mha"]))
    for student, text in answers.items():
        write_submission(tmp_path, student, ASSIGNMENT, fill(RELEASE, {"p5_mha": text}))
    _, page, count = similarity_report(tmp_path, ASSIGNMENT)
    text = page.read_text()
    assert count == 1 and "ines and zoe" in text
    assert "what many classmates wrote alike" in text and "the release" in text
    linear = html.escape("        self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)")
    assert f'<mark class="common">{linear}</mark>' in text
    assert f"<mark>{linear}</mark>" not in text
    assert "<mark>" in text
