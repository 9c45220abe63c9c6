"""What the text of ``attention_variants`` claims, checked numerically beside the claim.

Part 9: GQA is an MLA with r = G d when keys and values are factored separately; one
down-projection shared by both (the MLA the text defines) needs r = 2 G d in general. Part 11:
r = G d is per projection matrix; per cached position a GQA holds 2 G d numbers. Part 10: the
print order (the product's) and the return order (down-projection first). Part 7: the copies
not to store are weights. And no Markdown or LaTeX of the notebook holds a control character
(a tab that ate the ``\\t`` of ``\\times``).
"""

import contextlib
import io
import re

import nbformat
import numpy as np
import pytest
import torch
from casetable import load, solution_namespace

from attncourse.cells import grade_id
from attncourse.course import ROOT, notebook_path

ASSIGNMENT = "attention_variants"
D, d, G, H = 24, 3, 2, 8  # H = D/d query heads, G key/value heads


def text(kind, gid):
    nb = nbformat.read(notebook_path(ROOT, kind, ASSIGNMENT), as_version=4)
    return next(c.source for c in nb.cells if grade_id(c) == gid)


def gqa_projections(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((G * d, D)), rng.standard_normal((G * d, D))  # W^K, W^V (Gd, D)


def tiled(W):
    return np.tile(W, (H // G, 1))  # (D, D): H/G copies


def test_separate_factorisations_need_rank_G_d_each():
    for W in gqa_projections():
        assert np.linalg.matrix_rank(tiled(W)) == G * d


def test_a_shared_down_projection_needs_rank_2_G_d():
    """W~K = U_K W^DKV and W~V = U_V W^DKV put both row spaces inside W^DKV's: r >= 2 G d."""
    W_K, W_V = gqa_projections()
    assert np.linalg.matrix_rank(np.vstack([tiled(W_K), tiled(W_V)])) == 2 * G * d
    W_DKV = np.vstack([W_K, W_V])  # (2Gd, D): the text's example
    eye, Z = np.eye(G * d), np.zeros((G * d, G * d))
    W_UK, W_UV = (
        np.tile(np.hstack([eye, Z]), (H // G, 1)),
        np.tile(np.hstack([Z, eye]), (H // G, 1)),
    )
    assert np.allclose(W_UK @ W_DKV, tiled(W_K)) and np.allclose(W_UV @ W_DKV, tiled(W_V))
    # the best shared rank-Gd down-projection (the top right singular vectors) leaves an error
    _, _, Vt = np.linalg.svd(np.vstack([tiled(W_K), tiled(W_V)]))
    P = Vt[: G * d].T @ Vt[: G * d]  # projection onto the best Gd-dimensional row space
    assert np.linalg.norm(tiled(W_K) - tiled(W_K) @ P) > 0.1 * np.linalg.norm(tiled(W_K))


def test_the_text_and_the_model_answer_say_2_G_d():
    for kind in ("source", "release"):
        assert "r = 2 G d" in text(kind, "p9_question")
    assert "2Gd" in text("source", "p9_proof")


def test_a_gqa_caches_2_G_d_numbers_per_position_and_r_G_d_is_per_projection():
    ns, _ = solution_namespace(ASSIGNMENT)
    model = ns["MyGQA"](D, D, d, d, H, G)
    y = torch.randn(1, 1, D)  # one position
    assert model.W_K(y).numel() + model.W_V(y).numel() == 2 * G * d
    assert model.W_K.weight.shape[0] == G * d == model.W_V.weight.shape[0]
    for kind in ("source", "release"):
        assert "per projection matrix" in text(kind, "p11_question")
        assert "$2 G d$ numbers per position" in text(kind, "p11_question")
    assert "per-position" not in text("source", "p11_explanation")


def test_part_10_prints_in_the_products_order_and_returns_the_down_projection_first():
    ns, _ = solution_namespace(ASSIGNMENT)
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        dkv, um = ns["GQA_2_MLA"](np.random.default_rng(1).standard_normal((2, 6)))
    assert dkv.shape == (2, 6) and um.shape == (6, 2)
    out = printed.getvalue()
    assert out.index(str(um.shape)) < out.index(str(dkv.shape))
    question = text("release", "p10_question")
    assert "return the tuple `(W_DKV_MLA, W_UM_MLA)`: the down-projection first" in question
    assert "first the shape of `W_UM_MLA`, then the shape of `W_DKV_MLA`" in question


def test_part_7_forbids_copies_of_weights_not_of_activations():
    question = text("release", "p7_question")
    assert "copies of these **weights**" in question and "*activations*" in question
    correct = {c.name for c in load(ASSIGNMENT).cases if c.correct}
    assert "p7_repeat_tiles_heads" in correct  # repeats the heads' activations: accepted


def test_shape_comments_are_not_demanded():
    assert "it earns no points" in text("release", "p5_question")


@pytest.mark.parametrize("kind", ["source", "release"])
def test_no_control_character_in_markdown(kind):
    nb = nbformat.read(notebook_path(ROOT, kind, ASSIGNMENT), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            bad = re.findall(r"[\x00-\x08\x0b-\x1f\x7f]", cell.source)
            assert not bad, f"{grade_id(cell) or cell.id}: control characters {bad}"
