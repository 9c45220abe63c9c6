"""Hidden checks of assignment 5, attention_at_scale (minimal: Part 6 only, until Parts 1-5 merge)."""

from .experiment import EXPERIMENT_CHECKS

# grade_id of each test cell -> the check the judge runs for it
CHECKS = dict(EXPERIMENT_CHECKS)
