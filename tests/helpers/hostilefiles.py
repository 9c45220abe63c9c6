"""Hypothesis strategies for submitted notebook files, over nbformat's schema and just outside it.

:func:`submission_files` draws the bytes of a ``.ipynb`` a student might hand in, starting
from a real notebook of the course (the release, or the full solution): junk bytes, other
encodings, truncated JSON, JSON that is no notebook, and the notebook with mutations applied
(keys missing, values of the wrong type (those nbformat's reader gives up on among them),
huge and deeply nested values, every cell type and
unknown ones, duplicated cells and ids, forged nbgrader and grader metadata, odd Unicode),
and the notebook in nbformat 3's shape, its cells and worksheets damaged.
Used by tests/pipeline/test_fuzz_notebooks.py (seeded, bounded) and ``make fuzz`` (thousands).
"""

import copy
import hashlib
import json

from hypothesis import strategies as st

NOTEBOOK_KEYS = ["cells", "metadata", "nbformat", "nbformat_minor"]
CELL_KEYS = ["cell_type", "source", "metadata", "outputs", "id", "execution_count", "attachments"]
CELL_TYPES = ["code", "markdown", "raw", "heading", "", "Code", "x" * 300]
ODD_TEXT = st.sampled_from(
    [
        "\ud800",  # a lone surrogate (JSON may carry it as \ud800)
        "\x00",
        "\u202e",  # right-to-left override
        "e\u0301" * 50,  # combining marks
        "\ufeff",
        "💥" * 100,
        "\r\n\r",
        "### BEGIN SOLUTION",
        "### BEGIN HIDDEN TESTS",
        "%%time\n" * 300 + "x = 1",
        "def f(:\n",
        "import os; os._exit(0)",
    ]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=40),
    ODD_TEXT,
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
# Values of a cell's field that nbformat's reader (before its validator) raises on, for the
# whole file: a list or a scalar for an object, a list of numbers for text, bundles of no mime.
UNREADABLE = [[1, 2], "x.png", 3, None, {"x.png": "iVBORw0KGgo="}, {"x.png": {"image/png": [3]}}]
DEEP = "__deep_value__"  # replaced in the text by a list nested thousands deep


class HostileFile:
    """A generated file and how it was made (its repr stays short: files run to megabytes)."""

    def __init__(self, data: bytes, how: str):
        self.data, self.how = data, how

    def __repr__(self) -> str:
        digest = hashlib.sha1(self.data).hexdigest()[:10]
        return (
            f"HostileFile({self.how}; {len(self.data):,} bytes, sha1 {digest}, {self.data[:60]!r})"
        )


@st.composite
def forged_nbgrader(draw, grade_ids):
    """nbgrader metadata a student could write: real or invented grade ids, any flags."""
    meta = {
        "grade_id": draw(st.sampled_from(grade_ids) | st.text(max_size=20) | JSON),
        "grade": draw(st.booleans() | JSON),
        "solution": draw(st.booleans()),
        "locked": draw(st.booleans()),
        "points": draw(st.sampled_from([0, 1, -5, 1e308, "10", None]) | JSON),
        "schema_version": draw(st.sampled_from([3, 1, 99, "3"])),
    }
    keys = draw(st.sets(st.sampled_from(sorted(meta)), min_size=1))
    return {k: meta[k] for k in keys}


