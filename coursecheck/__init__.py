"""``coursecheck`` where attncourse is installed: the instructor's source notebooks.

Each release folder ships its own generated copy (``attncourse.prover``), which a notebook
run there imports first; this one proves the same rules through the judge itself.
"""

import sys

from attncourse.judge.tilecheck import check_tiles
from attncourse.prover import check_rules_of_course

__all__ = ["check_rules", "check_tiles"]


def check_rules(grade_id):
    """Raise RuleBroken if the code run so far breaks a rule of test cell ``grade_id``."""
    __tracebackhide__ = True
    check_rules_of_course(grade_id, sys._getframe(1).f_globals)
