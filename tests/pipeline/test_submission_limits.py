"""The price of one submission (attncourse.preprocessors.submissionlimits): each limit refuses
only the cells over it, naming the limit and the cell; an honest notebook passes untouched;
the outputs a file carries are cleared before anything reads them.

The hostile notebooks are those ``make price`` measures (devtools/hostile.py); the graded run
beside an honest student is in test_submission_limits_graded.py.
"""

import copy
import io
import json
import time

import nbformat
import pytest

from attncourse.cells import grade_id, is_answer
from attncourse.course import ROOT
from attncourse.pointers import cell_places
from attncourse.preprocessors.submissionlimits import SubmissionLimits, refusal
from attncourse.runrecord import RunRecord
from attncourse.status import Status, status_of
from attncourse.tolerantexporter import TolerantNotebookExporter
from devtools import hostile
from devtools.submissions import solution_submission

# one worker: the module's fixtures are built once (spread over workers, each built them)
pytestmark = pytest.mark.xdist_group("submission_limits")

ASSIGNMENTS = ["attention_theory", "attention_variants", "attention_worksheet", "mla_inference"]


def limited(nb, **limits):
    """``nb`` after the limits (defaults unless given) and its run record's faults."""
    out, _ = SubmissionLimits(**limits).preprocess(copy.deepcopy(nb), {})
    return out, RunRecord.of(out).faults


@pytest.fixture(scope="module")
def honest():
    return solution_submission(ROOT, "attention_variants")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_an_honest_notebook_passes_every_limit_untouched(assignment):
    nb = solution_submission(ROOT, assignment)
    out, faults = limited(nb)
    assert faults == []
    assert [c.source for c in out.cells] == [c.source for c in nb.cells]
    assert not any(refusal(c) for c in out.cells)


def test_a_cell_over_the_source_limit_alone_is_refused_naming_limit_and_cell(honest):
    nb = copy.deepcopy(honest)
    big = "x = 1\n" * 20_000  # 120 kB
    nb.cells.append(nbformat.v4.new_code_cell(big))
    out, faults = limited(nb)
    assert [f["where"] for f in faults] == ["a cell you added after Part 14"]
    assert "SubmissionLimits.max_cell_source_bytes" in faults[0]["fault"]
    assert "120,000 bytes" in faults[0]["fault"]
    assert out.cells[-1].source == "" and "max_cell_source_bytes" in refusal(out.cells[-1])
    assert [c.source for c in out.cells[:-1]] == [c.source for c in honest.cells]


def test_an_answer_cell_over_a_limit_is_named_by_its_part_and_grade_id(honest):
    nb = copy.deepcopy(honest)
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    answer.source = "y = " + "[" * 90 + "1" + "]" * 90 + "\n" + answer.source
    _, faults = limited(nb, max_parse_depth=50)
    gid = answer.metadata.nbgrader.grade_id
    assert len(faults) == 1 and f"the answer cell of Part 1 (`{gid}`)" in faults[0]["where"]
    assert "nests more than 50 deep" in faults[0]["fault"]
    assert "SubmissionLimits.max_parse_depth" in faults[0]["fault"]


def test_cells_past_the_limit_are_dropped_and_the_course_cells_kept(honest):
    nb = hostile.many_cells(honest, 2_000)
    out, faults = limited(nb, max_cells=100)
    assert len(out.cells) == 100
    assert [c.source for c in out.cells[: len(honest.cells)]] == [c.source for c in honest.cells]
    assert faults[0]["where"] == "the 1,967 cells past the first 100"
    assert "SubmissionLimits.max_cells" in faults[0]["fault"]


def test_forged_grade_ids_past_the_limit_cannot_crowd_out_the_course(honest):
    nb = copy.deepcopy(honest)
    forged = [nbformat.v4.new_code_cell("_ = 1") for _ in range(300)]
    for k, cell in enumerate(forged):
        cell.metadata["nbgrader"] = {"grade_id": f"forged_{k}", "solution": True}
    nb.cells = forged + nb.cells
    out, _ = limited(nb, max_cells=200)
    assert len(out.cells) == 200  # the release's cells are put back by RepairGradeCells


def test_the_parse_bomb_is_refused_past_the_byte_budget_and_cheaply(honest):
    nb = hostile.parse_bomb(honest)
    out, faults = limited(nb)
    kept = sum(len(c.source) for c in out.cells[len(honest.cells) :])
    assert kept <= 200_000
    text = " ".join(f["fault"] for f in faults)
    assert "SubmissionLimits.max_parse_bytes" in text
    assert "SubmissionLimits.max_cell_source_bytes" in text
    assert all(f["where"].startswith("a cell you added after Part 14") for f in faults)
    assert [c.source for c in out.cells[: len(honest.cells)]] == [c.source for c in honest.cells]


