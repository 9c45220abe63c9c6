# Generated from the course's judge by the release build: do not edit.
"""The rules of this notebook's parts, proved on your own code as you ran it.

A rule test cell calls ``check_rules("<its grade id>")``: the same proof the grader runs,
on the cells you ran (``In``). Call it only from those cells: the grader reads a cell of
yours that imports this package as code it cannot verify.
"""

import sys

from .book import BOOK
from .history import RuleBroken
from .history import check_rules as _check_rules
from .tilecheck import check_tiles

__all__ = ["RuleBroken", "check_rules", "check_tiles"]


def check_rules(grade_id):
    """Raise RuleBroken if the code you ran breaks a rule of test cell ``grade_id``."""
    __tracebackhide__ = True
    _check_rules(grade_id, BOOK, sys._getframe(1).f_globals)
