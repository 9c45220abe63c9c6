"""Every pair of students, every answer cell: shared fingerprints, score, flagged.

Each submitted notebook's answer cells are found by ``grade_id`` in the release notebook
(code cells and written Markdown answers). What a student starts from never counts: every
k-gram of the release's code cells (the stub of the answer cell itself and the instructor's
visible code), every k-gram that reaches into a line of an answer cell's stub (the seam
between ``def forward(self, x, y):`` and the student's first line) and every shingle of its
Markdown cells (the questions) is taken out of each student's fingerprints before any
comparison.

What many students of the class write alike counts less, down to nothing
(:mod:`~attncourse.similarity.rarity`): each fingerprint is weighted by how rare it is in
the class's answers to that part. The score of a pair on a part is the weight of the
fingerprints both answers have, over the weight of the smaller answer's (containment, as
MOSS reports: code added to a copy, dead or not, does not lower it). A pair is flagged when
the score reaches the threshold, the shared passage is longer than what an independently
written short answer (one ``return`` line) has in common with another by necessity, and
enough of what they share is rare in the class.
"""

import itertools
from dataclasses import dataclass
from pathlib import Path

import nbformat

from attncourse.cells import grade_id, is_answer
from attncourse.constants import RELEASE, SUBMITTED
from attncourse.similarity.fingerprint import (
    CODE_K,
    CODE_WINDOW,
    code_fingerprints,
    code_tokens,
    imported_names,
    kgrams,
    text_fingerprints,
)
from attncourse.similarity.rarity import weights

# Calibrated on classes where independent students converge on one idiom
# (tests/helpers/similarity_classes.py measures it again; tests/unit/test_similarity.py checks it): the
# held-out pool (tests/helpers/similarity_pool.py: 7-9 independent answers to each of the four
# coding parts of attention_variants, many in torch.einsum, and the solution), each class
# with disguised copies (tests/helpers/disguise.py, all disguises at once). Independent pairs ×
# parts flagged, and copies flagged, before (no discount, 0.6 and 12 fingerprints) -> now:
# - classes of five (every 4 pool students and a copy of one): 1100 of 11424 (9.6%) -> 93
#   (0.8%); copies 1904 of 1904 -> 1899 (99.7%). The 93 are p13 and p5 pairs whose answers
#   are the same statements up to einsum letters (p13: four one-statement outputs the task
#   dictates): in a class of five nobody else wrote them, so nothing says they are common.
# - the whole pool with a copy of one student (each in turn): 111 of 1222 (9.1%) -> 7 (one
#   p13 pair, the solution's statements written again); copies 35 of 35 -> 33.
# - 200 students simulated on the pool's idioms (each a pool answer with two statements per
#   function from other pool answers) and 20 copies per part: 8857 of 79600 (11.1%) -> 39
#   (0.05%); copies 80 -> 28: all 28 copies of students with a rare weight of 4 or more of
#   their own; the other 52 wrote only what many classmates wrote, where no copy can show.
# Thresholds tried (five: false positives, copies; 200: false positives, copies):
#   0.6 and 4: 172, 1899; 54, 28. 0.7 and 2: 94, 1904; 98, 54. 0.7 and 4: 93, 1899; 39, 28.
#   0.7 and 8: 76, 1876; 3, 5. 0.8 and 4: 43, 1851; 23, 28. Over 0.7 copies in classes of
#   five are lost (0.8: 48 of them); a rare weight over 4 loses copies in the large class.
# Pairwise on the case tables (a class of two: every weight 1), the solution and the
# correct alternatives of a part two by two, edits of one text left out: 1 of 545 flagged
# (0.2%); copies with all disguises of the answers with CODE_MIN_SHARED fingerprints of
# their own: 171 of 171. CODE_MIN_SHARED keeps one-line answers unflagged: there a copy
# cannot be told from the same line written twice.
CODE_THRESHOLD = 0.7
CODE_MIN_SHARED = 12
CODE_MIN_RARE = 4
# Written answers, shingles of 5 words (TEXT_SHINGLE): the case tables hold no second
# written answer to a question, so the independent texts are the model answers of the
# assignment's other written parts (same topic and notation): 0 of 46 pairs flagged, the
# highest score 0.083. Copies reflowed (case, punctuation, line breaks), with sentences
# reordered, with every tenth word replaced, and all three at once: 20 of 20 flagged each,
# the lowest score 0.477 (all three). 0.3 lies between the two. TEXT_MIN_RARE as for code:
# a phrase the question puts in every answer counts for nothing.
TEXT_THRESHOLD = 0.3
TEXT_MIN_SHARED = 8
TEXT_MIN_RARE = 4


