"""Submissions are files, not links: symlinks, FIFOs and devices are refused, never followed.

A student's folder holds links to the solution notebook, the gradebook and the
course's ``source/`` folder, a FIFO, a link inside a sub-folder, and one honest
data file. Whatever copies or grades it must leave the links and the FIFO out,
say why, never read through them, and keep the data file (the control that the
checks can see a file at all). The nbgrader runs here skip the kernel (no
autograde preprocessors), so they take seconds; the kernel's own view is
checked by the slow test at the end.
"""

import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import tiny_course
from tiny_course import ASSIGNMENT, SECRET
from traitlets.config.loader import PyFileConfigLoader

from attncourse.course import ROOT, notebook_path, venv_path
from attncourse.plainfiles import (
    Refusals,
    RefusedFolder,
    copy_plain_tree,
    refusal,
    refuse_submission,
    special_entries,
)

# one worker: the module's fixtures are built once (spread over workers, each built them)
pytestmark = pytest.mark.xdist_group("plain_files")

STUDENT = "mallory"
DATA = "honest data 41"
GRADEBOOK = b"SQLite format 3"
# name in the student's folder -> link target, relative to that folder (submitted/<s>/<a>/)
LINKS = {
    "solution.txt": f"../../../source/{ASSIGNMENT}/{ASSIGNMENT}.ipynb",
    "grades.db": "../../../gradebook.db",
    "course_source": "../../../source",
    "sub/deeper.txt": f"../../../../source/{ASSIGNMENT}/{ASSIGNMENT}.ipynb",
}
REFUSED = {name: "symlink" for name in LINKS} | {"pipe": "FIFO"}


def hostile_folder(folder, notebook=None, fifo=True):
    """A submission folder with LINKS, a FIFO (``pipe``), ``data.txt`` and the notebook."""
    folder = Path(folder)
    (folder / "sub").mkdir(parents=True, exist_ok=True)
    (folder / "data.txt").write_text(DATA)
    for name, target in LINKS.items():
        (folder / name).symlink_to(target)
    if fifo:
        os.mkfifo(folder / "pipe")
    if notebook is not None:
        nbformat.write(notebook, folder / f"{ASSIGNMENT}.ipynb")
    return folder


def leaks(root):
    """Files under ``root`` (never through a link) that hold the solution or the gradebook."""
    found = []
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            path = Path(dirpath, name)
            if stat.S_ISREG(os.lstat(path).st_mode):
                data = path.read_bytes()
                if SECRET.encode() in data or GRADEBOOK in data:
                    found.append(path)
    return found


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """The tiny course, released; copy it to change it."""
    return tiny_course.make_course(tmp_path_factory.mktemp("plain") / "course")


@pytest.fixture
def course(released, tmp_path):
    course = shutil.copytree(released, tmp_path / "course")
    assert (course / "gradebook.db").read_bytes().startswith(GRADEBOOK)
    return course


def submitted(course):
    return notebook_path(course, "submitted", ASSIGNMENT, STUDENT).parent


