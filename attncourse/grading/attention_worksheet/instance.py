"""Each student's own numbers for the worksheet's hand-computed questions (Q3 and Q5).

``worksheet_instance`` is also the body of the notebook's provided cell ``student_instance``
(the student runs it on their id; ``tests/test_instances.py`` keeps the two the same). The
judge draws the instance of the id nbgrader grades the submission under (``ns.student``),
never of an id the notebook names.

Equal difficulty: every instance has the same shapes, integers from the same ranges and the
same structure: in Q3 X is invertible and not symmetric, no weight is symmetric or commutes
with X, and X^T W, X * W differ from X W (so every named mistake gives another matrix), one row of the attention weights is a
tie (0.5, 0.5) and the other decided by a score gap of at least 8 (weights 1.00, 0.00 within
3.5e-3, so ``A_approx`` is the rounded softmax and Y from it is within 3e-3 of the exact Y);
in Q5 the eight entries of each of Q, K, V are distinct and W^(o) holds two ones in every row
and column, with H_0 != H_1. Drawn by rejection from a generator seeded with the SHA-256 of
(assignment, id).
"""

import hashlib

import numpy as np

from attncourse.constants import EXAMPLE_STUDENT


def worksheet_instance(student):
    """The numbers of Q3 and Q5 for ``student``: the same on every call, different between ids."""
    seed = hashlib.sha256(f"attention_worksheet:{student}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(seed[:8], "little"))
    while True:  # Q3: every named mistake of the checks gives another matrix
        X = rng.integers(-2, 3, (2, 2))
        W_q, W_k, W_v, W_o = rng.integers(-3, 4, (4, 2, 2))
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        gaps = (Q @ K.T) @ np.array([1, -1])  # row i: score of key 0 minus score of key 1
        weights = np.exp(Q @ K.T / np.sqrt(2))
        weights = weights / weights.sum(axis=1, keepdims=True)
        A_approx = np.round(weights, 1)
        Y = A_approx @ V @ W_o
        plain = (
            round(np.linalg.det(X)) != 0
            and (X != X.T).any()
            and all(
                (W != W.T).any()
                and (W @ X != X @ W).any()
                and (X * W != X @ W).any()
                and (X.T @ W != X @ W).any()
                for W in (W_q, W_k, W_v)
            )
            and sorted(abs(gaps)) == [0, max(abs(gaps))]
            and max(abs(gaps)) >= 8
            and (np.diag(W_o) != 0).all()
            and (Y != 0).all()
            and np.abs(weights @ V @ W_o - Y).max() <= 3e-3 * np.abs(Y).max()
        )
        if plain:
            break
    while True:  # Q5: entries of Q, K, V distinct; W^(o) a permuted ring of two ones a row
        Q_mha, K_mha, V_mha = (rng.choice(10, 8, replace=False).reshape(2, 4) for _ in range(3))
        H_0, H_1 = rng.integers(0, 4, (2, 2, 2))
        ring = np.eye(4, dtype=int) + np.roll(np.eye(4, dtype=int), 1, axis=1)
        W_o_mha = ring[rng.permutation(4)][:, rng.permutation(4)]
        H = np.concatenate([H_0, H_1], axis=1)
        plain = (
            (H_0 != H_1).any()
            and (
                np.concatenate([H_0 @ W_o_mha[:2, :2], H_1 @ W_o_mha[2:, 2:]], 1) != H @ W_o_mha
            ).any()
            and (np.concatenate([H_1, H_0], axis=1) @ W_o_mha != H @ W_o_mha).any()
        )
        if plain:
            break
    return {
        "X": X,
        "W_q": W_q,
        "W_k": W_k,
        "W_v": W_v,
        "W_o": W_o,
        "A_approx": A_approx,
        "Q_mha": Q_mha,
        "K_mha": K_mha,
        "V_mha": V_mha,
        "H_0": H_0,
        "H_1": H_1,
        "W_o_mha": W_o_mha,
    }


def instance_of(student):
    """``worksheet_instance(student)`` as float64 numpy arrays."""
    return {k: np.asarray(v, dtype=np.float64) for k, v in worksheet_instance(student).items()}


def copied_instances(ns, answer_of):
    """Named mistakes: ``answer_of(other)`` for each other instance a notebook may hold.

    The others are the example instance (no id set) and the id the notebook's STUDENT_ID
    names when it is not the graded one; read only to say whose numbers these are.
    """
    others = {EXAMPLE_STUDENT: "the example instance (no id was set)"}
    written = ns.get("STUDENT_ID")
    if type(written) is str and written.strip():
        others[written.strip()] = f"student {written.strip()!r}'s instance"
    return {
        f"answers match {label}, not your own (graded as {ns.student!r}): work from the "
        "numbers the provided cell prints for your id": answer_of(other)
        for other, label in others.items()
        if other != ns.student
    }


def instance_json(student):
    """The instance of ``student`` and its expected answers, as plain lists (for JSON)."""
    data = instance_of(student)
    Q, K, V = data["X"] @ data["W_q"], data["X"] @ data["W_k"], data["X"] @ data["W_v"]
    H = np.concatenate([data["H_0"], data["H_1"]], axis=1)
    answers = {
        "Q": Q,
        "K": K,
        "V": V,
        "Y": data["A_approx"] @ V @ data["W_o"],
        **{f"{m}_{h}": data[f"{m}_mha"][:, 2 * h : 2 * h + 2] for m in "QKV" for h in (0, 1)},
        "H_concat": H,
        "Y_mha": H @ data["W_o_mha"],
    }
    return {
        "assignment": "attention_worksheet",
        "student": student,
        "instance": {k: v.tolist() for k, v in data.items()},
        "answers": {k: v.tolist() for k, v in answers.items()},
    }
