"""Print each assignment's visible catch rate over its case table.

``.venv/bin/python tests/helpers/visible_rates.py [assignment ...]``: per assignment, the wrong cases
caught at every part where they lose hidden points (with and without the rule cases that
await visible rule checks), the correct cases a visible check flags, the misses, the
exceptions and the cases left to the autograded tables (``alone``).
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from casetable import load  # noqa: E402
from visiblecatch import (  # noqa: E402
    ASSIGNMENTS,
    case_verdicts,
    missed_parts,
    rule_case,
    visible_exceptions,
)


def report(assignment: str) -> None:
    """Print ``assignment``'s catch rate, false alarms and misses."""
    table = load(assignment)
    started = time.perf_counter()
    missed, alarms, wrong, right = {}, {}, [], []
    for case in table.cases:
        if case.alone:
            continue
        verdicts = case_verdicts(table, case)
        if case.correct:
            right.append(case.id)
            flagged = sorted(t for t, e in verdicts.items() if e is not None)
            if flagged:
                alarms[case.id] = flagged
        else:
            wrong.append(case.id)
            parts = missed_parts(table, case, verdicts)
            if parts:
                missed[case.id] = parts
    seconds = time.perf_counter() - started
    rules = {c for c in missed if rule_case(assignment, c)}
    plain = [c for c in wrong if c not in rules]
    print(f"== {assignment} ({len(wrong) + len(right)} cases in {seconds:.0f} s)")
    print(f"caught: {len(wrong) - len(missed)}/{len(wrong)} wrong cases")
    caught_plain = len([c for c in plain if c not in missed])
    print(f"caught, rule cases that no visible check catches left out: {caught_plain}/{len(plain)}")
    print(f"false alarms: {len(alarms)}/{len(right)} correct cases")
    for case_id, parts in sorted(missed.items()):
        tag = " (rule case)" if case_id in rules else ""
        reason = visible_exceptions(assignment).get(case_id)
        tag += f" (exception: {reason})" if reason else ""
        print(f"  missed {case_id}: {', '.join(parts)}{tag}")
    for case_id, tests in sorted(alarms.items()):
        print(f"  false alarm {case_id}: {', '.join(tests)}")
    for case in table.cases:
        if case.alone:
            print(f"  autograded only (tampers with the kernel): {case.id}")


if __name__ == "__main__":
    for name in sys.argv[1:] or ASSIGNMENTS:
        report(name)