@st.composite
def mutation(draw, nb, grade_ids):
    """Apply one mutation to the notebook dict ``nb`` in place; its name."""
    cells = nb.get("cells") if isinstance(nb.get("cells"), list) else []
    cell = draw(st.sampled_from(cells)) if cells and isinstance(cells[0], dict) else None
    kind = draw(
        st.sampled_from(
            ["drop", "retype", "cell_type", "duplicate", "nbgrader", "grader", "huge", "deep"]
            + ["odd", "outputs", "many_cells", "version", "unreadable"]
        )
    )
    if kind == "drop":
        target = cell if cell is not None and draw(st.booleans()) else nb
        target.pop(draw(st.sampled_from(CELL_KEYS if target is cell else NOTEBOOK_KEYS)), None)
    elif kind == "retype":
        target = cell if cell is not None and draw(st.booleans()) else nb
        target[draw(st.sampled_from(CELL_KEYS if target is cell else NOTEBOOK_KEYS))] = draw(JSON)
    elif kind == "cell_type" and cell is not None:
        cell["cell_type"] = draw(st.sampled_from(CELL_TYPES))
    elif kind == "duplicate" and cell is not None:
        cells.insert(draw(st.integers(0, len(cells))), copy.deepcopy(cell))
    elif kind == "nbgrader" and cell is not None:
        cell.setdefault("metadata", {})
        if isinstance(cell["metadata"], dict):
            cell["metadata"]["nbgrader"] = draw(forged_nbgrader(grade_ids))
    elif kind == "grader":
        forged = {"unreadable": draw(JSON), "refused": draw(JSON), "faults": draw(JSON)}
        target = cell if cell is not None and draw(st.booleans()) else nb
        if isinstance(target.get("metadata"), dict):
            target["metadata"]["attncourse"] = forged
    elif kind == "huge" and cell is not None:
        size = draw(st.sampled_from([10_000, 100_000, 2_000_000]))
        cell[draw(st.sampled_from(["source", "metadata"]))] = (
            "x = 1\n" * (size // 6) if draw(st.booleans()) else {"k": "y" * size}
        )
    elif kind == "deep":
        target = cell if cell is not None else nb
        target[draw(st.sampled_from(["metadata", "source", "outputs"]))] = DEEP
    elif kind == "odd" and cell is not None:
        cell["source"] = draw(st.lists(ODD_TEXT | st.text(max_size=30), max_size=4))
    elif kind == "outputs" and cell is not None:
        output = {"output_type": draw(st.sampled_from(["stream", "error", "bogus"])), "text": "x"}
        cell["outputs"] = [output] * draw(st.sampled_from([1, 1000, 20_000]))
    elif kind == "many_cells" and cells:
        cells.extend(copy.deepcopy(cells[-1]) for _ in range(draw(st.integers(1, 1500))))
    elif kind == "unreadable" and cell is not None:  # what nbformat's reader itself gives up on
        field = draw(st.sampled_from(["attachments", "metadata", "source", "cell_type", None]))
        shape = draw(st.sampled_from(UNREADABLE))
        if field is None:
            cells[cells.index(cell)] = shape  # a cell that is no JSON object
        else:
            cell[field] = shape
    elif kind == "version":
        nb["nbformat"] = draw(st.sampled_from([3, 5, "4", -1, None]))
    return kind


def older_format(nb: dict) -> dict:
    """The notebook dict ``nb`` as nbformat 3 writes it (worksheets, a code cell's source under
    ``input``), a heading cell first."""
    import nbformat

    v3 = json.loads(nbformat.writes(nbformat.convert(nbformat.from_dict(nb), 3)))
    heading = {"cell_type": "heading", "level": 1, "source": ["The ", "course"], "metadata": {}}
    v3["worksheets"][0]["cells"].insert(0, heading)
    return v3


@st.composite
def v3_mutation(draw, nb):
    """One change to an nbformat 3 notebook dict (in place): a cell of a shape its upgrade to
    nbformat 4 gives up on, or worksheets of the wrong shape; its name."""
    sheets = nb.get("worksheets")
    cells = sheets[0].get("cells") if isinstance(sheets, list) and sheets else None
    kind = draw(st.sampled_from(["cell", "field", "level", "sheets", "cells"]))
    if kind == "sheets":
        nb["worksheets"] = draw(JSON)
    elif kind == "cells" and isinstance(sheets, list) and sheets and isinstance(sheets[0], dict):
        sheets[0]["cells"] = draw(JSON)
    elif isinstance(cells, list) and cells:
        index = draw(st.integers(0, len(cells) - 1))
        if kind == "cell" or not isinstance(cells[index], dict):
            cells[index] = draw(JSON)
        elif kind == "level":
            cells[index].update(cell_type="heading", level=draw(JSON))
        else:
            field = ["cell_type", "input", "source", "metadata", "outputs", "prompt_number"]
            cells[index][draw(st.sampled_from(field))] = draw(JSON | st.sampled_from(UNREADABLE))
    return f"v3:{kind}"


@st.composite
def submission_files(draw, base, grade_ids):
    """One submitted ``.ipynb`` (a :class:`HostileFile`), drawn around the notebook dict ``base``."""
    kind = draw(st.sampled_from(["mutated"] * 6 + ["junk", "encoded", "truncated", "json", "v3"]))
    if kind == "junk":
        return HostileFile(draw(st.binary(max_size=3000)), kind)
    if kind == "json":
        return HostileFile(json.dumps(draw(JSON)).encode(), kind)
    nb = copy.deepcopy(base)
    how = [kind]
    if kind == "mutated":
        how += [draw(mutation(nb, grade_ids)) for _ in range(draw(st.integers(1, 4)))]
    elif kind == "v3":
        nb = older_format(nb)
        how += [draw(v3_mutation(nb)) for _ in range(draw(st.integers(0, 3)))]
    text = json.dumps(nb, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 1])))
    depth = draw(st.sampled_from([50, 2_000, 100_000]))
    text = text.replace(f'"{DEEP}"', "[" * depth + "]" * depth)
    if kind == "truncated":
        return HostileFile(text.encode()[: draw(st.integers(0, len(text) - 1))], kind)
    if kind == "encoded":
        encoding = draw(st.sampled_from(["utf-16", "utf-8-sig", "latin-1", "utf-32", "cp1252"]))
        return HostileFile(text.encode(encoding, "replace"), f"encoded {encoding}")
    return HostileFile(text.encode("utf-8", "surrogatepass"), " ".join(how))
