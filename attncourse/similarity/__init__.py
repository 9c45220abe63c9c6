"""Similarity across a class: which pairs of students wrote the same answer, part by part.

For every pair of students and every answer cell of an assignment, the two answers are
compared after normalising what copying hides, with winnowed fingerprints as MOSS does;
written answers as word shingles. The release's own text never counts, and what many
students of the class wrote alike counts less the more of them wrote it. Nothing runs: the
notebooks are only read.

Modules:

* :mod:`~attncourse.similarity.fingerprint` — one cell's normalised tokens and fingerprints;
* :mod:`~attncourse.similarity.rarity` — how much a shared fingerprint counts: the rarer
  in the class, the more;
* :mod:`~attncourse.similarity.compare` — the class's answers, every pair's score, the
  calibrated thresholds;
* :mod:`~attncourse.similarity.page` — ``attncourse similarity``: the CSV and the HTML page.

Why not ``copydetect`` (MIT, the maintained Python implementation of winnowing): it filters
whole files with Pygments into k-grams of characters; it knows no notebook cells or syntax
tree, so it cannot put independent definitions in one order or drop dead branches; it
renames attribute names (``.softmax``) like a student's own variables and keeps numbers as
written. What it would contribute here is the winnowing itself, about twenty lines
(:func:`~attncourse.similarity.fingerprint.winnow`).
"""