def test_a_refusal_mark_in_the_submitted_file_is_dropped(honest):
    nb = copy.deepcopy(honest)
    nb.cells[3].metadata["attncourse"] = {"refused": "forged"}
    nb.cells[4].metadata["attncourse"] = "not even a dict"
    out, faults = limited(nb)
    assert faults == [] and not any(refusal(c) for c in out.cells)


def test_a_file_over_the_size_limit_is_refused_whole_before_it_is_parsed(honest):
    data = nbformat.writes(hostile.attachment(honest, megabytes=2))
    exporter = TolerantNotebookExporter()
    exporter.config.SubmissionLimits.max_notebook_bytes = 1_000_000
    stream = io.StringIO(data)
    text, _ = exporter.from_file(stream)
    assert stream.tell() == 1_000_001  # no more than the limit and one byte was read
    nb = nbformat.reads(text, as_version=4)
    status = status_of(nb)
    assert status.status is Status.REFUSED
    assert "SubmissionLimits.max_notebook_bytes" in status.reason and "1,000,000" in status.reason
    assert "within the course's limits" in status.next_step


def test_a_file_within_the_size_limit_is_read_as_usual(honest):
    text, _ = TolerantNotebookExporter().from_file(io.StringIO(nbformat.writes(honest)))
    nb = nbformat.reads(text, as_version=4)
    assert RunRecord.of(nb).refused is None and len(nb.cells) == len(honest.cells)


def read(nb, **limits):
    """``nb`` written and read as autograde reads a submitted file, then held to the limits:
    the notebook, its run record's faults and the CPU seconds of the reading."""
    exporter = TolerantNotebookExporter()
    for name, value in limits.items():
        setattr(exporter.config.SubmissionLimits, name, value)
    data = json.dumps(nb)  # as saved, even outside the schema
    started = time.process_time()
    text, resources = exporter.from_file(io.StringIO(data))
    seconds = time.process_time() - started
    out, _ = SubmissionLimits(**limits).preprocess(nbformat.reads(text, as_version=4), resources)
    return out, RunRecord.of(out).faults, seconds


def test_outputs_a_file_carries_are_cleared_unread_at_no_cost_to_anyone(honest):
    """80,000 outputs saved in the file (3.3 MB): schema-checked one by one they cost 30 s
    and more; cleared before the check, the file reads about as fast as the honest one, and
    the student loses nothing (outputs are made again when the notebook runs)."""
    control, control_faults, control_s = read(honest)
    hostile_nb = hostile.carried_outputs(honest)
    assert len(json.dumps(hostile_nb)) > 3_000_000
    out, faults, seconds = read(hostile_nb)
    assert seconds < 1.0, f"{seconds:.2f} s (the honest notebook: {control_s:.2f} s)"
    assert faults == control_faults == []
    assert [c.source for c in out.cells] == [c.source for c in control.cells]
    assert all(c.outputs == [] for c in out.cells if c.cell_type == "code")


def test_attachments_past_the_limit_are_dropped_naming_the_cell_and_limit(honest):
    out, faults, _ = read(hostile.attachment(honest, megabytes=3), max_attachment_bytes=2_000_000)
    assert [f["where"] for f in faults] == ["a cell you added after Part 14"]
    assert "SubmissionLimits.max_attachment_bytes" in faults[0]["fault"]
    assert "attachments" not in out.cells[-1]
    assert [c.source for c in out.cells] == [c.source for c in honest.cells] + [
        out.cells[-1].source
    ]


def test_attachments_within_the_limit_are_kept(honest):
    out, faults, _ = read(hostile.attachment(honest, megabytes=1), max_attachment_bytes=2_000_000)
    assert faults == [] and "x.png" in out.cells[-1].attachments


def test_every_limit_is_a_configurable_trait_with_help():
    traits = SubmissionLimits.class_traits(config=True)
    limits = [name for name in traits if name.startswith("max_")]
    assert limits == sorted(
        [
            "max_notebook_bytes",
            "max_cells",
            "max_cell_source_bytes",
            "max_parse_depth",
            "max_parse_bytes",
            "max_attachment_bytes",
        ]
    )
    assert all(traits[name].help for name in limits)


