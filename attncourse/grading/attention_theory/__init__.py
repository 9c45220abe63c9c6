"""Hidden checks of assignment 2, attention as a soft lookup: constructions (c)-(e), simulation (f), lab.

The checks run in the judge, never in the student's kernel: each draws its instances from the
run's secret, calls the student's function in the kernel on them (float64 tensors on the
kernel's CPU: the simulations take a CPU ``torch.Generator``) and judges the plain data that
comes back against the float64 references of ``references`` within the thresholds of
``tolerances``. The checks modules follow the set: ``constructions`` ((c)-(e)),
``simulation`` ((f) and the lab's noise sweep), ``lab``.
"""

from .constructions import (
    check_query_for_average,
    check_query_for_noisy_keys,
    check_recovery_matrix,
)
from .lab import (
    check_lab_attention,
    check_lab_is_distribution,
    check_lab_pair_distance,
    check_lab_recovery_errors,
    check_lab_weights_along,
)
from .simulation import check_lab_noise_sweep, check_sample_keys, check_simulated_outputs

# grade_id of each test cell -> the check the judge runs for it
# (tests/grading/test_assignments.py: exactly the test cells of the source notebook)
CHECKS = {
    "c_query_for_average": check_query_for_average,
    "d_recovery_matrix": check_recovery_matrix,
    "e_query_for_noisy_keys": check_query_for_noisy_keys,
    "f_sample_keys": check_sample_keys,
    "f_simulation_statistics": check_simulated_outputs,
    "lab_attention": check_lab_attention,
    "lab_weights_distribution": check_lab_is_distribution,
    "lab_sharpen_weights": check_lab_weights_along,
    "lab_pair_distance": check_lab_pair_distance,
    "lab_recovery_errors": check_lab_recovery_errors,
    "lab_noise_sweep": check_lab_noise_sweep,
}
