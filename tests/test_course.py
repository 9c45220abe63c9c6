"""The course stays honest: release matches source, leaks nothing, and grades both ways."""

import re

import nbformat
import pytest

from attncourse.autograde import autograde_submissions
from attncourse.cells import grade_id
from attncourse.course import ROOT, assignments, nbgrader, notebook_path, scratch_course
from attncourse.submissions import solution_submission

ASSIGNMENTS = assignments()
LEAK_MARKERS = (
    "BEGIN SOLUTION",
    "END SOLUTION",
    "BEGIN HIDDEN TESTS",
    "END HIDDEN TESTS",
    "BEGIN MARK SCHEME",
    "Mark scheme",
    "attncourse",
)


def read(path):
    return nbformat.read(path, as_version=4)


def normalized(nb):
    """A notebook's content without what nbgrader regenerates (checksums, cell ids)."""
    cells = []
    for cell in nb.cells:
        meta = dict(cell.get("metadata", {}).get("nbgrader", {}))
        meta.pop("checksum", None)
        cells.append((cell.cell_type, cell.source, sorted(meta.items())))
    return cells


@pytest.fixture(scope="module")
def fresh_release(tmp_path_factory):
    """release/ rebuilt from source/ by nbgrader in a scratch copy of the course."""
    course = scratch_course(tmp_path_factory.mktemp("fresh") / "course")
    for assignment in ASSIGNMENTS:
        nbgrader("generate_assignment", assignment, "--force", cwd=course, check=False, quiet=True)
    return course


def test_every_assignment_has_a_notebook():
    assert ASSIGNMENTS, "source/ holds no assignment"
    for assignment in ASSIGNMENTS:
        assert notebook_path(ROOT, "source", assignment).exists(), assignment


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_equals_fresh_build_of_source(assignment, fresh_release):
    committed = notebook_path(ROOT, "release", assignment)
    assert committed.exists(), f"release/{assignment} is missing: run `make release` and commit it"
    built = notebook_path(fresh_release, "release", assignment)
    assert built.exists(), (
        f"nbgrader generate_assignment {assignment} fails on source/{assignment}: "
        f"run `make release` to see nbgrader's error"
    )
    fresh = read(built)
    mine = read(committed)
    for index, (a, b) in enumerate(zip(normalized(mine), normalized(fresh), strict=False)):
        assert a == b, (
            f"release/{assignment} cell {index} differs from a fresh build of source/{assignment}: "
            "source/ was edited without rebuilding; run `make release` and commit release/"
        )
    assert len(mine.cells) == len(fresh.cells), (
        f"release/{assignment} has {len(mine.cells)} cells, a fresh build has {len(fresh.cells)}: "
        "run `make release` and commit release/"
    )
    files = {p.name for p in committed.parent.iterdir()}
    fresh_files = {
        p.name for p in notebook_path(fresh_release, "release", assignment).parent.iterdir()
    }
    assert files == fresh_files, f"release/{assignment} files {files} != fresh build {fresh_files}"


def _solution_lines(source_nb):
    """Lines only the instructor's regions hold, long enough to betray an answer.

    A line that also stands outside every solution, hidden-test and mark-scheme
    region (a signature repeated in a call, say) is public and not counted.
    """
    secret, public = set(), set()
    for cell in source_nb.cells:
        inside = False
        for line in cell.source.split("\n"):
            if re.search(r"BEGIN (SOLUTION|HIDDEN TESTS|MARK SCHEME)", line):
                inside = True
            elif re.search(r"END (SOLUTION|HIDDEN TESTS|MARK SCHEME)", line):
                inside = False
            elif len(line.strip()) >= 25:
                (secret if inside else public).add(line.strip())
    public_text = "\n".join(public)
    return {line for line in secret if line not in public_text}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_contains_no_solution_hidden_test_or_instructor_text(assignment):
    folder = notebook_path(ROOT, "release", assignment).parent
    secret_lines = _solution_lines(read(notebook_path(ROOT, "source", assignment)))
    for path in folder.rglob("*"):
        if not path.is_file():
            continue
        text = path.read_text(errors="replace")
        for marker in LEAK_MARKERS:
            assert marker not in text, f"{path.relative_to(ROOT)} contains {marker!r}"
        leaked = [line for line in secret_lines if line in text]
        assert not leaked, f"{path.relative_to(ROOT)} leaks instructor lines: {leaked[:3]}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_grade_ids_are_unique_and_graded_cells_have_points(assignment):
    nb = read(notebook_path(ROOT, "source", assignment))
    ids = [grade_id(c) for c in nb.cells if grade_id(c)]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert not duplicates, f"duplicate grade_ids in source/{assignment}: {duplicates}"
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade"):
            assert meta.get("points", 0) > 0, f"graded cell {meta.get('grade_id')} has no points"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_source_notebook_outputs_are_stripped(assignment):
    nb = read(notebook_path(ROOT, "source", assignment))
    dirty = [
        grade_id(c) or index
        for index, c in enumerate(nb.cells)
        if c.cell_type == "code" and (c.outputs or c.execution_count is not None)
    ]
    assert not dirty, f"source/{assignment} cells with outputs: {dirty}"


@pytest.fixture(scope="module", params=ASSIGNMENTS)
def both_directions(request, tmp_path_factory):
    """The solution and the untouched release of one assignment, autograded as submissions."""
    assignment = request.param
    release = read(notebook_path(ROOT, "release", assignment))
    course = tmp_path_factory.mktemp(assignment) / "course"
    scores = autograde_submissions(
        course,
        assignment,
        {"solution": solution_submission(ROOT, assignment), "untouched": release},
    )
    return assignment, scores, course


def _autograded(assignment, grades):
    """The grades of the autograder test cells (graded, not an answer cell) of ``assignment``."""
    nb = read(notebook_path(ROOT, "source", assignment))
    tests = {
        grade_id(c)
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("grade")
        and not c.metadata["nbgrader"].get("solution")
    }
    return {k: v for k, v in grades.items() if k in tests}


@pytest.mark.slow
@pytest.mark.xdist_group("both_directions")
def test_solution_gets_every_autograded_point(both_directions):
    assignment, scores, _ = both_directions
    grades = _autograded(assignment, scores["solution"])
    assert grades, f"{assignment}: the solution has no autograded cells (did grading crash?)"
    lost = {k: v[:2] for k, v in grades.items() if v[0] != v[1]}
    assert not lost, f"{assignment}: the instructor solution loses points in {lost}"


@pytest.mark.slow
@pytest.mark.xdist_group("both_directions")
def test_untouched_release_gets_zero_without_crashing(both_directions):
    assignment, scores, course = both_directions
    assert "untouched" in scores, f"{assignment}: grading the untouched release crashed"
    graded = notebook_path(course, "autograded", assignment, "untouched")
    assert graded.exists(), f"{assignment}: no autograded notebook for the untouched release"
    grades = _autograded(assignment, scores["untouched"])
    earned = {k: v[:2] for k, v in grades.items() if v[0]}
    assert not earned, f"{assignment}: the untouched release earns points in {earned}"
    solution_cells = set(_autograded(assignment, scores["solution"]))
    assert set(grades) == solution_cells, "the untouched release was not graded on every test cell"