@dataclass(frozen=True)
class Answer:
    """One student's answer cell: its source and fingerprints (release removed)."""

    source: str
    kind: str  # "code" or "markdown"
    prints: dict  # hash -> [(first line, last line), …]


@dataclass(frozen=True)
class Match:
    """Two students' answers to one part that share fingerprints."""

    student_a: str
    student_b: str
    part: str
    score: float
    shared: int  # fingerprints both answers have
    rare: float  # their weight: what the classmates' answers do not have too
    flagged: bool


_OPEN = {"", "raise NotImplementedError()"}  # a stub's lines that leave the answer open


def _line(text: str) -> str:
    """A line as the stub's lines are compared: without its comment and indentation."""
    return text.split("#")[0].strip()


class Release:
    """The answer cells of a release notebook and the fingerprints no student is charged for."""

    def __init__(self, nb, k: int = CODE_K, window: int = CODE_WINDOW, seams: bool = False):
        """``seams``: keep the k-grams that reach into a stub's line (as before the
        discount; the calibration measures both)."""
        self.k, self.window, self.seams = k, window, seams
        self.parts = {grade_id(c): c.cell_type for c in nb.cells if is_answer(c)}
        self.first = {}  # cell type -> the first answer cell of that type
        for part, kind in self.parts.items():
            self.first.setdefault(kind, part)
        self.cells = {c.source.strip() for c in nb.cells}
        code = [c.source for c in nb.cells if c.cell_type == "code"]
        self.modules = frozenset(name for source in code for name in imported_names(source))
        self.code = {h for source in code for h, *_ in kgrams(code_tokens(source, self.modules), k)}
        self.text = {
            h for c in nb.cells if c.cell_type == "markdown" for h in text_fingerprints(c.source)
        }
        stubs = [c.source for c in nb.cells if is_answer(c) and c.cell_type == "code"]
        self.stub_lines = {_line(line) for s in stubs for line in s.split("\n")} - _OPEN

    def answers(self, nb) -> dict[str, Answer]:
        """part -> the student's :class:`Answer` in submitted notebook ``nb``.

        A cell the student added (no ``grade_id``, not a cell of the release) belongs to
        the closest answer cell of its kind above it (the first one, above them all), so
        code moved out of the answer cell is compared too."""
        own, added, last = {}, {}, {}
        for cell in nb.cells:
            part = grade_id(cell)
            if part in self.parts:
                own.setdefault(part, cell.source)
                last[self.parts[part]] = part
            elif part is None and cell.source.strip() not in self.cells:
                target = last.get(cell.cell_type) or self.first.get(cell.cell_type)
                if target is not None:
                    added.setdefault(target, []).append(cell.source)
        return {
            part: self.answer("\n".join([own.get(part, ""), *added.get(part, [])]), kind)
            for part, kind in self.parts.items()
            if part in own or part in added
        }

    def answer(self, source: str, kind: str = "code") -> Answer:
        """An :class:`Answer` of ``kind`` with ``source``, the release's fingerprints removed:
        every k-gram of the release's text, and (code) every k-gram that reaches into a line
        of an answer cell's stub (``def forward(self, x, y):`` and the student's first
        line: the seam between what was given and what was written)."""
        if kind == "code":
            prints = code_fingerprints(source, self.k, self.window, self.modules)
            lines = source.split("\n")
            given = {n for n, line in enumerate(lines, start=1) if _line(line) in self.stub_lines}
            prints = {
                h: s
                for h, s in prints.items()
                if h not in self.code
                and (self.seams or not all(given.intersection(range(a, b + 1)) for a, b in s))
            }
        else:
            prints = text_fingerprints(source)
            prints = {h: s for h, s in prints.items() if h not in self.text}
        return Answer(source, kind, prints)


