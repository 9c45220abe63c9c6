"""Classes for calibrating ``attncourse similarity``'s discounts, built from the held-out pool.

:mod:`similarity_pool` holds independent answers to the four coding parts of
``attention_variants``; the instructor's solution joins them as one more independent student.
Three kinds of class, each with disguised copies (:mod:`disguise`, all disguises at once):

* ``pool``: all the pool's students, and one disguised copy of one of them (each in turn);
* ``five``: the issue's class, four independent students (every 4 of the pool) and a
  disguised copy of one of them (each in turn);
* ``large``: 200 students simulated from the pool, each the answer of a pool student with
  ``SWAPS`` statements of each function replaced by statements other pool students wrote in
  the same function (many students on one idiom, each with a little of their own), and
  ``COPIES`` disguised copies of simulated students.

:func:`measure` scores every pair of a class as the command does (with the class's rarity
weights, or ``discounted=False`` as before the discounts) and counts the independent pairs
flagged and the copies flagged.
"""

import ast
import copy
import itertools
import random
from dataclasses import dataclass

from disguise import disguise
from similarity_calibration import release, required_names
from similarity_pool import POOL

from attncourse.cells import grade_id, is_answer
from attncourse.similarity.compare import CODE_MIN_RARE, Release, class_weights, flagged, score
from devtools.submissions import solution_answers

ASSIGNMENT = "attention_variants"
SIZE, SWAPS, COPIES, SEED = 200, 2, 20, 31


@dataclass(frozen=True)
class Counts:
    """Independent pairs × parts flagged and copies flagged, with the scores behind them."""

    pairs: int
    false_positives: int
    copies: int
    detected: int
    distinct: int  # copies of answers with a rare weight of CODE_MIN_RARE of their own
    distinct_detected: int
    highest_independent: float
    lowest_copy: float


def pool_answers() -> dict[str, dict[str, str]]:
    """part -> {student: answer}: the pool and the instructor's solution."""
    from similarity_calibration import _source

    solution = solution_answers(_source(ASSIGNMENT))
    return {part: {**answers, "solution": solution[part]} for part, answers in POOL.items()}


def _functions(tree):
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]


def _own(body):
    """Indices of a function's statements a student writes (not the docstring or super())."""
    return [
        i
        for i, s in enumerate(body)
        if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        and "super()" not in ast.unparse(s)
    ]


def simulated(answers: dict[str, str], size: int = SIZE, seed: int = SEED) -> dict[str, str]:
    """``size`` students, each a pool answer with SWAPS statements of each function replaced
    by statements of the same function in other pool answers."""
    rng = random.Random(seed)
    trees = {name: ast.parse(text) for name, text in sorted(answers.items())}
    bank = {}
    for name, tree in trees.items():
        for f in _functions(tree):
            bank.setdefault(f.name, []).extend((name, f.body[i]) for i in _own(f.body))
    out = {}
    for i in range(size):
        base = rng.choice(sorted(trees))
        tree = copy.deepcopy(trees[base])
        for f in _functions(tree):
            others = [s for name, s in bank[f.name] if name != base]
            for at in rng.sample(_own(f.body), min(SWAPS, len(_own(f.body)))):
                f.body[at] = copy.deepcopy(rng.choice(others))
        out[f"sim{i:03d}_{base}"] = ast.unparse(tree)
    return out


def classes(part: str, answers: dict[str, str]):
    """(kind, {student: answer}, {copy: original}) of every class built for ``part``."""
    keep = required_names(_stubs()[part])
    large = simulated(answers)
    chosen = random.Random(SEED).sample(sorted(large), COPIES)
    copy = {
        s: disguise(t, "all", keep)
        for s, t in {**answers, **large}.items()
        if s in answers or s in chosen
    }
    for student in sorted(answers):
        yield (
            "pool",
            {**answers, f"copy_of_{student}": copy[student]},
            {f"copy_of_{student}": student},
        )
    for four in itertools.combinations(sorted(answers), 4):
        group = {s: answers[s] for s in four}
        for student in four:
            yield (
                "five",
                {**group, f"copy_of_{student}": copy[student]},
                {f"copy_of_{student}": student},
            )
    copies = {f"copy_of_{s}": copy[s] for s in chosen}
    yield "large", {**large, **copies}, {f"copy_of_{s}": s for s in chosen}


def _stubs():
    return {grade_id(c): c.source for c in release(ASSIGNMENT).cells if is_answer(c)}


def scored(discounted: bool = True):
    """kind of class -> ([(score, shared weight, shared fingerprints, the smaller answer's
    own weight)] of independent pairs, [...] of copies), over the four parts and every class
    of that kind. ``discounted=False``: the detector before the discounts (no rarity
    weights, the k-grams reaching into the stub's lines kept)."""
    base = Release(release(ASSIGNMENT), seams=not discounted)
    memo = {}
    tally = {}
    for part, answers in pool_answers().items():
        for kind, texts, copies in classes(part, answers):
            prints = {
                s: {part: memo.get(t) or memo.setdefault(t, base.answer(t))}
                for s, t in texts.items()
            }
            rarity = class_weights(prints, part) if discounted else None
            rows = tally.setdefault(kind, ([], []))
            for a, b in itertools.combinations(sorted(prints), 2):
                copy_pair = copies.get(a) == b or copies.get(b) == a
                if not copy_pair and (a in copies or b in copies):
                    continue  # a copy against a third student: the original's pair counts
                x, y = prints[a][part], prints[b][part]
                own = min(score(x, x, rarity)[1], score(y, y, rarity)[1])  # rare weight
                rows[1 if copy_pair else 0].append((*score(x, y, rarity), own))
    return tally


def before(value: float, rare: float, shared: int) -> bool:
    """The decision before the discounts: score 0.6 and 12 fingerprints, none weighted."""
    return value >= 0.6 and shared >= 12


def after(value: float, rare: float, shared: int) -> bool:
    """The decision of compare.py."""
    return flagged("code", value, rare, shared)


def measure(discounted: bool = True, decide=after) -> dict[str, Counts]:
    """kind of class -> :class:`Counts`: with the discounts or without, and ``decide``."""
    out = {}
    for kind, (independent, copied) in scored(discounted).items():
        out[kind] = Counts(
            len(independent),
            sum(decide(*row[:3]) for row in independent),
            len(copied),
            sum(decide(*row[:3]) for row in copied),
            sum(row[3] >= CODE_MIN_RARE for row in copied),
            sum(decide(*row[:3]) for row in copied if row[3] >= CODE_MIN_RARE),
            round(max(row[0] for row in independent), 3),
            round(min(row[0] for row in copied), 3),
        )
    return out


if __name__ == "__main__":
    for name, counts in (("before", measure(False, before)), ("after", measure())):
        print(name)
        for kind, c in counts.items():
            print(f"  {kind}: {c}")
