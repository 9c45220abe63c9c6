"""Every pair of students, every answer cell: shared fingerprints, score, flagged.

Each submitted notebook's answer cells are found by ``grade_id`` in the release notebook
(code cells and written Markdown answers). What a student starts from never counts: every
k-gram of the release's code cells (the stub of the answer cell itself and the instructor's
visible code) and every shingle of its Markdown cells (the questions) is taken out of each
student's fingerprints before any comparison.

The score of a pair on a part is the share of the smaller answer's fingerprints that the
other answer has too (containment, as MOSS reports: code added to a copy, dead or not, does
not lower it). A pair is flagged when the score reaches the threshold and enough
fingerprints are shared that the shared passage is longer than what an independently
written short answer (one ``return`` line) has in common with another by necessity.
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

# Calibrated on the case tables (tests/similarity_calibration.py measures it again, per
# assignment; the README has the table), with CODE_K = 8 and CODE_WINDOW = 3:
# - independent correct answers of the same part (the solution and the tables' correct
#   alternatives, two by two, leaving out pairs where one is the other with a line or two
#   changed): 1 of 374 pairs flagged (0.3%), a pair that is in fact an edit too (p13: the
#   same four lines with scale constants inserted). The highest other score is 0.556
#   (answers that share the lines the task dictates, then go their own way).
# - copies disguised mechanically (tests/disguise.py), of the 135 answers with at least
#   CODE_MIN_SHARED own fingerprints: renamed, comments and literals changed, definitions
#   reordered, reformatted: 135 each; dead code inserted: 127; all five at once: 127 (94%)
#   flagged (the 8 missed keep 9-11 shared fingerprints). Of all 219 answers, 127 (58%)
#   with all five: the 84 shorter ones (a line or two) are never flagged, since there a
#   copy cannot be told from the same line written twice.
# - pairs where one answer is the other with a line or two changed: 82 of 120 flagged.
# Thresholds tried (independent pairs flagged / copies with all five disguises flagged):
#   0.5 and 12 shared: 7 / 127; 0.6 and 8: 4 / 151; 0.6 and 12: 1 / 127; 0.8 and 12:
#   1 / 124. Under 12 shared fingerprints, one-line answers that differ only in literals
#   are flagged; over 0.6, copies are lost and no false positive.
CODE_THRESHOLD = 0.6
CODE_MIN_SHARED = 12
# Written answers, shingles of 5 words (TEXT_SHINGLE): the case tables hold no second
# written answer to a question, so the independent texts are the model answers of the
# assignment's other written parts (same topic and notation): 0 of 46 pairs flagged, the
# highest score 0.083. Copies reflowed (case, punctuation, line breaks), with sentences
# reordered, with every tenth word replaced, and all three at once: 20 of 20 flagged each,
# the lowest score 0.477 (all three). 0.3 lies between the two.
TEXT_THRESHOLD = 0.3
TEXT_MIN_SHARED = 8


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
    shared: int
    flagged: bool


class Release:
    """The answer cells of a release notebook and the fingerprints no student is charged for."""

    def __init__(self, nb, k: int = CODE_K, window: int = CODE_WINDOW):
        self.k, self.window = k, window
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
        """An :class:`Answer` of ``kind`` with ``source``, the release's fingerprints removed."""
        if kind == "code":
            prints = code_fingerprints(source, self.k, self.window, self.modules)
            template = self.code
        else:
            prints = text_fingerprints(source)
            template = self.text
        return Answer(source, kind, {h: s for h, s in prints.items() if h not in template})


def score(a: Answer, b: Answer) -> tuple[float, set]:
    """(containment score, shared hashes) of two answers to one part."""
    shared = a.prints.keys() & b.prints.keys()
    if not shared:
        return 0.0, shared
    return len(shared) / min(len(a.prints), len(b.prints)), shared


def flagged(kind: str, value: float, shared: int) -> bool:
    """The decision: score at or over the threshold, and enough fingerprints shared."""
    if kind == "code":
        return value >= CODE_THRESHOLD and shared >= CODE_MIN_SHARED
    return value >= TEXT_THRESHOLD and shared >= TEXT_MIN_SHARED


def shared_lines(a: Answer, b: Answer) -> tuple[frozenset, frozenset]:
    """The lines of ``a``'s and of ``b``'s cell in the fingerprints they share."""
    shared = a.prints.keys() & b.prints.keys()
    return tuple(
        frozenset(
            line
            for h in shared
            for first, last in answer.prints[h]
            for line in range(first, last + 1)
        )
        for answer in (a, b)
    )


def compare(answers: dict[str, dict[str, Answer]], parts: list[str]) -> list[Match]:
    """A :class:`Match` for every pair of students and part sharing fingerprints, in order
    of student ids, then parts as in the release."""
    out = []
    for a, b in itertools.combinations(sorted(answers), 2):
        for part in parts:
            if part not in answers[a] or part not in answers[b]:
                continue
            x, y = answers[a][part], answers[b][part]
            value, shared = score(x, y)
            if not shared:
                continue
            flag = flagged(x.kind, value, len(shared))
            out.append(Match(a, b, part, round(value, 3), len(shared), flag))
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
