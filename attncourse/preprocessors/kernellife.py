"""The life of one notebook's kernel under autograde: started, interrupted, killed, restarted.

:class:`KernelLife` is nbgrader's ``Execute`` with its kernel in the sandbox
(:mod:`attncourse.sandbox`): in a fresh working copy of the student's folder, started
ahead of time when ``prewarm`` is on, every cell limited by the notebook's budget. When
the kernel dies or hangs it is restarted and the cells before replayed (outputs dropped,
faulty cells left out), each fault recorded with the cell where it happened. The judge's
requests run here too, as executions at the test cell being judged
(:meth:`KernelLife.probe`, :meth:`KernelLife.serve`); what they mean is
:mod:`~attncourse.preprocessors.judgesession`'s business.
"""

import asyncio
import contextlib
import inspect
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import nbformat
from jupyter_client.manager import KernelManager
from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool, Float, Instance, Integer, default

from attncourse.cells import is_test_cell
from attncourse.judge.remote import KernelFault
from attncourse.pointers import cell_places
from attncourse.runrecord import RunRecord
from attncourse.sandbox.forkstart import ForkServers
from attncourse.sandbox.kernelmanager import SandboxKernelManager
from attncourse.sandbox.sparekernel import SpareKernel
from attncourse.sandbox.workspace import Workspace
from attncourse.upstream import CellTimeout, cleanup_kernel


