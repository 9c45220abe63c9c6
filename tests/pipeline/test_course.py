"""The course stays honest: release matches source and leaks nothing.

That the solution earns every autograded point and the untouched release none is checked
by the slow layer of ``test_assignments`` (one nbgrader run per assignment), not here again.
"""

import re

import nbformat
import pytest

from attncourse.cells import grade_id
from attncourse.course import ROOT, assignments, nbgrader, notebook_path, scratch_course
from attncourse.lms import release_files
from attncourse.prover import write_prover

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

# one worker: the module's fixtures are built once (spread over workers, each built them)
pytestmark = pytest.mark.xdist_group("course")


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
        if notebook_path(course, "release", assignment).exists():
            write_prover(assignment, course)  # as `attncourse release` does
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
    files, fresh_files = released(committed.parent), released(built.parent)
    assert set(files) == set(fresh_files), (
        f"release/{assignment} files {sorted(files)} != fresh build {sorted(fresh_files)}"
    )
    stale = [name for name in files if name.endswith(".py") and files[name] != fresh_files[name]]
    assert not stale, f"release/{assignment}: {stale} differ from a fresh build: run `make release`"


def released(folder):
    """relative path -> bytes of every file nbgrader would release from ``folder``."""
    return {rel: (folder / rel).read_bytes() for rel in release_files(folder)}


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
