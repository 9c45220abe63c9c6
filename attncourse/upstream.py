"""Every private name of nbclient, jupyter_client and nbgrader the course relies on, in one place.

The course subclasses their public classes, and in five places needs a method or attribute
they keep private. Each one is reached only here: a mixin that overrides it and hands the
course a public hook, or a function that calls it. :data:`PRIVATE` lists them with the
signature of the versions pinned in ``requirements.txt``; ``tests/unit/test_upstream.py`` checks
each against the installed package and fails naming its version when upstream changes.
"""

from dataclasses import dataclass
from typing import Any

from jupyter_core.utils import run_sync


@dataclass(frozen=True)
class Private:
    """A private method (``params``: its parameters) or attribute (``params`` None) of
    ``owner`` (a dotted class path) in the distribution ``package``."""

    package: str
    owner: str
    name: str
    params: tuple[str, ...] | None
    why: str


PRIVATE = (
    Private(
        "nbclient",
        "nbclient.client.NotebookClient",
        "_get_timeout",
        ("self", "cell"),
        "a cell's time limit, capped by the notebook's budget (overridden: CellTimeout)",
    ),
    Private(
        "nbclient",
        "nbclient.client.NotebookClient",
        "_async_cleanup_kernel",
        ("self",),
        "shut a dead or hung kernel down before a fresh one replaces it (cleanup_kernel)",
    ),
    Private(
        "jupyter_client",
        "jupyter_client.manager.KernelManager",
        "_async_cleanup_resources",
        ("self", "restart"),
        "remove the kernel's cgroup after its files (overridden: ResourceCleanup)",
    ),
    Private(
        "jupyter_client",
        "jupyter_client.manager.KernelManager",
        "_launch_args",
        None,
        "the kernel's working directory when its command is formatted (launch_args)",
    ),
    Private(
        "nbgrader",
        "nbgrader.exchange.default.collect.ExchangeCollect",
        "_path_to_record",
        ("self", "path"),
        "mark a submission whose folder another account owns (overridden: CollectRecords)",
    ),
    Private(
        "nbgrader",
        "nbgrader.exchange.default.collect.ExchangeCollect",
        "_sort_by_timestamp",
        ("self", "records"),
        "a student's own submissions before a forged one (overridden: CollectRecords)",
    ),
    Private(
        "nbgrader",
        "nbgrader.apps.zipcollectapp.ZipCollectApp",
        "_format_collect_path",
        ("self", "collect_step"),
        "the folder an LMS download was extracted to (collect_path)",
    ),
    Private(
        "nbgrader",
        "nbgrader.preprocessors.clearhiddentests.ClearHiddenTests",
        "_remove_hidden_test_region",
        ("self", "cell"),
        "a test cell as students were shown it (without_hidden_tests)",
    ),
)