def test_a_cell_outside_the_format_is_replaced_and_the_repair_reaches_the_record(honest):
    """The exporter's repair (a cell outside nbformat's schema replaced by a note) reaches the
    run record past its reset on entry, which drops what the file itself carries there: a
    forged repair is gone, the real one stays."""
    from attncourse.constants import METADATA_KEY
    from attncourse.preprocessors.refusespecialfiles import RefuseSpecialFiles

    nb = json.loads(nbformat.writes(honest))
    bad = {
        "cell_type": "code",
        "metadata": {},
        "source": "x",
        "outputs": [],
        "execution_count": None,
        "a key the format has not": 1,
    }
    nb["cells"].append(bad)
    nb["metadata"][METADATA_KEY] = {"repairs": ["forged: nothing was repaired"]}
    text, resources = TolerantNotebookExporter().from_file(io.StringIO(json.dumps(nb)))
    out, _ = RefuseSpecialFiles().preprocess(nbformat.reads(text, as_version=4), resources)
    assert out.cells[-1].source.startswith("**This cell could not be read:**")
    repairs = RunRecord.of(out).repairs
    assert len(repairs) == 1 and "was replaced by a note" in repairs[0], repairs
    # the control: a file without such a cell has no repair, and the forged one is dropped
    del nb["cells"][-1]
    text, resources = TolerantNotebookExporter().from_file(io.StringIO(json.dumps(nb)))
    out, _ = RefuseSpecialFiles().preprocess(nbformat.reads(text, as_version=4), resources)
    assert RunRecord.of(out).repairs == []


# A cell's field of a shape nbformat's reader (not only its validator) gives up on, for the
# whole file: (the cell it is given to, the change, what is lost, words of the repair).
# "attachments": only the cell's attachments are lost; "cell": the cell is replaced by a note.
ANSWER, MARKDOWN = "answer", "markdown"
DAMAGE = {
    "attachments a list": (MARKDOWN, {"attachments": [1, 2]}, "attachments", "they are a list"),
    "attachments a string": (MARKDOWN, {"attachments": "x.png"}, "attachments", "a string"),
    "attachments a number": (MARKDOWN, {"attachments": 3}, "attachments", "they are a number"),
    "attachment not a mime bundle": (
        MARKDOWN,
        {"attachments": {"x.png": "iVBORw0KGgo="}},
        "attachments",
        "'x.png' is a string, not an object {mime type: data}",
    ),
    "attachment data not text": (
        MARKDOWN,
        {"attachments": {"x.png": {"image/png": [1, 2]}}},
        "attachments",
        "the 'image/png' data of 'x.png' is a list, not text",
    ),
    "attachments on a code cell": (
        ANSWER,
        {"attachments": [1]},
        "attachments",
        "a code cell has no attachments",
    ),
    "source a list of numbers": (ANSWER, {"source": [1, 2]}, "cell", "its source is a list"),
    "metadata a list": (ANSWER, {"metadata": [1]}, "cell", "its metadata is a list"),
    "metadata missing": (ANSWER, {"metadata": None}, "cell", "its metadata is missing"),
    "cell_type missing": (ANSWER, {"cell_type": None}, "cell", "its cell_type is missing"),
    "cell_type a number": (ANSWER, {"cell_type": 3}, "cell", "its cell_type is a number"),
    "a cell that is a string": (ANSWER, "x = 1", "cell", "it is a string, not a cell"),
    "a lone surrogate in the source": (MARKDOWN, {"source": ["\ud800"]}, "cell", "'\\ud800'"),
    "outputs of a markdown cell": (MARKDOWN, {"outputs": [{"output_type": 3}]}, "nothing", ""),
    # A code cell's outputs and execution count, of any shape or missing, are cleared unread
    # (grading clears them anyway): the cell is kept and nothing needs saying.
    "outputs missing": (ANSWER, {"outputs": None}, "nothing", ""),
    "outputs a string": (ANSWER, {"outputs": "42"}, "nothing", ""),
    "an output that is a number": (ANSWER, {"outputs": [7]}, "nothing", ""),
    "an output of no known type": (
        ANSWER,
        {"outputs": [{"output_type": "picture"}]},
        "nothing",
        "",
    ),
    "a stream output with no name": (
        ANSWER,
        {"outputs": [{"output_type": "stream", "text": "hi"}]},
        "nothing",
        "",
    ),
    "execution count a string": (ANSWER, {"execution_count": "7"}, "nothing", ""),
    "execution count a fraction": (ANSWER, {"execution_count": 1.5}, "nothing", ""),
    "execution count missing": (ANSWER, {"execution_count": None}, "nothing", ""),
    "outputs well formed (the control)": (
        ANSWER,
        {
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "hi"}],
            "execution_count": 3,
        },
        "nothing",
        "",
    ),
    "attachments well formed (the control)": (
        MARKDOWN,
        {"attachments": {"x.png": {"image/png": "iVBORw0KGgo="}}},
        "nothing",
        "",
    ),
}


