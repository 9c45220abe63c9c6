"""Same notebook, same score: a grade may not depend on the grader's thread count or load.

Every assignment's solution is submitted by several students and graded by ``attncourse
grade`` (two workers at once, sandboxed kernels, the judge) twice: with one torch thread per
kernel and with two, where float32 reductions split differently. Every copy, in both runs,
must get the same score in every cell, and the full autograded points. The checks compare
quantities recomputed in float64 by the judge with tolerances measured beside each threshold
(the margins scripts), never two float32 computations of different shapes, so nothing here
may vary. The same comparison for the case tables' correct alternatives runs in process
(``test_correct_alternatives_pass_with_one_and_two_torch_threads``).

The five assignments grade on one running Dask cluster of two workers, started once for the
module (a cluster per run cost more than the grading). Each copy has a cell of its own that
prints the kernel's torch threads: the thread count asked for must reach the kernels, not
only the task's report of it.
"""

import io

import nbformat
import pytest

from attncourse.constants import AUTOGRADED
from attncourse.course import ROOT, assignments, notebook_path
from attncourse.gradebook import cell_scores
from attncourse.pipeline import grade
from devtools.autograde import prepare
from devtools.submissions import solution_submission, write_submission

COPIES = 2
# A cell of the student's own, right after the first (its imports: a cell that imports again
# breaks the import rule and loses points), before any cell of the course sets the threads
# itself (attention_at_scale's sweep runs on one): the threads the kernel was given.
PROBE = 'print(f"torch threads: {torch.get_num_threads()}")\n'


def kernel_threads(course, assignment, student):
    """The torch threads the probe cell printed in ``student``'s autograded notebook."""
    nb = nbformat.read(notebook_path(course, AUTOGRADED, assignment, student), as_version=4)
    (probe,) = [c for c in nb.cells if c.source == PROBE]
    printed = "".join(o.get("text", "") for o in probe.get("outputs", []))
    return printed.strip()


@pytest.mark.slow
@pytest.mark.xdist_group("same_score")
@pytest.mark.parametrize("assignment", assignments())
def test_solution_scores_the_same_with_one_and_two_torch_threads(
    tmp_path, assignment, module_dask_cluster
):
    course = prepare(tmp_path / "course", [assignment])
    solution = solution_submission(ROOT, assignment)
    first = next(k for k, c in enumerate(solution.cells) if c.cell_type == "code")
    solution.cells.insert(first + 1, nbformat.v4.new_code_cell(PROBE))
    students = [f"copy{k}" for k in range(COPIES)]
    for student in students:
        write_submission(course, student, assignment, solution)
    runs = {}
    for threads in (1, 2):
        status, results = grade(
            assignment,
            course=course,
            progress=False,
            out=io.StringIO(),
            threads=threads,
            scheduler=module_dask_cluster.address,
        )
        assert status == 0, {s: r.status for s, r in results.items()}
        assert {r.worker for r in results.values()} <= set(module_dask_cluster.workers)
        assert {r.threads_per_kernel for r in results.values()} == {threads}
        kernels = {s: kernel_threads(course, assignment, s) for s in students}
        expected = dict.fromkeys(students, f"torch threads: {threads}")
        assert kernels == expected, (
            f"{threads} thread(s) asked: the kernels printed {kernels}; the task reported "
            f"{ {s: r.threads_per_kernel for s, r in results.items()} }, so the count did not "
            "reach the kernels (the grading process's OMP_NUM_THREADS, the fork server)"
        )
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
