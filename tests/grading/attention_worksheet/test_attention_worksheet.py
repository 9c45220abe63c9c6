"""Assignment 1 (attention worksheet), what is its own: the shared tests are in ``test_assignments``."""

from casetable import calls, kernel_requests, load, solution_namespace

from attncourse.judge import verdict

ASSIGNMENT = "attention_worksheet"


def test_checks_of_typed_answers_only_look_names_up():
    """The typed answers are compared with the worksheet's own numbers: nothing is called."""
    ns, sources = solution_namespace(ASSIGNMENT)
    checks = verdict.checks_of(ASSIGNMENT)
    for test in sorted(load(ASSIGNMENT).fixed_inputs):
        assert not calls(kernel_requests(checks[test], ns, sources, "secret-a")), test
