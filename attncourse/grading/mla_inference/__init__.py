"""Hidden checks of assignment 4, mla_inference: RoPE, decoupled-RoPE MLA, absorbed decoding, cache sizes.

The checks run in the judge, never in the student's kernel, each with torch on one thread
(:func:`~attncourse.judge.checks.single_threaded`). Each draws its dimensions, weights,
inputs and positions from the run's secret, loads the weights into the student's own
``MLAAttention`` in the kernel (float64, on the kernel's grading device) and compares what
comes back with the float64 references of ``references`` within the thresholds of
``tolerances``. Parts 1(b), 2 and 3 carry the student's rope forward (``rope``). The checks
modules follow the course: ``rope`` (Part 1), ``attention`` (2), ``absorption`` (3(a)), ``decoding`` (3(b)),
``cache`` (4).
"""

from attncourse.judge.checks import single_threaded

from .absorption import check_latent_query
from .attention import check_mla_attributes, check_mla_forward, check_mla_rules
from .cache import check_cache_elements
from .decoding import check_decode_cache, check_decode_forward, check_decode_rules
from .rope import check_merged_score_matrix, check_rope, check_rope_rules

# grade_id of each test cell -> the check the judge runs for it
CHECKS = {
    "p1_rope": single_threaded(check_rope),
    "p1_rope_rules": single_threaded(check_rope_rules),
    "p1_merged_score_matrix": single_threaded(check_merged_score_matrix),
    "p2_mla_attributes": single_threaded(check_mla_attributes),
    "p2_mla_forward": single_threaded(check_mla_forward),
    "p2_mla_rules": single_threaded(check_mla_rules),
    "p3_latent_query": single_threaded(check_latent_query),
    "p3_decode_cache": single_threaded(check_decode_cache),
    "p3_decode_forward": single_threaded(check_decode_forward),
    "p3_decode_rules": single_threaded(check_decode_rules),
    "p4_cache_elements": single_threaded(check_cache_elements),
}