class KernelLife(CellTimeout, Execute):
    """nbgrader's ``Execute`` whose kernel lives in the sandbox and survives dead and hung
    kernels. The kernel runs in a fresh working copy of the student's folder outside the
    course tree (notebooks excluded: the sanitized copy holds the hidden tests)."""

    iopub_timeout = Integer(
        30,
        help="Seconds to wait for a cell's last output after its reply (a flood of output).",
    ).tag(config=True, limit=True)
    prewarm = Bool(
        False, help="Start the next notebook's kernel while this one runs (torch import dominates)."
    ).tag(config=True)
    max_kernel_restarts = Integer(
        3,
        help="Kernel deaths/hangs per notebook after which the remaining cells are not run.",
    ).tag(config=True, limit=True)
    notebook_budget = Float(
        900.0,
        help="Seconds one notebook may run in all (its cells and the judge's calls); when they "
        "are spent the remaining cells are not run and the remaining tests fail, saying so.",
    ).tag(config=True, limit=True)

    spare = Instance(
        SpareKernel,
        help="The process's spare kernel (nbgrader_config.py makes one per process; a grading "
        "process passes its own, shared by its students).",
    ).tag(config=True)
    fork_servers = Instance(
        ForkServers,
        help="The process's fork servers, given to every kernel manager (made and passed "
        "in as ``spare`` is).",
    ).tag(config=True)

    @default("spare")
    def _own_spare(self) -> SpareKernel:
        return SpareKernel()

    @default("fork_servers")
    def _own_fork_servers(self) -> ForkServers:
        return ForkServers()

    def __init__(self, **kw: Any) -> None:
        # nbgrader's Execute passes its own kernel manager as an argument, which no
        # configuration overrides: ours goes first.
        kw.setdefault("kernel_manager_class", SandboxKernelManager)
        super().__init__(**kw)

    @default("shutdown_kernel")
    def _kill_when_done(self):
        # The kernel's state is thrown away: killing it saves the 0.3 s that a graceful
        # shutdown spends polling for its exit, once per student (0.04-0.13 s instead).
        return "immediate"

    # ------------------------------------------------------------ one notebook's kernel

    @contextlib.contextmanager
    def workspace(self, nb: NotebookNode, resources: ResourcesDict, record: RunRecord) -> Iterator:
        """While inside, the kernel's working copy of the student's folder (a spare kernel's,
        when one was started ahead) is the notebook's path; removed on the way out."""
        self._record = record
        self._dead, self._restarts, self._no_kernel = set(), 0, None
        self._probing, self._serving, self._killed = None, False, False
        self._places = cell_places(nb)
        kernel_name = self.kernel_name or nb.metadata.get("kernelspec", {}).get("name", "")
        self._workspace, self._adopt = self.spare.take(self._spare_key(kernel_name))
        meta = resources.setdefault("metadata", {})
        original = meta.get("path")
        if original and os.path.isdir(original):
            shutil.copytree(
                original,
                self._workspace.work,
                ignore=shutil.ignore_patterns("*.ipynb", ".ipynb_checkpoints"),
                dirs_exist_ok=True,
            )
        if self._adopt is not None:
            self._workspace.give_to(self._adopt)
        self._deadline = time.monotonic() + self.notebook_budget
        meta["path"] = str(self._workspace.work)
        try:
            yield self._workspace
        finally:
            meta["path"] = original
            self._workspace.remove()

    def _spare_key(self, kernel_name):
        return (self.kernel_manager_class, kernel_name, tuple(self.extra_arguments))

    def create_kernel_manager(self) -> KernelManager:
        if self._adopt is not None:
            self.kernel_name = self.kernel_name or self._adopt.kernel_name
            self.km, self._adopt = self._adopt, None
            return self.km
        km = super().create_kernel_manager()
        if isinstance(km, SandboxKernelManager):
            km.fork_servers = self.fork_servers
            km.use_run_dir(self._workspace.run)
        return km

    async def _async_start_spare(self):
        """Launch the kernel for the next notebook now, so its start overlaps this one's run."""
        if not self.prewarm or self.spare.waiting():
            return
        workspace = Workspace()
        km = self.kernel_manager_class(kernel_name=self.kernel_name, config=self.config)
        if isinstance(km, SandboxKernelManager):
            km.fork_servers = self.fork_servers
            km.use_run_dir(workspace.run)
        key = self._spare_key(self.kernel_name)
        await self.spare.start(key, km, workspace, self.extra_arguments)

    async def async_start_new_kernel(self, **kwargs: Any) -> None:
        self._kernel_started = time.monotonic()
        await super().async_start_new_kernel(**kwargs)

    start_new_kernel = run_sync(async_start_new_kernel)

    async def async_start_new_kernel_client(self) -> Any:
        kc = await super().async_start_new_kernel_client()
        timing = self._record.timing
        timing.setdefault("kernel_ready_s", round(time.monotonic() - self._kernel_started, 3))
        if self._record.protections is None:
            manager = self.km
            self._record.protections = (
                manager.protections() if isinstance(manager, SandboxKernelManager) else {}
            )
        await self._async_start_spare()
        return kc

    start_new_kernel_client = run_sync(async_start_new_kernel_client)

    # --------------------------------------------------------------- time and faults

    def left(self) -> float:
        """Seconds left of the notebook's budget."""
        return self._deadline - time.monotonic()

    def call_timeout(self) -> float:
        """Seconds one call of the judge may take: the cell's limit, within the budget."""
        return min(self.timeout or self.left(), self.left())

    def budget_message(self) -> str:
        return (
            f"the notebook's time budget ({self.notebook_budget:.0f} s) was used up before this "
            "cell; it was not run"
        )

    def cell_timeout(self, cell: NotebookNode, timeout: float | None) -> float | None:
        if self._serving:
            return None
        left = max(self.left(), 1.0)
        return left if timeout is None else min(timeout, left)

    def where(self, cell: NotebookNode, index: int) -> str:
        """The cell as people find it: "the answer cell of Part 5 (`p5_mha`)", "a cell you
        added after Part 5"."""
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        name = self._places[index].name
        return f"{name} (`{gid}`)" if gid else name

    def _fault(self, cell, index, kind):
        gid = cell.metadata.get("nbgrader", {}).get("grade_id") or ""
        where = self.where(cell, index)
        self._record.faults.append({"cell": gid, "where": where, "fault": kind})
        self.log.warning("%s in %s", kind, where)

    # ------------------------------------------------------ the judge's executions

    @property
    def probing(self) -> int | None:
        """The index of the test cell the judge is at, or None."""
        return self._probing

    @contextlib.contextmanager
    def probing_at(self, index: int) -> Iterator[None]:
        """While inside, executions are the judge's at test cell ``index`` (outputs dropped)."""
        self._probing, self._killed = index, False
        try:
            yield
        finally:
            self._probing = None

    def may_probe(self) -> None:
        """Raise :class:`KernelFault` when the kernel may no longer be asked anything."""
        if self.gave_up():
            raise KernelFault(self._no_kernel)
        if self.left() <= 0:
            raise KernelFault(self.budget_message())

    def probe(self, code: str) -> list:
        """Run the judge's ``code`` in the kernel at the test cell being judged (the agent's
        install); its outputs. A kernel that died or hung there is restarted and
        :class:`KernelFault` raised."""
        index = self._probing
        self.may_probe()
        keep = self.nb.cells[index]
        cell = nbformat.v4.new_code_cell(code)
        self._killed = False
        try:
            self.execute_cell(cell, index, store_history=False)
        except Exception as e:  # noqa: BLE001 - dead, hung, or a message nbclient could not read
            raise self.recover(e, index) from None
        finally:
            self.nb.cells[index] = keep
        return cell.outputs

    def serve(self, code: str) -> Exception | None:
        """The kernel's serving execution (no time limit of its own: each of the check's
        calls has one, and the check's thread stops a kernel that goes on serving after it);
        the error that lost the kernel, or None."""
        keep = self.nb.cells[self._probing]
        self._serving = True
        try:
            self.execute_cell(nbformat.v4.new_code_cell(code), self._probing, store_history=False)
        except Exception as e:  # noqa: BLE001 - dead, hung, or a message nbclient could not read
            return e
        finally:
            self._serving = False
            self.nb.cells[self._probing] = keep
        return None

    def stop_serving(self, served: threading.Event) -> None:
        """From the check's thread, when a call ran over its time: interrupt the kernel, and
        kill it if it still serves ``iopub_timeout`` seconds later (it hung)."""
        _call(self.km.interrupt_kernel)
        if not served.wait(self.iopub_timeout):
            self._killed = True
            _call(self.km.signal_kernel, signal.SIGKILL)

    def recover(self, error: Exception, index: int) -> KernelFault:
        """Record the kernel lost under the judge at test cell ``index`` and restart it; the
        KernelFault that says what happened."""
        if not isinstance(error, (DeadKernelError, CellTimeoutError)):
            self._fault(self.nb.cells[index], index, f"under the judge, {unreadable(error)}")
            self._restart(index)
            return KernelFault(f"{unreadable(error)} while your code was being called")
        died = isinstance(error, DeadKernelError) and not self._killed
        self._fault(self.nb.cells[index], index, "kernel died under the judge" if died else "hung")
        self._restart(index)
        return KernelFault(
            "the kernel died while your code was being called"
            if died
            else "your code did not stop when interrupted"
        )

    # ------------------------------------------------------------ a fresh kernel

    def kernel_replaced(self) -> None:
        """Called when the kernel is replaced (what lived in the old one is gone)."""

    def fresh_kernel_without(self, cell: NotebookNode, index: int, fault: str) -> None:
        """Record ``fault`` and go on in a new kernel that has run the cells up to ``index``
        except the faulty ones."""
        self._fault(cell, index, fault)
        self._dead.add(index)
        self._restart(index + 1)

    def _restart(self, index):
        """A fresh sandboxed kernel with the cells before ``index`` replayed (outputs dropped).
        When none can be had (too many restarts, or the new one fails to start) the
        remaining cells are not run, saying why: the student keeps what was graded."""
        self._restarts += 1
        self.kernel_replaced()
        if self._restarts > self.max_kernel_restarts:
            self._no_kernel = "the kernel died too often"
            return  # the remaining cells are not run; nbclient shuts this kernel down at the end
        cleanup_kernel(self)
        try:
            self.km = self.create_kernel_manager()
            self.start_new_kernel()
            self.start_new_kernel_client()
        except Exception as error:  # noqa: BLE001 - whatever stopped it, the notebook goes on
            self._no_kernel = f"no fresh kernel could be started ({type(error).__name__}: {error})"
            self._record.faults.append({"cell": "", "where": "a restart", "fault": self._no_kernel})
            self.log.warning("%s", self._no_kernel)
            return
        for i, cell in enumerate(self.nb.cells[:index]):
            if cell.cell_type != "code" or i in self._dead or not cell.source.strip():
                continue
            if is_test_cell(cell):
                continue
            try:
                self.wait_for_reply(self.kc.execute(cell.source, store_history=False))
            except (DeadKernelError, TimeoutError, CellTimeoutError):
                self._dead.add(i)
                return self._restart(index)

    def gave_up(self) -> bool:
        """The kernel died too often, or no new one started: the remaining cells are not run
        (:meth:`lost` says why)."""
        return self._no_kernel is not None

    def lost(self) -> str:
        """Why the remaining cells are not run (once :meth:`gave_up`)."""
        return self._no_kernel or ""


def unreadable(error: Exception) -> str:
    """Words for an error nbclient raised while reading what the kernel sent (a message whose
    signature does not match, which code in the kernel can send, or one of no known shape)."""
    text = str(error).split(":")[0].strip()[:60]
    return f"the kernel sent a message the grader could not read ({type(error).__name__}: {text})"


def _call(method: Callable, *args: Any) -> None:
    """Call a kernel manager's method from a thread other than the grader's event loop's."""
    result = method(*args)
    if inspect.isawaitable(result):
        asyncio.run(result)
