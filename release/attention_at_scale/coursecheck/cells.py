# Generated from the course's judge by the release build: do not edit.
"""A code cell as the rules read it."""

from dataclasses import dataclass


@dataclass(frozen=True)
class CodeCell:
    """A code cell as the judge's source rules read it: its place, text and role."""

    index: int  # position in the notebook
    source: str
    grade_id: str | None = None
    student: bool = True  # written by the student: an answer cell or a cell they added
    answer: bool = False  # an nbgrader solution cell
    test: bool = False  # an autograder test cell (never part of the student's code)
    part: str = ""  # its part ("Part 5"); "" for a cell of no part (a cell the student added)
    place: str = ""  # what it is: "the answer cell", "a cell you added after Part 5"