def damaged(honest, where, change):
    """The JSON of ``honest`` with ``change`` made to its first cell of kind ``where``; the
    index of that cell."""
    nb = json.loads(nbformat.writes(honest))
    answer = next(i for i, c in enumerate(honest.cells) if c.cell_type == "code" and is_answer(c))
    index = (
        answer
        if where == ANSWER
        else next(i for i, c in enumerate(honest.cells) if c.cell_type == "markdown")
    )
    if isinstance(change, dict):
        for key, value in change.items():
            if value is None:
                del nb["cells"][index][key]
            else:
                nb["cells"][index][key] = value
    else:
        nb["cells"][index] = change
    return nb, index


@pytest.mark.parametrize("shape", DAMAGE)
def test_a_cell_nbformat_cannot_read_costs_only_that_cell_or_its_attachments(honest, shape):
    """Read as autograde reads it, the file is no longer unreadable for one cell's field:
    attachments of the wrong shape are dropped (the cell kept), a cell the reader cannot read
    is replaced by a note, every other cell is read as it was, and the repair in the run
    record names the cell by its place and says what was wrong."""
    from attncourse.preprocessors.refusespecialfiles import RefuseSpecialFiles

    where, change, lost, words = DAMAGE[shape]
    nb, index = damaged(honest, where, change)
    text, resources = TolerantNotebookExporter().from_file(io.StringIO(json.dumps(nb)))
    out, _ = RefuseSpecialFiles().preprocess(nbformat.reads(text, as_version=4), resources)
    record = RunRecord.of(out)
    assert record.unreadable is None and status_of(out).status is not Status.UNREADABLE
    assert len(out.cells) == len(honest.cells)
    others = [c.source for i, c in enumerate(out.cells) if i != index]
    assert others == [c.source for i, c in enumerate(honest.cells) if i != index]
    cell = out.cells[index]
    gid = grade_id(honest.cells[index])
    name = f"{cell_places(honest)[index].name} (`{gid}`)"
    if lost == "nothing":
        assert record.repairs == [] and cell.source == honest.cells[index].source
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
        assert ("attachments" in cell) == ("attachments" in change)
    elif lost == "attachments":
        assert cell.source == honest.cells[index].source and "attachments" not in cell
        [repair] = record.repairs
        assert (
            repair.startswith(f"the attachments of {name} were dropped unread: ")
            and words in repair
        )
    else:
        assert cell.source.startswith("**This cell could not be read:**") and words in cell.source
        [repair] = record.repairs
        assert words in repair and repair.endswith("; it was replaced by a note")
        if "metadata" not in shape and "string" not in shape:  # its grade id could be read
            assert repair.startswith(f"{name} could not be read: ")
        else:  # named by where it sits
            assert repair.startswith("a cell you added before Part 1 could not be read: ")


# nbformat 3 (worksheets of cells, a code cell's source under "input", heading cells): a cell
# nbformat's upgrade to 4 cannot upgrade (where it gives up on the file) costs that cell alone.
V3_DAMAGE = {
    "input a list of numbers": ("code", {"input": [1, 2]}, "its input (nbformat 3's source)"),
    "cell_type a number": ("code", {"cell_type": 3}, "its cell_type is a number"),
    "a cell that is a list": ("markdown", [1], "it is a list, not a cell"),
    "metadata a string": ("markdown", {"metadata": "x"}, "its metadata is a string"),
    "a heading whose level is text": (
        "heading",
        {"level": "two"},
        "its heading level is a string",
    ),
    "source a number": ("markdown", {"source": 7}, "its source is a number"),
}


def _v3(honest):
    """``honest`` as an nbformat 3 file's JSON, a heading cell first."""
    nb = json.loads(nbformat.writes(nbformat.convert(copy.deepcopy(honest), 3)))
    heading = {"cell_type": "heading", "level": 2, "source": ["The ", "variants"], "metadata": {}}
    nb["worksheets"][0]["cells"].insert(0, heading)
    return nb


