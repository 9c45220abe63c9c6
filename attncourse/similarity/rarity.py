"""How much a shared fingerprint says: the rarer in the class, the more (as MOSS's ``-m``).

Two students who share a passage that many of their classmates also wrote (the four
``nn.Linear`` lines the task dictates, the ``torch.einsum`` everyone reaches for) have not
shown that one copied the other. For each part, a fingerprint's weight falls with the
number of students whose answer has it (its document frequency ``n``):

* ``n <= 2`` (one pair at most): weight 1;
* ``n >= common`` with ``common = max(COMMON_MIN, COMMON_SHARE * students)``: weight 0, the
  passage is common in this class and is ignored (MOSS ignores passages found in more than
  ``-m`` programs);
* between: ``1 - log(n / 2) / log(common / 2)``, falling from 1 to 0 with the logarithm of
  ``n`` (inverse document frequency, rescaled to the range the two ends fix).

The thresholds are calibrated with the score's in :mod:`attncourse.similarity.compare`.
"""

import math
from collections import Counter
from collections.abc import Iterable

COMMON_SHARE = 0.1  # a passage in a tenth of the class's answers to a part is common...
COMMON_MIN = 4  # ...and in at least four: a copied pair (2) and a third student stay rare


def common_count(students: int) -> float:
    """The number of answers from which a fingerprint no longer counts."""
    return max(COMMON_MIN, COMMON_SHARE * students)


def weight(n: int, students: int) -> float:
    """The weight of a fingerprint found in ``n`` of ``students`` answers to one part."""
    common = common_count(students)
    if n <= 2:
        return 1.0
    if n >= common:
        return 0.0
    return 1.0 - math.log(n / 2) / math.log(common / 2)


def weights(answers: Iterable[Iterable[int]]) -> dict[int, float]:
    """hash -> weight, from the fingerprints of every student's answer to one part."""
    answers = [set(a) for a in answers]
    counts = Counter(h for a in answers for h in a)
    return {h: weight(n, len(answers)) for h, n in counts.items()}
