"""Sanitize and autograde stages: nbgrader's check of the cells' nbgrader metadata, its schema
checked once per process instead of once per cell.

nbgrader's validator (``nbgrader.nbgraderformat``) hands every cell to ``jsonschema.validate``,
which checks the schema itself before it checks the cell: validating an attention_variants
notebook (67 cells) took 0.144 s of CPU, 0.012 s with the schema checked once, and autograde
validates each notebook twice. The verdicts are nbgrader's: the same schema, the same version
checks and rules (its own ``MetadataValidator``), the same error, the same message
(``tests/unit/test_checkmetadata.py`` compares them on valid and broken cells).
"""

import traceback

import jsonschema
from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.nbgraderformat import (
    MetadataValidator,
    SchemaTooNewError,
    SchemaTooOldError,
    ValidationError,
)
from nbgrader.nbgraderformat.common import BaseMetadataValidator
from nbgrader.preprocessors import CheckCellMetadata


class _SchemaOnce(BaseMetadataValidator):
    """The schema step of nbgrader's per-cell check (``BaseMetadataValidator.validate_cell``),
    with a validator made once; placed after ``MetadataValidator`` in the class order, so that
    its own rules run after this step, as after nbgrader's."""

    _checked: jsonschema.protocols.Validator | None = None

    def validate_cell(self, cell: NotebookNode) -> None:
        if "nbgrader" not in cell.metadata:
            return
        meta = cell.metadata["nbgrader"]
        version = meta.get("schema_version", 0)
        if version < self.schema_version:
            raise SchemaTooOldError(
                f"Outdated schema version: {version} (expected {self.schema_version})",
                version,
                self.schema_version,
            )
        if version > self.schema_version:
            raise SchemaTooNewError(
                f"Schema version is too new: {version} (expected {self.schema_version})",
                version,
                self.schema_version,
            )
        if self._checked is None:  # what jsonschema.validate does for every cell
            cls = jsonschema.validators.validator_for(self.schema)
            cls.check_schema(self.schema)
            self._checked = cls(self.schema)
        error = jsonschema.exceptions.best_match(self._checked.iter_errors(meta))
        if error is not None:
            raise error


class OnceCheckedValidator(MetadataValidator, _SchemaOnce):
    """nbgrader's ``MetadataValidator`` whose schema step is :class:`_SchemaOnce`'s."""


class CheckMetadata(CheckCellMetadata):
    """nbgrader's ``CheckCellMetadata`` with :class:`OnceCheckedValidator`: what it logs and
    raises when a notebook does not validate are nbgrader's."""

    def preprocess(
        self, nb: NotebookNode, resources: ResourcesDict
    ) -> tuple[NotebookNode, ResourcesDict]:
        try:
            OnceCheckedValidator().validate_nb(nb)
        except ValidationError:
            self.log.error(traceback.format_exc())
            msg = "Notebook failed to validate; the nbgrader metadata may be corrupted."
            self.log.error(msg)
            raise ValidationError(msg) from None
        return nb, resources
