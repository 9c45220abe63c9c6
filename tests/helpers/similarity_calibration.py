"""Measure the similarity detector on the case tables: its false positives and detections.

Code answers, for every code answer cell of an assignment:

* independent pairs: the instructor's solution and the case table's correct alternatives
  for that cell, two by two, where fewer than half of the shorter one's lines (comments
  and the release's lines left out) occur verbatim in the other. Many alternatives are the
  solution with one line replaced; those pairs are edits of one text, not independent
  work, and are counted apart (``derived``): a flag there is right;
* disguised copies: each of those answers against its copy disguised mechanically by each
  disguise of :mod:`disguise`, and by all of them at once. A flag is a detection. Copies
  of answers with fewer own fingerprints than ``CODE_MIN_SHARED`` (one-line answers, where
  copying cannot be told from writing the same line) are counted apart as well.

Written answers: the model answers of the assignment's written parts against each other
(independent texts on the same topic: the case tables hold no second written answer to a
question) and against their copies reflowed (case, punctuation, line breaks), with
sentences reordered, with every tenth word replaced, and all three.

Every pair here is scored on its own (a class of two: no fingerprint is common). The
discount of what a class shares is calibrated on classes of independent answers that
converge on one idiom: :mod:`similarity_classes`.

Run ``.venv/bin/python tests/helpers/similarity_calibration.py`` to print the rates per
assignment at the thresholds of :mod:`attncourse.similarity.compare`.
"""

import ast
import itertools
import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).parent))

import casetable  # noqa: E402
from disguise import DISGUISES, bound, disguise  # noqa: E402

from attncourse.cells import grade_id, is_answer  # noqa: E402
from attncourse.course import ASSIGNMENTS, ROOT, notebook_path  # noqa: E402
from attncourse.similarity.compare import (  # noqa: E402
    CODE_MIN_SHARED,
    Release,
    flagged,
    score,
)
from devtools.submissions import solution_answers  # noqa: E402

HOW = (*DISGUISES, "all")
TEXT_HOW = ("reflow", "reorder", "reword", "all")


def _source(assignment):
    return nbformat.read(notebook_path(ROOT, "source", assignment), as_version=4)


def release(assignment):
    return nbformat.read(notebook_path(ROOT, "release", assignment), as_version=4)


def independent_answers(assignment):
    """code answer cell -> [(name, source)]: the solution and the table's correct alternatives."""
    source = _source(assignment)
    code = {grade_id(c) for c in source.cells if is_answer(c) and c.cell_type == "code"}
    out = {cell: [("solution", text)] for cell, text in solution_answers(source).items()}
    for case in casetable.load(assignment).cases:
        if case.correct:
            for cell, text in case.answers.items():
                if cell in code and text not in {t for _, t in out[cell]}:
                    out[cell].append((case.id, text))
    return {cell: answers for cell, answers in out.items() if cell in code}


def required_names(stub):
    """Names a disguise keeps: what the stub defines (the tests call it) and sets on self."""
    tree = ast.parse(stub)
    _, attributes = bound(tree)
    defined = {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    return frozenset(defined | attributes)


def _lines(text, stub):
    template = {line.split("#")[0].strip() for line in stub.split("\n")}
    lines = {line.split("#")[0].strip() for line in text.split("\n")}
    return lines - template - {""}


def derived(a, b, stub):
    """True when half or more of the shorter answer's own lines occur verbatim in the other."""
    x, y = _lines(a, stub), _lines(b, stub)
    return bool(x and y) and len(x & y) >= 0.5 * min(len(x), len(y))


def measure(assignment, **settings):
    """Code answers: ([(cell, a, b, score, shared, derived)], {how: [(copy, score, shared,
    own fingerprints of the original)]})."""
    nb = release(assignment)
    base = Release(nb, **settings)
    stubs = {grade_id(c): c.source for c in nb.cells if is_answer(c)}
    pairs, disguised = [], {how: [] for how in HOW}
    for cell, answers in independent_answers(assignment).items():
        texts = dict(answers)
        prints = {name: base.answer(text) for name, text in answers}
        for (a, x), (b, y) in itertools.combinations(prints.items(), 2):
            value, _, shared = score(x, y)
            pairs.append((cell, a, b, value, shared, derived(texts[a], texts[b], stubs[cell])))
        keep = required_names(stubs[cell])
        for name, text in answers:
            for how in HOW:
                value, _, shared = score(prints[name], base.answer(disguise(text, how, keep)))
                disguised[how].append((f"{cell}/{name}", value, shared, len(prints[name].prints)))
    return pairs, disguised


def _sentences(text):
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def text_disguise(text, how):
    """A written answer disguised: reflowed, sentences reordered, reworded, or ``all``."""
    if how in ("reorder", "all"):
        text = " ".join(reversed(_sentences(text)))
    if how in ("reword", "all"):
        words = text.split(" ")
        text = " ".join("indeed" if i % 10 == 9 else w for i, w in enumerate(words))
    if how in ("reflow", "all"):
        text = re.sub(r"[,;:*]", " ", text.upper()).replace(" ", "\n", 3)
    return text


def measure_text(assignment):
    """Written answers: ([(a, b, score, shared)], {how: [(part, score, shared)]})."""
    nb = release(assignment)
    base = Release(nb)
    written = {
        part: text.split("**Mark scheme**")[0]
        for part, text in solution_answers(_source(assignment)).items()
        if base.parts.get(part) == "markdown"
    }
    prints = {part: base.answer(text, "markdown") for part, text in written.items()}

    def compared(x, y):
        value, _, shared = score(x, y)
        return value, shared

    pairs = [
        (a, b, *compared(x, y)) for (a, x), (b, y) in itertools.combinations(prints.items(), 2)
    ]
    copies = {
        how: [
            (part, *compared(prints[part], base.answer(text_disguise(text, how), "markdown")))
            for part, text in written.items()
        ]
        for how in TEXT_HOW
    }
    return pairs, copies


def rates(assignment):
    """The counts the README quotes (compare.py their sums), at the thresholds set there."""
    pairs, disguised = measure(assignment)
    independent = [p for p in pairs if not p[5]]
    out = {
        "independent pairs": len(independent),
        "false positives": sum(flagged("code", v, s, s) for *_, v, s, _ in independent),
        "derived pairs": len(pairs) - len(independent),
        "derived flagged": sum(flagged("code", v, s, s) for *_, v, s, d in pairs if d),
    }
    for how, rows in disguised.items():
        long = [r for r in rows if r[3] >= CODE_MIN_SHARED]
        out[f"{how} detected (long answers)"] = (
            sum(flagged("code", v, s, s) for _, v, s, _ in long),
            len(long),
        )
        out[f"{how} detected (all)"] = (
            sum(flagged("code", v, s, s) for _, v, s, _ in rows),
            len(rows),
        )
    text_pairs, copies = measure_text(assignment)
    out["written: independent pairs"] = len(text_pairs)
    out["written: false positives"] = sum(flagged("markdown", v, s, s) for *_, v, s in text_pairs)
    for how, rows in copies.items():
        out[f"written: {how} detected"] = (
            sum(flagged("markdown", v, s, s) for _, v, s in rows),
            len(rows),
        )
    return out


def main():
    for assignment in ASSIGNMENTS:
        print(f"== {assignment}")
        for key, value in rates(assignment).items():
            print(f"  {key}: {value}")


if __name__ == "__main__":
    main()
