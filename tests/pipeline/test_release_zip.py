"""make release-zip: one zip per assignment holding exactly its release folder, nothing more."""

import zipfile

import nbformat
import pytest

from attncourse.course import ROOT, assignments
from attncourse.lms import release_files, release_zip
from attncourse.prover import has_rules, prover_files

LEAKS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "Mark scheme", "attncourse")


@pytest.mark.parametrize("assignment", assignments())
def test_zip_holds_exactly_the_committed_release(assignment, tmp_path):
    out = release_zip(assignment, ROOT, tmp_path)
    src = ROOT / "release" / assignment
    expected = sorted(p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file())
    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
        assert names == [f"{assignment}/{rel}" for rel in expected]
        for rel in expected:
            data = zf.read(f"{assignment}/{rel}")
            assert data == (src / rel).read_bytes(), rel
            text = data.decode(errors="replace")
            leaked = [marker for marker in LEAKS if marker in text]
            assert not leaked, f"{rel} in the student zip contains {leaked}"
    assert f"{assignment}.ipynb" in expected


@pytest.mark.parametrize("assignment", [a for a in assignments() if has_rules(a)])
def test_zip_ships_the_generated_rule_prover_and_nothing_of_the_grading(assignment, tmp_path):
    """The zip's coursecheck/ is exactly the generated prover (no grading module, reference,
    tolerance or secret: tests/grading/test_rulecheck.py proves that of the generated files)."""
    with zipfile.ZipFile(release_zip(assignment, ROOT, tmp_path)) as zf:
        shipped = {
            name.split("/")[-1]: zf.read(name).decode()
            for name in zf.namelist()
            if name.startswith(f"{assignment}/coursecheck/")
        }
    assert shipped == prover_files(assignment)


@pytest.mark.parametrize("assignment", assignments())
def test_zip_notebook_has_no_solution_of_the_source(assignment, tmp_path):
    """Every answer cell in the zip is the stub a student starts from, not the source's solution."""
    out = release_zip(assignment, ROOT, tmp_path)
    source = nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    with zipfile.ZipFile(out) as zf:
        shipped = nbformat.reads(zf.read(f"{assignment}/{assignment}.ipynb").decode(), as_version=4)
    answers = {
        c.metadata.nbgrader["grade_id"]: c.source
        for c in source.cells
        if c.metadata.get("nbgrader", {}).get("solution")
    }
    for cell in shipped.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            assert cell.source != answers[grade_id], f"{grade_id} ships the instructor's answer"


def test_zip_skips_what_nbgrader_would_not_release_and_is_reproducible(tmp_path):
    course = tmp_path / "course"
    release = course / "release" / "demo"
    (release / "data").mkdir(parents=True)
    (release / ".ipynb_checkpoints").mkdir()
    (release / "__pycache__").mkdir()
    (release / "demo.ipynb").write_text("{}")
    (release / "data" / "keys.npy").write_bytes(b"\x93NUMPY")
    (release / ".ipynb_checkpoints" / "demo-checkpoint.ipynb").write_text("{}")
    (release / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    assert release_files(release) == ["data/keys.npy", "demo.ipynb"]
    first = release_zip("demo", course, tmp_path / "a").read_bytes()
    second = release_zip("demo", course, tmp_path / "b").read_bytes()
    assert first == second
    with zipfile.ZipFile(tmp_path / "a" / "demo.zip") as zf:
        assert zf.namelist() == ["demo/data/keys.npy", "demo/demo.ipynb"]


def test_missing_release_says_to_run_make_release(tmp_path):
    with pytest.raises(FileNotFoundError, match="make release"):
        release_zip("nothing", tmp_path, tmp_path)
