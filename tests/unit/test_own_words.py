"""Everything students read is in our own words: no 12-word run of the seeds' text in a notebook.

The seeds are the source problems the course restates (``../shared/seeds/*.txt`` beside
the repository). Notebooks and seeds are compared as runs of words: lower-case letter
sequences, after dropping LaTeX math (``$...$``, ``$$...$$``), LaTeX commands, numbers,
symbols and one-letter names, so shared formulas and notation never count; only prose does.

CI has no guarantee of the seeds, so the comparison uses a committed fingerprint,
``tests/data/seed_shingles.txt``: the truncated SHA-1 of every 12-word run of the seeds,
never their text. Regenerate it after a seed changes with
``.venv/bin/python tests/unit/test_own_words.py --regenerate``; where the seeds are present,
a test checks that the fingerprint is up to date.
"""

import hashlib
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT.parent / "shared" / "seeds"
FINGERPRINT = Path(__file__).resolve().parents[1] / "data" / "seed_shingles.txt"
ASSIGNMENTS = (
    "attention_worksheet",
    "attention_theory",
    "attention_variants",
    "mla_inference",
    "attention_at_scale",
)
RUN = 12  # words in a run that counts as copied
HASH_CHARS = 12  # hex digits kept of each SHA-1 (48 bits: a chance collision is ~1e-7 here)

_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.DOTALL)
_COMMAND = re.compile(r"\\[a-zA-Z]+")
_WORD = re.compile(r"[a-z]+")


def words(text):
    """The prose words of ``text``: no math, no LaTeX commands, numbers, symbols or one-letter names."""
    text = _COMMAND.sub(" ", _MATH.sub(" ", text)).lower()
    return [w for w in _WORD.findall(text) if len(w) > 1 or w == "a"]


def runs(tokens, size=RUN):
    """Every run of ``size`` consecutive words, as one string each."""
    return [" ".join(tokens[k : k + size]) for k in range(len(tokens) - size + 1)]


def fingerprint(run):
    return hashlib.sha1(run.encode()).hexdigest()[:HASH_CHARS]


def seed_fingerprints(folder=SEEDS):
    """The fingerprints of every 12-word run of every seed in ``folder``."""
    return {
        fingerprint(r)
        for path in sorted(folder.glob("*.txt"))
        for r in runs(words(path.read_text()))
    }


def committed_fingerprints():
    lines = FINGERPRINT.read_text().splitlines()
    return {line for line in lines if line and not line.startswith("#")}


def copied_runs(text, known):
    """The 12-word runs of ``text`` whose fingerprints are in ``known``, in order, overlaps merged."""
    tokens = words(text)
    hits = [k for k, r in enumerate(runs(tokens)) if fingerprint(r) in known]
    merged = []
    for k in hits:
        if merged and k <= merged[-1][1]:
            merged[-1][1] = k + RUN
        else:
            merged.append([k, k + RUN])
    return [" ".join(tokens[a:b]) for a, b in merged]


def notebook_offences(path, known):
    """``(cell label, copied run)`` for every copied run in the notebook at ``path``."""
    nb = nbformat.read(path, as_version=4)
    out = []
    for index, cell in enumerate(nb.cells):
        label = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or cell.cell_type
        out += [(f"cell {index} ({label})", run) for run in copied_runs(cell.source, known)]
    return out


NOTEBOOKS = [
    ROOT / folder / a / f"{a}.ipynb" for a in ASSIGNMENTS for folder in ("source", "release")
]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_no_notebook_repeats_twelve_words_of_a_seed(path):
    assert path.exists(), f"{path.relative_to(ROOT)} is missing"
    offences = notebook_offences(path, committed_fingerprints())
    assert not offences, f"{path.relative_to(ROOT)} repeats seed text word for word:\n" + "\n".join(
        f"  {where}: {run!r}" for where, run in offences
    )


def test_fingerprint_holds_hashes_not_text():
    known = committed_fingerprints()
    assert len(known) > 1000, "the fingerprint file is empty or truncated"
    assert all(re.fullmatch(f"[0-9a-f]{{{HASH_CHARS}}}", line) for line in known)