def test_refuse_submission_removes_links_and_fifos_without_following_them(course):
    folder = hostile_folder(submitted(course), tiny_course.release_notebook(course))
    refused = refuse_submission(folder)

    assert {e.split(":")[0]: e.split(": ")[1].split()[0] for e in refused} == REFUSED
    link = next(e for e in refused if e.startswith("grades.db:"))
    assert link == "grades.db: symlink to '../../../gradebook.db'"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == [
        "data.txt",
        "sub",
        f"{ASSIGNMENT}.ipynb",
    ]
    assert (folder / "data.txt").read_text() == DATA  # control: the regular file stays
    assert SECRET in (course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text()
    assert special_entries(folder) == []


def test_a_symlinked_notebook_leaves_the_list_and_is_never_read(course):
    folder = submitted(course)
    folder.mkdir(parents=True)
    notebook = folder / f"{ASSIGNMENT}.ipynb"
    notebook.symlink_to(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    notebooks = [str(notebook)]
    refusals = Refusals()
    refusals(assignment=ASSIGNMENT, student=STUDENT, notebooks=notebooks)  # the pre-convert hook
    assert notebooks == [] and not os.path.lexists(notebook)
    assert refusals.of(folder) == [f"{notebook.name}: symlink to '{notebook.resolve()}'"] or (
        refusals.of(folder)[0].startswith(f"{notebook.name}: symlink to ")
    )


def test_a_symlinked_submission_folder_is_refused_whole(course):
    folder = submitted(course)
    folder.parent.mkdir(parents=True)
    folder.symlink_to(course / "source" / ASSIGNMENT)
    assert refuse_submission(folder) == [
        f"{ASSIGNMENT}/: symlink to '{course / 'source' / ASSIGNMENT}' (the submission folder itself)"
    ]
    assert not os.path.lexists(folder) and (course / "source" / ASSIGNMENT).is_dir()
    with pytest.raises(RefusedFolder, match="symlink"):
        link = course / "link"
        link.symlink_to(course / "source")
        copy_plain_tree(link, course / "copy")


def test_copy_plain_tree_copies_files_and_folders_only(course, tmp_path):
    folder = hostile_folder(tmp_path / "inbound" / "s", tiny_course.release_notebook(course))
    (folder / "data.txt").chmod(0o640)
    dest = tmp_path / "copy"
    refused = copy_plain_tree(folder, dest, ignore=lambda d, names: [n for n in names if n == "x"])

    assert {e.split(":")[0]: e.split(": ")[1].split()[0] for e in refused} == REFUSED
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")) == [
        "data.txt",
        "sub",
        f"{ASSIGNMENT}.ipynb",
    ]
    assert (dest / "data.txt").read_text() == DATA
    assert stat.S_IMODE((dest / "data.txt").stat().st_mode) == 0o640
    assert (dest / "data.txt").stat().st_mtime == (folder / "data.txt").stat().st_mtime
    assert leaks(dest) == []


def test_course_config_registers_the_refusals():
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert config.Autograde.sanitize_preprocessors[0] == (
        "attncourse.preprocessors.refusespecialfiles.RefuseSpecialFiles"
    )
    hook = config.Autograde.pre_convert_hook
    assert isinstance(hook, Refusals) and config.RefuseSpecialFiles.refusals is hook
    assert config.ExchangeFactory.collect == "attncourse.exchange.PlainFilesCollect"


def test_the_summary_says_what_was_refused():
    from attncourse.handoffs import StudentResult
    from attncourse.pipeline import missing_reason, status_of
    from attncourse.runrecord import RunRecord

    refused = ["pipe: FIFO", "notes.txt: symlink to '../x'"]
    assert status_of(StudentResult("s", record=RunRecord(refused_files=refused))) == (
        "refused",
        "refused pipe: FIFO; notes.txt: symlink to '../x'",
    )
    faults = RunRecord(faults=[{"fault": "timeout", "cell": "p1"}], refused_files=refused[:1])
    assert status_of(StudentResult("s", record=faults)) == (
        "faults",
        "timeout in p1; refused pipe: FIFO",
    )
    nb = Path("submitted/s/a/a.ipynb")
    assert missing_reason(nb, ["a.ipynb: symlink to '/x'"]).startswith(
        "refused a.ipynb: symlink to '/x': a submission may hold only regular files"
    )
    assert missing_reason(nb, refused) == "no a.ipynb submitted"


# --- nbgrader autograde, without the kernel ------------------------------------------------


def autograde_without_kernel(course, *config_lines):
    """``nbgrader autograde`` of STUDENT up to the kernel: nbgrader's copy of the folder, the
    pre-convert hook and the sanitize stage, under the course config plus ``config_lines``."""
    with open(course / "nbgrader_config.py", "a") as fh:
        fh.write("\nc.Autograde.autograde_preprocessors = []\n")
        fh.writelines(f"{line}\n" for line in config_lines)
    return subprocess.run(
        [str(Path(sys.executable).with_name("nbgrader")), "autograde", ASSIGNMENT, "--force"],
        cwd=course,
        env={"PATH": venv_path(), "PYTHONWARNINGS": "ignore"},
        capture_output=True,
        text=True,
    )


def autograded(course):
    return notebook_path(course, "autograded", ASSIGNMENT, STUDENT)


@pytest.mark.parametrize("hook", [True, False], ids=["with-hook", "preprocessor-only"])
def test_autograde_copies_no_link_target_and_records_the_refusals(course, hook):
    # Without the hook nbgrader's own copy aborts on a FIFO (shutil.SpecialFileError): no FIFO then.
    folder = hostile_folder(submitted(course), tiny_course.release_notebook(course), fifo=hook)
    result = autograde_without_kernel(
        course, *([] if hook else ["c.Autograde.pre_convert_hook = None"])
    )
    path = autograded(course)
    assert path.exists(), result.stderr[-3000:]

    dest = path.parent
    assert leaks(dest) == [], "a link's target reached the autograded copy"
    assert (dest / "data.txt").read_text() == DATA
    assert not any(os.path.lexists(dest / name) for name in REFUSED)
    record = json.loads(path.read_text())["metadata"]["attncourse"]["refused_files"]
    expected = REFUSED if hook else {k: v for k, v in REFUSED.items() if k != "pipe"}
    assert {e.split(":")[0]: e.split(": ")[1].split()[0] for e in record} == expected
    assert "Refused" in result.stderr and "regular files and folders" in result.stderr
    assert special_entries(folder) == []


def test_control_without_the_refusals_autograde_copies_the_solution(course):
    hostile_folder(submitted(course), tiny_course.release_notebook(course), fifo=False)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    sanitize = [p for p in config.Autograde.sanitize_preprocessors if "RefuseSpecialFiles" not in p]
    result = autograde_without_kernel(
        course,
        "c.Autograde.pre_convert_hook = None",
        f"c.Autograde.sanitize_preprocessors = {sanitize!r}",
    )
    assert autograded(course).exists(), result.stderr[-3000:]
    assert {p.name for p in leaks(autograded(course).parent)} == {
        "solution.txt",
        "grades.db",
        "deeper.txt",
    }


# --- attncourse grade, with the kernel -----------------------------------------------------

PEEK = """seen = {}
for name in ["data.txt", "solution.txt", "grades.db", "course_source/tiny/tiny.ipynb",
             "sub/deeper.txt", "pipe"]:
    try:
        with open(name, "rb") as fh:
            seen[name] = fh.read(4000).decode("utf-8", "replace")
    except Exception as e:
        seen[name] = type(e).__name__
print(seen)
"""


@pytest.mark.slow
def test_attncourse_grade_refuses_links_and_the_kernel_never_sees_their_targets(course):
    from attncourse.pipeline import grade

    release = tiny_course.release_notebook(course)
    peeking = nbformat.from_dict(release)
    tiny_course.cell(peeking, "answer").source = "def answer():\n    return 1\n\n" + PEEK
    hostile_folder(submitted(course), peeking)
    linked = notebook_path(course, "submitted", ASSIGNMENT, "linker")
    linked.parent.mkdir(parents=True)
    linked.symlink_to(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")

    out = io.StringIO()
    _, results = grade(ASSIGNMENT, workers=1, course=course, progress=False, out=out)
    summary = out.getvalue()

    assert results["linker"].status == "missing"
    assert f"refused {ASSIGNMENT}.ipynb: symlink to" in results["linker"].details
    assert "never read" in results["linker"].details
    mallory = results[STUDENT]
    assert "refused" in mallory.details and "grades.db: symlink" in mallory.details
    assert "pipe: FIFO" in summary

    nb = nbformat.read(autograded(course), as_version=4)
    printed = "".join(
        o.get("text", "")
        for o in tiny_course.cell(nb, "answer").outputs
        if o.output_type == "stream"
    )
    assert DATA in printed, "control: the kernel reads the student's regular file"
    assert SECRET not in printed and "SQLite" not in printed
    assert "FileNotFoundError" in printed
    assert leaks(autograded(course).parent) == []
    assert len(nb.metadata.attncourse.refused_files) == len(REFUSED)


# What decides that an entry is a link or a special file: only plainfiles (refusal, kind_of).
_FILE_KIND = re.compile(
    r"\b(islink|is_symlink|S_ISLNK|S_ISFIFO|S_ISSOCK|S_ISCHR|S_ISBLK|S_ISREG)\b"
)
# Where a file kind is read for another purpose than collecting: why, per module.
_OTHER_PURPOSES = {
    "attncourse/plainfiles.py": "the one place that decides",
    "attncourse/lms.py": "reads a zip member's link target (kind_of refuses the member)",
    "attncourse/sandbox/filesystem.py": "the kernel's mounts (kernel side: imports nothing else)",
    "attncourse/sandbox/tempdirs.py": "the grader's own stale folders: a link is never removed",
    "attncourse/sandbox/forkstart.py": "a handed-down fork server's socket, used only when it is one",
}


def test_one_function_refuses_links_and_special_files_for_every_collector():
    """Collectors (the exchange, the LMS import, the pipeline's course bundle, the worker's
    file transfer, the sanitize preprocessor) ask ``plainfiles.refusal``; no other module
    tells links and special files apart by itself."""
    package = ROOT / "attncourse"
    deciding = sorted(
        path.relative_to(ROOT).as_posix()
        for path in package.rglob("*.py")
        if _FILE_KIND.search(path.read_text())
    )
    assert set(deciding) <= set(_OTHER_PURPOSES), deciding
    for module in ("pipeline", "lms", "worker/files", "preprocessors/refusespecialfiles"):
        assert "refusal(" in (package / f"{module}.py").read_text(), module


def test_refusal_names_a_link_and_its_target_and_passes_files_and_folders(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "folder").mkdir()
    (tmp_path / "link").symlink_to("file")
    os.mkfifo(tmp_path / "fifo")
    assert refusal(tmp_path / "file") is None and refusal(tmp_path / "folder") is None
    assert refusal(tmp_path / "link") == "symlink to 'file'"
    assert refusal(tmp_path / "fifo") == "FIFO"
    with pytest.raises(FileNotFoundError):
        refusal(tmp_path / "missing")
