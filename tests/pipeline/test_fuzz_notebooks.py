"""Hostile notebooks generated, not only written (tests/helpers/hostilefiles.py), on the real grading path.

Properties, for every generated submission: the grader never crashes and never runs past its
budget; the student ends with a gradebook row or a named refusal (unreadable or refused, with
its reason); an honest student graded in the same run keeps exactly its score.

- ``test_sanitize_*`` (fast, seeded, FUZZ_EXAMPLES = 200: about 0.2 s of CPU a file): the file through nbgrader's own
  ``Autograde`` converter's first stage with the course's configuration (the tolerant exporter,
  the limits, the repairs, nbgrader's sanitizing steps), in-process: what a submission meets
  before any kernel starts, where most generated files are refused or read.
- ``test_autograde_batch_*`` (slow, seeded, FUZZ_BATCH = 4 students): one ``nbgrader
  autograde`` run grades the generated students and the full solution together.

``make test`` runs the defaults (about a minute and a half together); ``make test-fast`` draws
40 files (FUZZ_EXAMPLES=40); ``make fuzz`` runs both with thousands (FUZZ_EXAMPLES=3000
FUZZ_BATCH=120).
"""

import json
import os
import time

import nbformat
import pytest
from hostilefiles import submission_files
from hypothesis import HealthCheck, Phase, event, given, seed, settings
from hypothesis import strategies as st
from nbgrader.converters import Autograde
from nbgrader.coursedir import CourseDirectory

from attncourse.cells import grade_id, is_answer, is_test_cell
from attncourse.constants import AUTOGRADED, RELEASE, SUBMITTED
from attncourse.course import ROOT, course_config, nbgrader, notebook_path
from attncourse.gradebook import cell_scores
from attncourse.pointers import cell_places
from attncourse.runrecord import RunRecord
from devtools.autograde import prepare
from devtools.submissions import solution_submission, write_submission

ASSIGNMENT = "attention_worksheet"  # the fewest judge requests per notebook: cheapest to grade
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "200"))
BATCH = int(os.environ.get("FUZZ_BATCH", "4"))
SEED = int(os.environ.get("FUZZ_SEED", "35"))
BUDGET_S = 30  # one file through the sanitize stage, on a loaded machine

RELEASE_NB = nbformat.read(notebook_path(ROOT, RELEASE, ASSIGNMENT), as_version=4)
GRADE_IDS = [g for g in map(grade_id, RELEASE_NB.cells) if g]
FILES = st.one_of(
    submission_files(RELEASE_NB, GRADE_IDS),
    submission_files(solution_submission(ROOT, ASSIGNMENT), GRADE_IDS),
)

# one worker: the module's fixtures are built once (spread over workers, each built them)
pytestmark = pytest.mark.xdist_group("fuzz_notebooks")


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return prepare(tmp_path_factory.mktemp("fuzz") / "course", [ASSIGNMENT])


def sanitize(course, data: bytes) -> str:
    """``data`` as student "fuzz"'s notebook through autograde's sanitize stage: the text it
    writes into ``autograded/``."""
    path = notebook_path(course, SUBMITTED, ASSIGNMENT, "fuzz")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    config = course_config(course)
    converter = Autograde(coursedir=CourseDirectory(config=config, root=str(course)), config=config)
    converter.exporter = converter.exporter_class(parent=converter, config=converter.config)
    converter._sanitizing = True
    converter._init_preprocessors()
    resources = converter.init_single_notebook_resources(str(path))
    output, _ = converter.exporter.from_filename(str(path), resources=resources)
    return output


def outcome(nb) -> str:
    """ "refused", "unreadable" (each with a reason) or "read"; fails on a refusal without one."""
    record = RunRecord.of(nb)
    for said in ("refused", "unreadable"):
        reason = getattr(record, said)
        if reason is not None:
            assert isinstance(reason, str) and len(reason) > 5, reason
            return said
    return "read"


@seed(SEED)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    phases=[Phase.generate],  # each failure is reported as drawn: shrinking files takes minutes
    suppress_health_check=list(HealthCheck),
)
@given(data=FILES)
def test_sanitize_reads_or_refuses_every_file_by_name_within_budget(course, data):
    started = time.process_time()
    output = sanitize(course, data.data)
    assert time.process_time() - started < BUDGET_S
    output.encode("utf-8")  # nbgrader writes it as UTF-8 (a lone surrogate must not reach it)
    nb = nbformat.reads(output, as_version=4)
    said = outcome(nb)
    event(said)
    event(f"{data.how.split()[0]}: {said}")  # by kind of file (make fuzz's counts)
    if said == "read":  # every grade cell of the release, once: autograde can score it
        present = [g for g in map(grade_id, nb.cells) if g]
        assert sorted(present) == sorted(GRADE_IDS)
        event(f"faults: {bool(RunRecord.of(nb).faults)}")


