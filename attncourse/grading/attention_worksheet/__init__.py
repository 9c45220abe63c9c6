"""Hidden checks of assignment 1, the attention worksheet (shapes, toy forward passes, block matrices).

The checks run in the judge, never in the student's kernel (see :mod:`attncourse.judge`). Each
receives the notebook's namespace as a :class:`~attncourse.judge.remote.StudentNamespace`:
typed answers (``Q``, ``SLOTS``, ``Y_mha``...) come back as plain data, and the student's
functions are called in the kernel on inputs drawn from the run's secret, as float64 tensors
on the kernel's CPU (every function here is a few small matrix products). They are compared
with the worksheet's numbers and the float64 references of ``references`` within the
thresholds of ``tolerances``. The checks modules follow the worksheet: ``shapes`` (Q1),
``slots`` (Q2), ``toy`` (Q3), ``heads`` (Q4, Q5).
"""

from functools import partial

from .heads import check_q4_split, check_q5_concat_output, check_q5_head_splits
from .shapes import check_q1_shapes
from .slots import check_q2_slots
from .toy import check_q3_linear_bridge, check_q3_toy_output, check_q3_toy_qkv

# grade_id of each test cell -> the check the judge runs for it (tests/unit/test_judge.py: one each)
CHECKS = {
    "q1a_projection_weight_shapes": partial(check_q1_shapes, part="q1a"),
    "q1b_activation_shapes": partial(check_q1_shapes, part="q1b"),
    "q1c_score_shapes": partial(check_q1_shapes, part="q1c"),
    "q1d_output_shapes": partial(check_q1_shapes, part="q1d"),
    "q2_projection_slots": partial(check_q2_slots, group="projections"),
    "q2_activation_slots": partial(check_q2_slots, group="activations"),
    "q2_combination_slots": partial(check_q2_slots, group="combination"),
    "q3a_toy_qkv": check_q3_toy_qkv,
    "q3b_toy_output": check_q3_toy_output,
    "q3c_linear_bridge": check_q3_linear_bridge,
    "q4c_chunk_after_projection": partial(check_q4_split, which="chunk_after_projection"),
    "q4c_project_per_head": partial(check_q4_split, which="project_per_head"),
    "q5a_head_splits": check_q5_head_splits,
    "q5b_concat_output": check_q5_concat_output,
}
