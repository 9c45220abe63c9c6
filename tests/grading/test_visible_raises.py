"""A visible check whose call into the student's code raises says which part and which
exception (the student's own traceback chained below it), never a traceback into the check.

Each function a visible check of assignments 1 and 2 calls is replaced by one that raises;
the test cell must fail with an AssertionError naming its part's label (attncourse.parts) and
the exception. The control: the same cells pass with the solution's functions.
"""

import functools

import nbformat
import pytest
from visiblecatch import visible_verdicts

from attncourse.course import ROOT, notebook_path
from attncourse.parts import cell_parts

# answer cell -> (the functions it defines, the test cells that call them)
CALLS = {
    "attention_worksheet": {
        "q1a_answer": (("projection_weight_shapes",), ("q1a_projection_weight_shapes",)),
        "q1b_answer": (("activation_shapes",), ("q1b_activation_shapes",)),
        "q1c_answer": (("score_shapes",), ("q1c_score_shapes",)),
        "q1d_answer": (("output_shapes",), ("q1d_output_shapes",)),
        "q3c_answer": (("linear_from_row_weight",), ("q3c_linear_bridge",)),
        "q4c_answer": (
            ("chunk_after_projection", "project_per_head"),
            ("q4c_chunk_after_projection", "q4c_project_per_head"),
        ),
    },
    "attention_theory": {
        "c_answer": (("query_for_average",), ("c_query_for_average",)),
        "d_answer": (("recovery_matrix",), ("d_recovery_matrix",)),
        "e_answer": (("query_for_noisy_keys",), ("e_query_for_noisy_keys",)),
        "f_answer": (
            ("sample_keys", "simulate_outputs"),
            ("f_sample_keys", "f_simulation_statistics"),
        ),
        "lab_attention_answer": (("attention",), ("lab_attention",)),
        "lab_distribution_answer": (("is_distribution",), ("lab_weights_distribution",)),
        "lab_sharpen_answer": (("weights_along",), ("lab_sharpen_weights",)),
        "lab_pair_answer": (("pair_distance",), ("lab_pair_distance",)),
        "lab_recovery_answer": (("recovery_errors",), ("lab_recovery_errors",)),
        "lab_noise_answer": (("noisy_key_errors",), ("lab_noise_sweep",)),
    },
}


@functools.cache
def parts(assignment):
    nb = nbformat.read(notebook_path(ROOT, "release", assignment), as_version=4)
    return {gid: p.part for gid, p in cell_parts(nb).items()}


def _raising(names):
    return "".join(
        f"def {name}(*args, **kwargs):\n    raise ZeroDivisionError('in the student code')\n\n\n"
        for name in names
    )


CASES = [
    pytest.param(assignment, cell, names, tests, id=f"{assignment}-{cell}")
    for assignment, calls in CALLS.items()
    for cell, (names, tests) in calls.items()
]


@pytest.mark.parametrize(("assignment", "cell", "names", "tests"), CASES)
def test_a_raising_answer_is_named_with_its_part_and_exception(assignment, cell, names, tests):
    assert all(visible_verdicts(assignment, {})[test] is None for test in tests)
    verdicts = visible_verdicts(assignment, {cell: _raising(names)})
    for test in tests:
        message = verdicts[test]
        assert message is not None, f"{test} passed an answer that raises"
        assert message.startswith(f"AssertionError: {parts(assignment)[test]}: "), message
        assert "raised ZeroDivisionError: in the student code" in message, message
