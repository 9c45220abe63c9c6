"""Hidden checks of assignment 5, attention_at_scale: the stable and online softmax, the merge of
partial results, attention in tiles, the IO argument and decoding with a split cache.

The checks run in the judge, never in the student's kernel, each with torch on one thread
(:func:`~attncourse.judge.checks.single_threaded`). Each draws its sizes, blocks and inputs from
the run's secret (Parts 1(b) and 4(b): the graded id's own numbers), calls the student's
functions in the kernel and compares what comes back with the float64 references of
``references`` within the thresholds of ``tolerances``. The checks modules follow the course:
``softmax`` (Parts 1-2), ``tiles`` (3), ``footprint_checks`` (3(a)'s footprint, engineer
a5trace's), ``iocount`` (4), ``decoding`` (5), ``experiment`` and ``training`` (6: the data
generator, the cache's accounting, causality, one training step; the grader never trains).
"""

from attncourse.judge.checks import single_threaded

from .decoding import check_split_decode, check_split_rules
from .experiment import check_cache_elements, check_mqar_batch
from .footprint_checks import check_tiles_footprint
from .iocount import check_io_counts, check_io_mine
from .softmax import (
    check_merge,
    check_online,
    check_online_rules,
    check_own_numbers,
    check_softmax,
    check_softmax_rules,
)
from .tiles import check_causal_blocks, check_tiles_causal, check_tiles_rules, check_tiles_values
from .training import check_causality, check_train_step

# grade_id of each test cell -> the check the judge runs for it
CHECKS = {
    "p1_softmax": single_threaded(check_softmax),
    "p1_softmax_rules": single_threaded(check_softmax_rules),
    "p1_own_numbers": single_threaded(check_own_numbers),
    "p2_online": single_threaded(check_online),
    "p2_online_rules": single_threaded(check_online_rules),
    "p2_merge": single_threaded(check_merge),
    "p3_tiles_values": single_threaded(check_tiles_values),
    "p3_tiles_causal": single_threaded(check_tiles_causal),
    "p3_tiles_rules": single_threaded(check_tiles_rules),
    "p3_tiles_footprint_test": single_threaded(check_tiles_footprint),
    "p3_causal_blocks": single_threaded(check_causal_blocks),
    "p4_io_counts": single_threaded(check_io_counts),
    "p4_io_mine": single_threaded(check_io_mine),
    "p5_split_decode": single_threaded(check_split_decode),
    "p5_split_rules": single_threaded(check_split_rules),
    "p6_mqar_batch": single_threaded(check_mqar_batch),
    "p6_cache_accounting": single_threaded(check_cache_elements),
    "p6_causality": single_threaded(check_causality),
    "p6_train_step": single_threaded(check_train_step),
}