def test_a_damaged_test_cell_is_put_back_and_a_damaged_answer_costs_that_answer(course):
    """Through the sanitize stage, no kernel: a test cell whose metadata nbformat's reader
    gives up on is replaced by a note, then put back from the release (RepairGradeCells); an
    answer cell whose source it gives up on loses that answer (the release's stub is graded);
    every other answer stays the student's. The control: the same solution undamaged."""
    honest = solution_submission(ROOT, ASSIGNMENT)
    control = nbformat.reads(sanitize(course, nbformat.writes(honest).encode()), as_version=4)
    graded = [i for i, c in enumerate(honest.cells) if grade_id(c)]
    test = next(i for i in graded if is_test_cell(honest.cells[i]))
    answer = next(i for i in graded if is_answer(honest.cells[i]) and i > test)
    test_id, answer_id = grade_id(honest.cells[test]), grade_id(honest.cells[answer])
    nb = json.loads(nbformat.writes(honest))
    nb["cells"][test]["metadata"] = [1]
    nb["cells"][answer]["source"] = [1, 2]
    out = nbformat.reads(sanitize(course, json.dumps(nb).encode()), as_version=4)
    assert outcome(out) == outcome(control) == "read"
    sources = {grade_id(c): c.source for c in out.cells if grade_id(c)}
    kept = {grade_id(c): c.source for c in control.cells if grade_id(c)}
    stub = next(c.source for c in RELEASE_NB.cells if grade_id(c) == answer_id)
    assert sources[test_id] == kept[test_id]
    assert sources[answer_id] == stub != kept[answer_id]
    assert {g: s for g, s in sources.items() if g != answer_id} == {
        g: s for g, s in kept.items() if g != answer_id
    }
    repairs = RunRecord.of(out).repairs
    assert len(repairs) == 4, repairs
    assert "its metadata is a list, not an object; it was replaced by a note" in repairs[0]
    name = f"{cell_places(honest)[answer].name} (`{answer_id}`)"
    assert repairs[1].startswith(f"{name} could not be read: its source is a list")
    assert (
        repairs[2].startswith("restored the test cell of")
        and "which was deleted" in repairs[2]
        and test_id in repairs[2]
    )
    assert (
        repairs[3].startswith("restored the answer cell of")
        and "which was deleted" in repairs[3]
        and answer_id in repairs[3]
    )
    assert RunRecord.of(control).repairs == []


def test_nbgrader_metadata_without_its_schema_version_costs_nothing(course):
    """An answer cell whose nbgrader metadata lost its ``schema_version`` (found by the fuzz)
    made nbgrader's CheckCellMetadata raise, ending the grading with no row: its metadata is
    now dropped as malformed and put back from the release, the answer kept (a copy of the
    cell beside it too). The control: the same solution with the version in place."""
    honest = solution_submission(ROOT, ASSIGNMENT)
    answer = next(i for i, c in enumerate(honest.cells) if is_answer(c))
    for copies in (1, 2):
        nb = json.loads(nbformat.writes(honest))
        del nb["cells"][answer]["metadata"]["nbgrader"]["schema_version"]
        nb["cells"][answer:answer] = [json.loads(json.dumps(nb["cells"][answer]))] * (copies - 1)
        out = nbformat.reads(sanitize(course, json.dumps(nb).encode()), as_version=4)
        assert outcome(out) == "read"
        sources = {grade_id(c): c.source for c in out.cells if grade_id(c)}
        assert sources[grade_id(honest.cells[answer])] == honest.cells[answer].source
        assert any("nbgrader metadata" in r for r in RunRecord.of(out).repairs)


@pytest.mark.slow
@pytest.mark.kernel
@seed(SEED)
@settings(max_examples=1, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(files=st.lists(FILES, min_size=BATCH, max_size=BATCH))
def test_autograde_batch_gives_every_student_a_row_or_a_named_refusal(tmp_path_factory, files):
    course = prepare(tmp_path_factory.mktemp("fuzzbatch") / "course", [ASSIGNMENT])
    honest = solution_submission(ROOT, ASSIGNMENT)
    write_submission(course, "honest", ASSIGNMENT, honest)
    students = [f"fuzz{k:04d}" for k in range(len(files))]
    for student, data in zip(students, files, strict=True):
        path = notebook_path(course, SUBMITTED, ASSIGNMENT, student)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.data)
    budget = 120 + 60 * len(files)  # no student may hang the run
    started = time.monotonic()
    nbgrader("autograde", ASSIGNMENT, "--force", cwd=course, check=False, quiet=True)
    assert time.monotonic() - started < budget
    scores = cell_scores(course, ASSIGNMENT)
    # The full solution scores every autograded cell in full, as it does graded alone.
    auto = [(score, top) for score, top, manual in scores["honest"].values() if not manual]
    assert auto and all(score == top for score, top in auto)
    ended = {}
    for student in students:
        graded = notebook_path(course, AUTOGRADED, ASSIGNMENT, student)
        if student in scores:
            ended[student] = "row"
        elif graded.exists():
            ended[student] = outcome(nbformat.read(graded, as_version=4))
        else:
            ended[student] = "nothing"
    assert [s for s, how in ended.items() if how in ("nothing", "read")] == []