def score(a: Answer, b: Answer, weights: dict | None = None) -> tuple[float, float, int]:
    """(score, weight of the shared fingerprints, their number) of two answers to one part.

    ``weights``: hash -> how much a fingerprint counts (:func:`~attncourse.similarity.
    rarity.weights` over the class); every fingerprint counts 1 without it."""

    def total(hashes):
        return sum(weights.get(h, 1.0) for h in hashes) if weights else float(len(hashes))

    shared = a.prints.keys() & b.prints.keys()
    smaller = min(total(a.prints), total(b.prints))
    rare = total(shared)
    return (rare / smaller if smaller else 0.0), rare, len(shared)


def flagged(kind: str, value: float, rare: float, shared: int) -> bool:
    """The decision: score at or over the threshold, a long enough passage shared, and
    enough of it rare in the class."""
    if kind == "code":
        return value >= CODE_THRESHOLD and shared >= CODE_MIN_SHARED and rare >= CODE_MIN_RARE
    return value >= TEXT_THRESHOLD and shared >= TEXT_MIN_SHARED and rare >= TEXT_MIN_RARE


def shared_lines(a: Answer, b: Answer, weights: dict | None = None) -> tuple[frozenset, frozenset]:
    """The lines of ``a``'s and of ``b``'s cell in the fingerprints they share (with
    ``weights``, only those that count: rare in the class)."""
    shared = {h for h in a.prints.keys() & b.prints.keys() if (weights or {}).get(h, 1.0) > 0}
    return tuple(
        frozenset(
            line
            for h in shared
            for first, last in answer.prints[h]
            for line in range(first, last + 1)
        )
        for answer in (a, b)
    )


def class_weights(answers: dict[str, dict[str, Answer]], part: str) -> dict[int, float]:
    """hash -> weight of the fingerprints of the class's answers to ``part`` (answers with
    no fingerprint of their own, such as the untouched stub, are not counted)."""
    return weights(a[part].prints for a in answers.values() if part in a and a[part].prints)


def compare(answers: dict[str, dict[str, Answer]], parts: list[str]) -> list[Match]:
    """A :class:`Match` for every pair of students and part sharing fingerprints, in order
    of student ids, then parts as in the release; each fingerprint weighted by its rarity
    in the class's answers to that part."""
    rarity = {part: class_weights(answers, part) for part in parts}
    out = []
    for a, b in itertools.combinations(sorted(answers), 2):
        for part in parts:
            if part not in answers[a] or part not in answers[b]:
                continue
            x, y = answers[a][part], answers[b][part]
            value, rare, shared = score(x, y, rarity[part])
            if shared:
                flag = flagged(x.kind, value, rare, shared)
                out.append(Match(a, b, part, round(value, 3), shared, round(rare, 1), flag))
    return out


def class_answers(course: Path, assignment: str):
    """(release notebooks {name: Release}, {student: {part: Answer}}, {student/file: why
    not compared}) of the submitted notebooks of ``assignment`` in ``course``."""
    releases = {
        path.stem: Release(nbformat.read(path, as_version=4))
        for path in sorted((Path(course) / RELEASE / assignment).glob("*.ipynb"))
    }
    answers, skipped = {}, {}
    for path in sorted((Path(course) / SUBMITTED).glob(f"*/{assignment}/*.ipynb")):
        student = path.parent.parent.name
        release = releases.get(path.stem)
        if release is None:
            skipped[f"{student}/{path.name}"] = "not a notebook of the release"
            continue
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception as err:  # a damaged upload: listed, never fatal
            skipped[f"{student}/{path.name}"] = f"unreadable ({type(err).__name__})"
            continue
        prefix = "" if path.stem == assignment else f"{path.stem}:"
        own = answers.setdefault(student, {})
        own.update({prefix + part: a for part, a in release.answers(nb).items()})
    return releases, answers, skipped


def parts_of(releases: dict, assignment: str) -> list[str]:
    """The parts (answer cells) of the release notebooks, in notebook order."""
    return [
        ("" if name == assignment else f"{name}:") + part
        for name, release in releases.items()
        for part in release.parts
    ]
