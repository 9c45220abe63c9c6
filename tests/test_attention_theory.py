"""Assignment 3 (attention theory and lab): every correct alternative earns its part, every named mistake loses it.

The fast tests run each case of ``cases_attention_theory`` in this process through the
notebook's own test cells (visible and hidden parts). The slow test autogrades
the whole table with the real ``nbgrader autograde`` in one run: case k of every
group goes into submission k (groups have disjoint answer cells and tests), so
a wrong answer must lose points in exactly the tests its case names while the
other groups' cases in the same notebook keep theirs.
"""

import pytest
from cases_attention_theory import ASSIGNMENT, CASES, GROUPS
from casetable import (
    assert_case_classified,
    assert_packed_scores,
    assert_table_size,
    autograde_table,
)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_case_is_classified_in_process(case):
    assert_case_classified(ASSIGNMENT, GROUPS, case)


def test_every_question_has_enough_alternatives_and_mistakes():
    assert_table_size(CASES, lambda group: group)


@pytest.fixture(scope="module")
def autograded_table(tmp_path_factory):
    return autograde_table(
        tmp_path_factory.mktemp(ASSIGNMENT) / "course", ASSIGNMENT, CASES, GROUPS
    )


@pytest.mark.slow
@pytest.mark.xdist_group(ASSIGNMENT)
def test_nbgrader_classifies_every_case(autograded_table):
    packed, scores = autograded_table
    assert_packed_scores(packed, scores, GROUPS)
