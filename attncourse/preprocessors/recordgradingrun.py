"""Autograde stage: the run's record (repairs, faults, protections, timings) into the notebook.

:class:`~attncourse.preprocessors.resilientexecute.ResilientExecute` keeps it in the
resources while it runs; the report and ``attncourse grade`` read it from the autograded
notebook's metadata.
"""

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from attncourse.constants import METADATA_KEY
from attncourse.runrecord import RunRecord


class RecordGradingRun(NbGraderPreprocessor):
    """Write the run's record (repairs, faults, protections, timings) into the notebook."""

    def preprocess(
        self, nb: NotebookNode, resources: ResourcesDict
    ) -> tuple[NotebookNode, ResourcesDict]:
        record = resources.get(METADATA_KEY)
        if isinstance(record, RunRecord):  # kept in the resources by ResilientExecute
            record.store(nb)
        return nb, resources
