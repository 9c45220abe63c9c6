# Generated from the course's judge by the release build: do not edit.
"""What a broken rule raises, as the judge raises it."""


class GradingError(AssertionError):
    """A hidden test found a wrong answer; the message names the mistake."""


def fail(what, expected=None, got=None, cause=None):
    """Raise a GradingError: what was checked, what was expected, what came, the likely cause."""
    lines = [what]
    if expected is not None:
        lines.append(f"  expected: {expected}")
    if got is not None:
        lines.append(f"  got:      {got}")
    if cause:
        lines.append(f"  likely cause: {cause}")
    raise GradingError("\n".join(lines))