# Public methods of upstream that the course replaces by its own (in the one process that needs
# it, or in a subclass), each with a digest of the upstream source its replacement was checked
# against (the test each names): a change upstream fails tests/unit/test_upstream.py until the
# replacement is checked again.
REPLACED = (
    Private(
        "nbgrader",
        "nbgrader.api.Gradebook",
        "notebook_submission_dicts",
        ("self", "notebook_id", "assignment_id"),
        "list a notebook's submissions in formgrader in time linear in the class "
        "(attncourse.gradebookview, loaded as a server extension by formgrader's server; "
        "compared in tests/pipeline/test_gradebook_view.py)",
    ),
    Private(
        "nbgrader",
        "nbgrader.nbgraderformat.common.BaseMetadataValidator",
        "validate_cell",
        ("self", "cell"),
        "check a cell's nbgrader metadata with the schema checked once per notebook "
        "(attncourse.preprocessors.checkmetadata; compared in tests/unit/test_checkmetadata.py)",
    ),
    Private(
        "nbgrader",
        "nbgrader.nbgraderformat.v3.MetadataValidatorV3",
        "validate_cell",
        ("self", "cell"),
        "run the schema step first, then nbgrader's own rules, through super() "
        "(attncourse.preprocessors.checkmetadata.OnceCheckedValidator's class order)",
    ),
    Private(
        "nbgrader",
        "nbgrader.preprocessors.checkcellmetadata.CheckCellMetadata",
        "preprocess",
        ("self", "nb", "resources"),
        "log and raise as nbgrader does when a notebook does not validate "
        "(attncourse.preprocessors.checkmetadata.CheckMetadata)",
    ),
)
REPLACED_SOURCE = {
    "nbgrader.api.Gradebook.notebook_submission_dicts": (
        "9ed7d9acc84d43c513e8dcadf1dd3abe2f9fd51ac024d4ff963849a8edeb609c"
    ),
    "nbgrader.nbgraderformat.common.BaseMetadataValidator.validate_cell": (
        "e5f97f45a9aba510674c72eb1d7246f297175e2f1bd1193a03494f6071af3265"
    ),
    "nbgrader.nbgraderformat.v3.MetadataValidatorV3.validate_cell": (
        "53eb5b8ac9370fed677c93bbb2539a7f6779c17bef9fefe43c12085943d5c7ec"
    ),
    "nbgrader.preprocessors.checkcellmetadata.CheckCellMetadata.preprocess": (
        "f8dfe8c496d03e526c73f55837efef711749488700fe21e046e3e9d5be65550c"
    ),
}


class CellTimeout:
    """Mixin for nbclient's ``NotebookClient``: :meth:`cell_timeout` decides a cell's limit."""

    def _get_timeout(self, cell: Any) -> float | None:
        return self.cell_timeout(cell, super()._get_timeout(cell))

    def cell_timeout(self, cell: Any, timeout: float | None) -> float | None:
        """The seconds ``cell`` may run; ``timeout`` is nbclient's own choice."""
        return timeout


def cleanup_kernel(client: Any) -> None:
    """Shut down and forget ``client``'s kernel (nbclient's cleanup, run here synchronously)."""
    run_sync(client._async_cleanup_kernel)()


class ResourceCleanup:
    """Mixin for jupyter_client's ``AsyncKernelManager``: :meth:`resources_cleaned` runs
    after its resources (connection file, ports) were cleaned up."""

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        self.resources_cleaned(restart)

    cleanup_resources = _async_cleanup_resources

    def resources_cleaned(self, restart: bool) -> None:
        """What the course cleans up after jupyter_client (nothing by default)."""


def launch_args(manager: Any) -> dict:
    """The keyword arguments ``manager`` launches its kernel with (``cwd``...)."""
    return manager._launch_args


class CollectRecords:
    """Mixin for nbgrader's ``ExchangeCollect``: :meth:`record_of` adds to each submission's
    record, :meth:`newest_first` orders the records (the first of a student is collected)."""

    def _path_to_record(self, path: str) -> dict:
        return self.record_of(path, super()._path_to_record(path))

    def _sort_by_timestamp(self, records: list[dict]) -> list[dict]:
        return self.newest_first(records)

    def record_of(self, path: str, record: dict) -> dict:
        """The record of the submission at ``path`` (nbgrader's ``record``)."""
        return record

    def newest_first(self, records: list[dict]) -> list[dict]:
        """``records`` in the order nbgrader collects them."""
        return super()._sort_by_timestamp(records)


def collect_path(app: Any, step: str) -> str:
    """Where nbgrader's ``zip_collect`` ``app`` keeps the files of ``step`` (extracted...)."""
    return app._format_collect_path(step)


def without_hidden_tests(cell: Any) -> None:
    """Remove nbgrader's hidden-test region from the code ``cell``, in place."""
    from nbgrader.preprocessors import ClearHiddenTests

    ClearHiddenTests()._remove_hidden_test_region(cell)