needs_seeds = pytest.mark.skipif(
    not SEEDS.is_dir(), reason=f"no seeds at {SEEDS}: the committed fingerprint is used alone"
)


@needs_seeds
def test_fingerprint_is_up_to_date_with_the_seeds():
    assert committed_fingerprints() == seed_fingerprints(), (
        "tests/data/seed_shingles.txt is stale: run `.venv/bin/python tests/unit/test_own_words.py "
        "--regenerate` and commit it"
    )


@needs_seeds
@pytest.mark.parametrize("seed", sorted(SEEDS.glob("*.txt")) if SEEDS.is_dir() else [])
def test_a_run_pasted_from_each_seed_is_caught(seed):
    """Control: 12 consecutive words of a seed inside a sentence of ours are found."""
    tokens = words(seed.read_text())
    middle = len(tokens) // 2
    pasted = " ".join(tokens[middle : middle + RUN])
    cell = f"As we saw last week, {pasted.capitalize()}, which we now compute with $x_1 = 2$."
    assert copied_runs(cell, committed_fingerprints()) == [pasted]


SYNTHETIC_SEED = (
    "Recall that the softmax of a vector of scores is obtained by exponentiating every entry "
    "and dividing each result by the sum of all the exponentiated entries, so that the "
    "outputs are positive and add up to one."
)


SYNTHETIC_KNOWN = {fingerprint(r) for r in runs(words(SYNTHETIC_SEED))}


def test_detector_catches_a_copied_run_and_ignores_formulas_and_numbers():
    """Control on a synthetic seed: the copy is found through math, numbers and case changes."""
    copied = (
        "Note: the SOFTMAX of a vector of scores $s \\in \\mathbb{R}^n$ is obtained by "
        "exponentiating every entry (3.5, -2) and dividing each result by the sum."
    )
    assert copied_runs(copied, SYNTHETIC_KNOWN) == [
        "the softmax of a vector of scores is obtained by exponentiating every entry and "
        "dividing each result by the sum"
    ]


def test_an_honest_paraphrase_is_not_caught():
    """Control: the same facts in other words pass, against a synthetic seed and the real ones."""
    paraphrase = (
        "To turn scores into weights, exponentiate each score and divide by the total of the "
        "exponentials: the weights come out positive and sum to one."
    )
    assert copied_runs(paraphrase, SYNTHETIC_KNOWN) == []
    # Our restatement of seed 003's question on chunked projections (worksheet, question 4).
    ours = (
        "Multi-head attention is defined with three matrices per head, but code seldom stores "
        "them that way. It multiplies $X$ once by a single $d \\times d$ matrix $W^{(q)}$, then "
        "hands head $h$ the columns $h d_h$ to $(h+1) d_h - 1$ of the product."
    )
    assert copied_runs(ours, committed_fingerprints()) == []


def regenerate():
    hashes = sorted(seed_fingerprints())
    FINGERPRINT.parent.mkdir(parents=True, exist_ok=True)
    header = (
        f"# Truncated SHA-1 ({HASH_CHARS} hex digits) of every {RUN}-word run of the seeds'\n"
        "# prose (tests/unit/test_own_words.py:words); hashes only, no seed text.\n"
        "# Regenerate: .venv/bin/python tests/unit/test_own_words.py --regenerate\n"
    )
    FINGERPRINT.write_text(header + "\n".join(hashes) + "\n")
    print(f"wrote {len(hashes)} fingerprints to {FINGERPRINT.relative_to(ROOT)}")


def report():
    """Print every copied run of every notebook (the test's findings, without stopping at one)."""
    known = committed_fingerprints()
    for path in NOTEBOOKS:
        for where, run in notebook_offences(path, known):
            print(f"{path.relative_to(ROOT)} {where}: {run}")


if __name__ == "__main__":
    if "--regenerate" in sys.argv[1:]:
        regenerate()
    else:
        report()
