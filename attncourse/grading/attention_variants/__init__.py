"""Hidden checks of the ``attention_variants`` assignment (MHA, GQA, MLA), run by the judge.

Each check takes the student's notebook as a
:class:`~attncourse.judge.remote.StudentNamespace` and runs in the grader's own process,
never in the student's kernel: it draws its dimensions and inputs from the run's secret,
sets every weight itself, calls the student's code in the kernel and compares what comes
back, as plain data, with the float64 references of ``references`` (per-head loops), within
the thresholds of ``tolerances``. Wrong answers fail with a message that names the mistake
whenever the answer reproduces one of the named wrong references computed beside the right
one. Source rules (no loops, no torch, one statement per output) are judged from the cells
the student wrote, by name. The checks modules follow the course: ``shapes`` (Parts 1-4),
``models`` (5-7), ``mha_as_gqa`` (8), ``latent`` (10, 11), ``reduced`` and ``experiment`` (13), ``cache`` (14).
"""

from .cache import check_kv_cache
from .experiment import check_experiment
from .latent import (
    check_gqa_2_mla_prints,
    check_gqa_2_mla_reconstruction,
    check_gqa_2_mla_rules,
    check_gqa_2_mla_shapes,
    check_mla_example,
)
from .mha_as_gqa import check_mha_as_gqa
from .models import (
    check_gqa_attributes,
    check_gqa_no_loops,
    check_gqa_values,
    check_mha_attributes,
    check_mha_no_loops,
    check_mha_values,
    check_tilde_rank,
)
from .reduced import check_reduced_matrices, check_reduced_matrices_rules
from .shapes import (
    check_head_shapes,
    check_output_shapes,
    check_projections,
    check_softmax_argument_shape,
    check_softmax_argument_values,
    check_stacked_shapes,
)

# grade_id of each test cell -> the check the judge runs for it (one per test cell of the
# source notebook, as tests/grading/test_assignments.py checks)
CHECKS = {
    "p1_head_shapes_test": check_head_shapes,
    "p2_stacked_shapes_test": check_stacked_shapes,
    "p2_projections_test": check_projections,
    "p3_softmax_argument_shape_test": check_softmax_argument_shape,
    "p3_softmax_argument_values_test": check_softmax_argument_values,
    "p4_output_shapes_test": check_output_shapes,
    "p5_mha_attributes_test": check_mha_attributes,
    "p5_mha_values_test": check_mha_values,
    "p5_mha_no_loops_test": check_mha_no_loops,
    "p6_tilde_rank_test": check_tilde_rank,
    "p7_gqa_attributes_test": check_gqa_attributes,
    "p7_gqa_interleaved_heads_test": check_gqa_values,
    "p7_gqa_no_loops_test": check_gqa_no_loops,
    "p8_mha_as_gqa_test": check_mha_as_gqa,
    "p10_gqa_2_mla_shapes_test": check_gqa_2_mla_shapes,
    "p10_gqa_2_mla_reconstruction_test": check_gqa_2_mla_reconstruction,
    "p10_gqa_2_mla_rules_test": check_gqa_2_mla_rules,
    "p10_gqa_2_mla_prints_test": check_gqa_2_mla_prints,
    "p11_mla_example_test": check_mla_example,
    "p13_reduced_matrices_test": check_reduced_matrices,
    "p13_reduced_matrices_rules_test": check_reduced_matrices_rules,
    "p13_experiment_test": check_experiment,
    "p14_kv_cache_test": check_kv_cache,
}
