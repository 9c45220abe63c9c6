"""Q4 and Q5 of ``attention_worksheet``: heads as block matrices, numerically and by hand."""

from functools import partial

import torch

from attncourse.judge.checks import answer, call, check_close, fail
from attncourse.judge.remote import StudentNamespace

from .references import q4_instance, q4_mistakes, q4_reference, two_head_reference
from .references_classmates import copied_instances, find_classmate
from .tolerances import EXACT_TOL, FLOAT32_TOL
from .toy import as_matrix


def check_q4_split(ns: StudentNamespace, which: str) -> None:
    """``which``(X, W, n_heads) returns (n_heads, n, d_h), head h = X W[:, h d_h:(h+1) d_h]."""
    fn = answer(ns, which, "Q4(c)")
    n, H, d_h, X, W = q4_instance(which)
    got = call(fn, (X, W, H), f"{which}(X, W, {H})")
    if type(got) in (tuple, list) and got and all(type(g) is torch.Tensor for g in got):
        fail(
            f"Q4(c): {which}(X, W, n_heads={H}) must return one tensor",
            f"a tensor of shape (n_heads, n, d_h) = ({H}, {n}, {d_h})",
            f"a {type(got).__name__} of {len(got)} tensors",
            "the heads were not stacked: torch.stack(heads) puts the head axis first",
        )
    reference = q4_reference(X, W, d_h)
    check_close(
        f"Q4(c): {which}(X, W, n_heads={H}) with n={n}, d_h={d_h}",
        got,
        reference,
        FLOAT32_TOL,
        mistakes=q4_mistakes(X, W, H, d_h, reference),
        shape_cause="expected (n_heads, n, d_h): move the head axis first",
    )


def check_q5_head_splits(ns: StudentNamespace) -> None:
    """The per-head blocks Q_0 .. V_1 are the first and last two columns of Q, K, V."""
    answers = {m: tuple(answer(ns, f"{m}_{h}", "Q5(a)") for h in (0, 1)) for m in "QKV"}
    Q, K, V, _, _, _ = two_head_reference(ns.student)
    got = {(m, h): as_matrix(answers[m][h], f"Q5(a): {m}_{h}") for m in "QKV" for h in range(2)}
    classmate = find_classmate(ns, tuple(got.values()), _head_blocks, EXACT_TOL, "Q5(a)")
    for index, (name, M) in enumerate((("Q", Q), ("K", K), ("V", V))):
        for h in range(2):
            other = M[:, 2 * (1 - h) : 2 * (2 - h)]
            what = f"Q5(a): {name}_{h}"
            mistakes = {
                f"heads swapped: {name}_{h} is the other head's block": other,
                "interleaved columns (every other column) instead of a contiguous block": M[
                    :, h::2
                ],
                "split along the rows (positions) instead of the feature columns": M.reshape(
                    2, 2, 2
                )[h].T,
                "transposed block": M[:, 2 * h : 2 * h + 2].T,
                **copied_instances(ns, partial(_head_block, index=index, h=h), classmate),
            }
            check_close(
                what,
                got[name, h],
                M[:, 2 * h : 2 * h + 2],
                EXACT_TOL,
                mistakes=mistakes,
                shape_cause="each head's block is (n, d_h) = (2, 2)",
            )


def check_q5_concat_output(ns: StudentNamespace) -> None:
    """H_concat = [H_0 | H_1] along the features, Y_mha = H W^(o)."""
    H_concat, Y_mha = answer(ns, "H_concat", "Q5(b)"), answer(ns, "Y_mha", "Q5(b)")
    _, _, _, H0, H1, Wo = two_head_reference(ns.student)
    H = torch.cat([H0, H1], dim=1)
    got_h, got_y = as_matrix(H_concat, "Q5(b): H_concat"), as_matrix(Y_mha, "Q5(b): Y_mha")
    classmate = find_classmate(
        ns,
        (got_h, got_y),
        lambda other: (_concatenated(other), _two_head_output(other)),
        EXACT_TOL,
        "Q5(b)",
    )
    check_close(
        "Q5(b): H = Concat[H_0, H_1]",
        got_h,
        H,
        EXACT_TOL,
        mistakes={
            "concatenated in the order [H_1 | H_0]": torch.cat([H1, H0], dim=1),
            "interleaved the heads' columns": torch.stack([H0, H1], dim=2).reshape(2, 4),
            **copied_instances(ns, _concatenated, classmate),
        },
        shape_cause="concatenate along the feature axis: (n, n_heads d_h) = (2, 4)",
    )
    check_close(
        "Q5(b): Y = H W^(o)",
        got_y,
        torch.matmul(H, Wo),
        EXACT_TOL,
        mistakes={
            "each head projected by its own diagonal block of W^(o)": torch.cat(
                [torch.matmul(H0, Wo[:2, :2]), torch.matmul(H1, Wo[2:, 2:])], dim=1
            ),
            "heads concatenated in the wrong order before W^(o)": torch.matmul(
                torch.cat([H1, H0], dim=1), Wo
            ),
            "forgot the output projection": H,
            **copied_instances(ns, _two_head_output, classmate),
        },
        shape_cause="Y = H W^(o) has shape (2, 4)",
    )


def _concatenated(student):
    """Concat[H_0, H_1] of ``student``'s Q5."""
    return torch.cat(two_head_reference(student)[3:5], dim=1)


def _two_head_output(student):
    """Y = Concat[H_0, H_1] W^(o) of ``student``'s Q5."""
    _, _, _, H0, H1, Wo = two_head_reference(student)
    return torch.matmul(torch.cat([H0, H1], dim=1), Wo)


def _head_blocks(student):
    """Q_0, Q_1, K_0, K_1, V_0, V_1 of ``student``'s Q5."""
    return tuple(_head_block(student, index, h) for index in range(3) for h in range(2))


def _head_block(student, index, h):
    """Head ``h``'s block of Q, K or V (``index`` 0, 1, 2) of ``student``'s Q5."""
    return two_head_reference(student)[index][:, 2 * h : 2 * h + 2]