def _read_v3(nb):
    from attncourse.preprocessors.refusespecialfiles import RefuseSpecialFiles

    text, resources = TolerantNotebookExporter().from_file(io.StringIO(json.dumps(nb)))
    out, _ = RefuseSpecialFiles().preprocess(nbformat.reads(text, as_version=4), resources)
    return out, RunRecord.of(out)


def test_an_nbformat_3_file_is_read_as_nbformat_would_read_it(honest):
    """The control: a well-formed nbformat 3 file reads cell for cell as nbformat's own upgrade
    reads it (the heading as a Markdown heading), with no repair."""
    nb = _v3(honest)
    out, record = _read_v3(nb)
    assert record.unreadable is None and record.repairs == []
    theirs = nbformat.reads(json.dumps(nb), as_version=4)
    assert [(c.cell_type, c.source) for c in out.cells] == [
        (c.cell_type, c.source) for c in theirs.cells
    ]
    assert out.cells[0].source == "## The  variants"  # nbformat 3 joins lines with newlines
    nbgrader = [c.metadata.get("nbgrader") for c in out.cells[1:]]
    assert nbgrader == [c.metadata.get("nbgrader") for c in honest.cells]


def test_a_stray_source_on_an_nbformat_3_code_cell_is_read_as_nbformat_reads_it(honest):
    """A v3 code cell's source is its ``input``; a ``source`` of numbers beside it is dropped by
    nbformat's upgrade, so the cell is read, not replaced."""
    nb = _v3(honest)
    cells = nb["worksheets"][0]["cells"]
    index = next(i for i, c in enumerate(cells) if c["cell_type"] == "code")
    cells[index]["source"] = [1, 2]
    out, record = _read_v3(nb)
    theirs = nbformat.reads(json.dumps(nb), as_version=4)
    assert record.repairs == [] and out.cells[index].source == theirs.cells[index].source


@pytest.mark.parametrize("shape", V3_DAMAGE)
def test_an_nbformat_3_cell_that_cannot_be_upgraded_costs_only_that_cell(honest, shape):
    """nbformat gives up on the whole file for such a cell (checked here: it raises); read as
    autograde reads it, that cell alone is replaced by a note naming what was wrong, and every
    other cell is read as nbformat reads the same file without the damage."""
    kind, change, words = V3_DAMAGE[shape]
    nb = _v3(honest)
    cells = nb["worksheets"][0]["cells"]
    index = next(i for i, c in enumerate(cells) if c["cell_type"] == kind)
    if isinstance(change, dict):
        cells[index] = dict(cells[index], **change)
    else:
        cells[index] = change
    with pytest.raises(Exception):  # noqa: B017 - nbformat's own reading fails whole
        nbformat.validate(nbformat.reads(json.dumps(nb), as_version=4))
    out, record = _read_v3(nb)
    assert record.unreadable is None and status_of(out).status is not Status.UNREADABLE
    honest_v3, _ = _read_v3(_v3(honest))
    assert len(out.cells) == len(honest_v3.cells)
    others = [c.source for i, c in enumerate(out.cells) if i != index]
    assert others == [c.source for i, c in enumerate(honest_v3.cells) if i != index]
    assert out.cells[index].source.startswith("**This cell could not be read:**")
    [repair] = record.repairs
    assert words in repair and repair.endswith("; it was replaced by a note"), repair


def test_a_forged_reason_that_is_not_words_is_dropped_on_entry(honest):
    """The file's own record is dropped on entry but for the exporter's reasons (words): a
    forged one of another type (found by the fuzz) no longer reaches the status; the control,
    a real unreadable file, keeps its reason."""
    from attncourse.constants import METADATA_KEY
    from attncourse.preprocessors.refusespecialfiles import RefuseSpecialFiles

    nb = json.loads(nbformat.writes(honest))
    nb["metadata"][METADATA_KEY] = {"unreadable": {"J": [1]}, "refused": [2]}
    text, resources = TolerantNotebookExporter().from_file(io.StringIO(json.dumps(nb)))
    out, _ = RefuseSpecialFiles().preprocess(nbformat.reads(text, as_version=4), resources)
    assert RunRecord.of(out) == RunRecord() and status_of(out).status is not Status.UNREADABLE
    text, resources = TolerantNotebookExporter().from_file(io.StringIO("{not json"))
    out, _ = RefuseSpecialFiles().preprocess(nbformat.reads(text, as_version=4), resources)
    assert "not valid JSON at line 1, column 2" in RunRecord.of(out).unreadable
