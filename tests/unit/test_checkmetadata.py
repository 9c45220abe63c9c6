"""The course's check of the cells' nbgrader metadata gives nbgrader's verdicts, schema once.

``attncourse.preprocessors.checkmetadata`` replaces nbgrader's ``CheckCellMetadata`` in the
sanitize and autograde stages (nbgrader_config.py): every notebook nbgrader accepts it accepts,
every broken one it refuses with nbgrader's error and message, and it checks the schema once
per notebook where nbgrader checks it once per cell.
"""

import copy
import logging

import jsonschema
import pytest
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
from nbgrader.preprocessors import CheckCellMetadata

from attncourse.course import ROOT, assignments
from attncourse.preprocessors.checkmetadata import CheckMetadata, OnceCheckedValidator
from devtools.submissions import solution_submission


def _first(nb, kind, **flags):
    """The index of the first cell of ``kind`` whose nbgrader flags are ``flags``."""
    return next(
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == kind
        and all(c.metadata.get("nbgrader", {}).get(k) == v for k, v in flags.items())
    )


def _set(key, value, kind="code", **flags):
    def change(nb):
        nb.cells[_first(nb, kind, **flags)].metadata.nbgrader[key] = value

    return change


def _drop(key, kind="code", **flags):
    def change(nb):
        del nb.cells[_first(nb, kind, **flags)].metadata.nbgrader[key]

    return change


def _duplicate_id(nb):
    ids = [i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id")]
    nb.cells[ids[1]].metadata.nbgrader.grade_id = nb.cells[ids[0]].metadata.nbgrader.grade_id


BROKEN = {  # what a submission's metadata may have suffered, each refused by nbgrader
    "schema_too_old": _set("schema_version", 2, grade=True),
    "schema_too_new": _set("schema_version", 4, grade=True),
    "points_a_word": _set("points", "ten", grade=True),
    "grade_a_string": _set("grade", "yes", grade=True),
    "grade_id_empty": _set("grade_id", "", grade=True),
    "grade_id_missing": _drop("grade_id", grade=True),
    "points_missing": _drop("points", grade=True),
    "locked_missing": _drop("locked", grade=True),
    "markdown_grade_not_solution": _set("solution", False, kind="markdown", grade=True),
    "duplicate_grade_id": _duplicate_id,
    "unknown_key_in_schema_type": _set("cell_type", 7, grade=True),
}


def _verdict(validator, nb):
    try:
        validator.validate_nb(nb)
    except Exception as e:  # noqa: BLE001 - whatever nbgrader raises, compared by type and text
        return type(e), str(e)
    return None


@pytest.mark.parametrize("assignment", assignments())
def test_every_solution_validates_as_in_nbgrader(assignment):
    nb = solution_submission(ROOT, assignment)
    assert _verdict(MetadataValidator(), nb) is None
    assert _verdict(OnceCheckedValidator(), nb) is None


@pytest.mark.parametrize("broken", BROKEN)
def test_each_broken_cell_is_refused_with_nbgraders_error_and_message(broken):
    nb = copy.deepcopy(solution_submission(ROOT, "attention_variants"))
    BROKEN[broken](nb)
    expected = _verdict(MetadataValidator(), nb)
    assert expected is not None, f"{broken}: nbgrader accepts it (not a broken case)"
    assert _verdict(OnceCheckedValidator(), nb) == expected


def test_the_preprocessor_logs_and_raises_as_nbgraders(caplog):
    """Control first: both accept the solution; then both refuse a broken notebook with the
    same error and the same logged lines (the traceback's, then the message)."""
    nb = solution_submission(ROOT, "attention_worksheet")
    for cls in (CheckCellMetadata, CheckMetadata):
        assert cls().preprocess(nb, {})[0] is nb
    broken = copy.deepcopy(nb)
    BROKEN["points_a_word"](broken)
    said = {}
    for cls in (CheckCellMetadata, CheckMetadata):
        caplog.clear()
        preprocessor = cls()
        preprocessor.log = logging.getLogger("check")
        with caplog.at_level(logging.ERROR, logger="check"), pytest.raises(ValidationError) as e:
            preprocessor.preprocess(broken, {})
        said[cls] = (str(e.value), [r.getMessage().splitlines()[-1] for r in caplog.records])
    assert said[CheckMetadata] == said[CheckCellMetadata]
    assert "may be corrupted" in said[CheckMetadata][0]


def test_the_schema_is_checked_once_a_notebook_not_once_a_cell(monkeypatch):
    """What the stage saves: nbgrader checks the schema for each cell with metadata (the
    control), the course's validator once."""
    nb = solution_submission(ROOT, "attention_variants")
    cls = jsonschema.validators.validator_for(MetadataValidator().schema)
    checks = []
    original = cls.check_schema.__func__

    def counted(klass, schema, *args, **kwargs):
        checks.append(1)
        return original(klass, schema, *args, **kwargs)

    monkeypatch.setattr(cls, "check_schema", classmethod(counted))
    cells = sum("nbgrader" in c.metadata for c in nb.cells)
    MetadataValidator().validate_nb(nb)
    assert len(checks) == cells > 10
    checks.clear()
    OnceCheckedValidator().validate_nb(nb)
    assert len(checks) == 1
