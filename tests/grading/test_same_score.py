"""Same notebook, same score: a grade may not depend on the grader's thread count or load.

Every assignment's solution is submitted by several students and graded by ``attncourse
grade`` (two workers at once, sandboxed kernels, the judge) twice: with one torch thread per
kernel and with two, where float32 reductions split differently. Every copy, in both runs,
must get the same score in every cell, and the full autograded points. The checks compare
quantities recomputed in float64 by the judge with tolerances measured beside each threshold
(the margins scripts), never two float32 computations of different shapes, so nothing here
may vary. The same comparison for the case tables' correct alternatives runs in process
(``test_correct_alternatives_pass_with_one_and_two_torch_threads``).
"""

import io

import pytest

from attncourse.course import ROOT, assignments
from attncourse.gradebook import cell_scores
from attncourse.pipeline import grade
from devtools.autograde import prepare
from devtools.submissions import solution_submission, write_submission

COPIES = 2


@pytest.mark.slow
@pytest.mark.xdist_group("same_score")
@pytest.mark.parametrize("assignment", assignments())
def test_solution_scores_the_same_with_one_and_two_torch_threads(tmp_path, assignment):
    course = prepare(tmp_path / "course", [assignment])
    solution = solution_submission(ROOT, assignment)
    students = [f"copy{k}" for k in range(COPIES)]
    for student in students:
        write_submission(course, student, assignment, solution)
    runs = {}
    for threads in (1, 2):
        status, results = grade(
            assignment, workers=2, course=course, progress=False, out=io.StringIO(), threads=threads
        )
        assert status == 0, {s: r.status for s, r in results.items()}
        assert {r.threads_per_kernel for r in results.values()} == {threads}
        runs[threads] = cell_scores(course, assignment)

    reference = runs[1][students[0]]
    lost = {cell: s for cell, s in reference.items() if not s[2] and s[0] != s[1]}
    assert not lost, f"the solution lost autograded points with one thread: {lost}"
    variations = [
        (threads, student, cell, scores[student][cell], reference[cell])
        for threads, scores in runs.items()
        for student in students
        for cell in reference
        if scores[student][cell] != reference[cell]
    ]
    assert not variations, f"scores varied (threads, student, cell, got, first run): {variations}"
