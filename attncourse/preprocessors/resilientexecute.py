"""Autograde stage, in place of ``Execute``: student cells in the sandbox, tests by the judge.

:class:`ResilientExecute` runs the student's cells in a sandboxed kernel
(:mod:`attncourse.sandbox`), caps each cell's output and the whole notebook's time, and
when the kernel dies or hangs in a cell, scores that cell 0, restarts the kernel, replays
the cells before it and goes on. Test cells never run in the kernel: at each one the judge
(:mod:`attncourse.judge`) asks the kernel for data and writes the verdict.
"""

import asyncio
import inspect
import os
import shutil
import signal
import time
from collections import defaultdict

import nbformat
import torch
from jupyter_client.manager import KernelManager
from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import Execute
from traitlets import Bool, Dict, Float, Integer, Unicode, default

from attncourse import constants
from attncourse.cells import is_test_cell
from attncourse.constants import EXAMPLE_STUDENT, METADATA_KEY
from attncourse.judge import verdict
from attncourse.judge.channel import PipeChannel
from attncourse.judge.remote import KernelFault, Session, StudentNamespace
from attncourse.pointers import cell_places, located_cells
from attncourse.preprocessors.submissionlimits import refusal
from attncourse.roster import roster_reader
from attncourse.runrecord import RunRecord
from attncourse.sandbox import sparekernel
from attncourse.sandbox.filesystem import JUDGE_SOCKET
from attncourse.sandbox.kernelmanager import SandboxKernelManager
from attncourse.sandbox.workspace import Workspace


def _error(ename, evalue):
    return nbformat.v4.new_output(
        "error", ename=ename, evalue=evalue, traceback=[f"\x1b[0;31m{ename}\x1b[0m: {evalue}"]
    )


class ResilientExecute(Execute):
    """nbgrader's ``Execute`` in the sandbox, surviving dead, hung and chatty kernels.

    The kernel runs in a fresh working copy of the student's folder outside the
    course tree (notebooks excluded: the sanitized copy holds the hidden tests).
    """

    max_output_bytes = Integer(
        constants.MAX_OUTPUT_BYTES, help="Output a cell may produce before the rest is dropped."
    ).tag(config=True)
    max_outputs = Integer(
        1000,
        help="Outputs (messages: prints, displays) one cell may send; past it the cell is "
        "interrupted and the rest dropped, saying so. Each costs the grader a message; the "
        "course's cells send at most a few dozen.",
    ).tag(config=True, limit=True)
    iopub_timeout = Integer(
        constants.IOPUB_TIMEOUT_S,
        help="Seconds to wait for a cell's last output after its reply (a flood of output).",
    ).tag(config=True)
    prewarm = Bool(
        False, help="Start the next notebook's kernel while this one runs (torch import dominates)."
    ).tag(config=True)
    max_kernel_restarts = Integer(
        constants.MAX_KERNEL_RESTARTS,
        help="Kernel deaths/hangs per notebook after which the remaining cells are not run.",
    ).tag(config=True)
    notebook_budget = Float(
        float(constants.NOTEBOOK_BUDGET_S),
        help="Seconds one notebook may run in all (its cells and the judge's calls); when they "
        "are spent the remaining cells are not run and the remaining tests fail, saying so.",
    ).tag(config=True)
    checks_modules = Dict(
        value_trait=Unicode(),
        help="assignment -> module holding its CHECKS, for assignments whose hidden tests are "
        "not in attncourse.grading.<assignment>.",
    ).tag(config=True)
    max_reply_bytes = Integer(
        constants.MAX_REPLY_BYTES, help="Largest answer the kernel may send the judge for one call."
    ).tag(config=True)

    def __init__(self, **kw):
        # nbgrader's Execute passes its own kernel manager as an argument, which no
        # configuration overrides: ours goes first.
        kw.setdefault("kernel_manager_class", SandboxKernelManager)
        super().__init__(**kw)

    @default("shutdown_kernel")
    def _kill_when_done(self):
        # The kernel's state is thrown away: killing it saves the 0.3 s that a graceful
        # shutdown spends polling for its exit, once per student (0.04-0.13 s instead).
        return "immediate"

    def preprocess(
        self, nb: NotebookNode, resources: ResourcesDict, km: KernelManager | None = None
    ) -> tuple[NotebookNode, ResourcesDict]:
        record = resources.setdefault(METADATA_KEY, RunRecord.of(nb))
        if record.unreadable or record.refused:
            ename = "SubmissionUnreadable" if record.unreadable else "SubmissionRefused"
            for cell in nb.cells:
                if cell.cell_type == "code" and utils.is_grade(cell):
                    cell.outputs = [_error(ename, record.unreadable or record.refused)]
            return nb, resources
        self._record = record
        self._dead = set()
        self._restarts = 0
        self._output_bytes = defaultdict(int)
        self._outputs = defaultdict(int)
        self._truncated = set()
        kernel_name = self.kernel_name or nb.metadata.get("kernelspec", {}).get("name", "")
        self._workspace, self._adopt = sparekernel.take(self._spare_key(kernel_name))
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
        self._judge_setup(nb, resources)
        meta["path"] = str(self._workspace.work)
        started = self._kernel_started = time.monotonic()
        try:
            nb, resources = super().preprocess(nb, resources, km)
        finally:
            meta["path"] = original
            self._workspace.remove()
        record.timing["execute_s"] = round(time.monotonic() - started, 3)
        record.timing["judge_s"] = round(self._judge_s, 3)  # its checks, requests included
        record.timing["requests"] = self._session.requests
        return nb, resources

    def _spare_key(self, kernel_name):
        return (self.kernel_manager_class, kernel_name, tuple(self.extra_arguments))

    def create_kernel_manager(self):
        if self._adopt is not None:
            self.kernel_name = self.kernel_name or self._adopt.kernel_name
            self.km, self._adopt = self._adopt, None
            return self.km
        km = super().create_kernel_manager()
        if isinstance(km, SandboxKernelManager):
            km.use_run_dir(self._workspace.run)
        return km

    async def _async_start_spare(self):
        """Launch the kernel for the next notebook now, so its start overlaps this one's run."""
        if not self.prewarm or sparekernel.waiting():
            return
        workspace = Workspace()
        km = self.kernel_manager_class(kernel_name=self.kernel_name, config=self.config)
        if isinstance(km, SandboxKernelManager):
            km.use_run_dir(workspace.run)
        key = self._spare_key(self.kernel_name)
        await sparekernel.start(key, km, workspace, self.extra_arguments)

    async def async_start_new_kernel(self, **kwargs):
        self._kernel_started = time.monotonic()
        await super().async_start_new_kernel(**kwargs)

    start_new_kernel = run_sync(async_start_new_kernel)

    async def async_start_new_kernel_client(self):
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

    # ------------------------------------------------------------------ the judge

    def _judge_setup(self, nb, resources):
        """Per notebook: the assignment's checks, a fresh secret, the student's own cells."""
        assignment = resources.get("nbgrader", {}).get("assignment")
        try:
            self._checks = verdict.checks_of(assignment, self.checks_modules.get(assignment))
        except (ImportError, AttributeError) as e:
            self.log.error("No hidden tests for %s: %s", assignment, e)
            self._checks = {}
        torch.set_num_threads(1)  # the judge's references are small: threads only contend
        self._secret = verdict.new_secret()
        self._channel = PipeChannel(
            self._judge_execute,
            self._workspace.run / JUDGE_SOCKET,
            self.max_reply_bytes,
            timeout=lambda: min(self.timeout or self._left(), self._left()),
            stop=self._stop_serving,
            grace=self.iopub_timeout,
        )
        self._serving = False
        self._judge_s = 0.0
        student = resources.get("nbgrader", {}).get("student") or EXAMPLE_STUDENT
        self._session = Session(self._channel)
        self._places = cell_places(nb)
        self._ns = StudentNamespace(
            self._session,
            located_cells(nb),
            student,
            roster=roster_reader(resources.get("nbgrader", {}).get("db_url")),
            matches=self._record.instance_matches,  # classmates' numbers, for the report
        )
        self._probing = None
        self._deadline = time.monotonic() + self.notebook_budget

    def _judge(self, cell, index):
        """The test cell's verdict, computed here from data the kernel returns."""
        check = self._checks.get(cell.metadata.get("nbgrader", {}).get("grade_id", ""))
        if check is None:
            message = "no hidden test is registered for this cell (an instructor's error)"
            self.log.error("%s: %s", self._name(cell, index), message)
        elif self._left() <= 0:
            message = self._budget_message()
        else:
            self._probing = index
            started = time.monotonic()
            try:
                message = self._judged(
                    lambda: verdict.run_check(check, self._ns, self._secret, test_index=index)
                )
            finally:
                self._probing = None
                self._judge_s += time.monotonic() - started
        cell.outputs = verdict.outputs(message)
        cell.execution_count = None
        return cell, self.resources

    def _judged(self, work):
        """``work()`` (a check) while one execution in the kernel serves its requests; a
        kernel lost in that execution is restarted once the check is over."""
        self._lost, self._killed = None, False
        try:
            self._may_probe()
            message = self._channel.judge(work, self._serve)
        except KernelFault as fault:  # the agent could not be installed: every request fails
            self._channel.fail(str(fault))
            return work()
        if self._lost is not None:
            self._recover(self._lost, self._probing)
        return message

    def _serve(self, code):
        """The kernel's serving execution (no time limit of its own: each of the check's
        calls has one, and the check's thread stops a kernel that goes on serving after it)."""
        keep = self.nb.cells[self._probing]
        self._serving = True
        try:
            self.execute_cell(nbformat.v4.new_code_cell(code), self._probing, store_history=False)
        except (DeadKernelError, CellTimeoutError) as e:
            self._lost = e
        finally:
            self._serving = False
            self.nb.cells[self._probing] = keep

    def _stop_serving(self, served):
        """From the check's thread, when a call ran over its time: interrupt the kernel, and
        kill it if it still serves ``iopub_timeout`` seconds later (it hung)."""
        _call(self.km.interrupt_kernel)
        if not served.wait(self.iopub_timeout):
            self._killed = True
            _call(self.km.signal_kernel, signal.SIGKILL)

    def _may_probe(self):
        if self._restarts > self.max_kernel_restarts:
            raise KernelFault("the kernel died too often")
        if self._left() <= 0:
            raise KernelFault(self._budget_message())

    def _judge_execute(self, code):
        """Run the judge's ``code`` in the kernel at the test cell being judged (the agent's
        install); its outputs. A kernel that died or hung there is restarted and
        :class:`KernelFault` raised."""
        index = self._probing
        self._may_probe()
        keep = self.nb.cells[index]
        probe = nbformat.v4.new_code_cell(code)
        self._killed = False
        try:
            self.execute_cell(probe, index, store_history=False)
        except (DeadKernelError, CellTimeoutError) as e:
            raise self._recover(e, index) from None
        finally:
            self.nb.cells[index] = keep
        return probe.outputs

    def _recover(self, error, index):
        """Record the kernel lost under the judge at test cell ``index`` and restart it; the
        KernelFault that says what happened."""
        died = isinstance(error, DeadKernelError) and not self._killed
        self._fault(self.nb.cells[index], index, "kernel died under the judge" if died else "hung")
        self._restart(index)
        return KernelFault(
            "the kernel died while your code was being called"
            if died
            else "your code did not stop when interrupted"
        )

    def _left(self):
        return self._deadline - time.monotonic()

    def _budget_message(self):
        return (
            f"the notebook's time budget ({self.notebook_budget:.0f} s) was used up before this "
            "cell; it was not run"
        )

    def _get_timeout(self, cell):
        if self._serving:
            return None
        timeout = super()._get_timeout(cell)
        left = max(self._left(), 1.0)
        return left if timeout is None else min(timeout, left)

    # ------------------------------------------------------------ the student's cells

    def preprocess_cell(
        self, cell: NotebookNode, resources: ResourcesDict, index: int
    ) -> tuple[NotebookNode, ResourcesDict]:
        if cell.cell_type != "code":
            return cell, resources
        if is_test_cell(cell):
            return self._judge(cell, index)
        if refusal(cell):
            cell.outputs = [_error("SubmissionLimit", refusal(cell))]
            return cell, resources
        if not cell.source.strip():
            return cell, resources
        if self._restarts > self.max_kernel_restarts:
            cell.outputs = [_error("NotRun", "the kernel died too often; this cell was not run")]
            return cell, resources
        if self._left() <= 0:
            if "budget" not in {f["fault"] for f in self._record.faults}:
                self._fault(cell, index, "budget")
            cell.outputs = [_error("NotRun", self._budget_message())]
            return cell, resources
        try:
            cell = self.execute_cell(cell, index, store_history=True)
        except (DeadKernelError, CellTimeoutError) as e:
            died = isinstance(e, DeadKernelError)
            what = "the kernel died" if died else "the cell did not stop when interrupted"
            cell.outputs.append(
                _error(
                    "KernelDied" if died else "CellTimeoutError",
                    f"{what} while running this cell (crash, out of memory or a hang); "
                    "it scores 0 and the kernel was restarted for the cells after it",
                )
            )
            self._fresh_kernel_without(cell, index, "kernel died" if died else "hung")
            return cell, self.resources
        # A cell that left processes behind (their zombies keep counting against the process
        # limit) or ran out of memory (what it allocated stays referenced) would spoil the
        # cells after it: continue in a fresh kernel without it.
        if isinstance(self.km, SandboxKernelManager) and self.km.reap_strays():
            self._fresh_kernel_without(cell, index, "left processes behind")
        elif any(o.get("ename") == "MemoryError" for o in cell.outputs):
            self._fresh_kernel_without(cell, index, "out of memory")
        elif any(o.get("ename") == "CellTimeoutError" for o in cell.outputs):
            self._fault(cell, index, "timeout")  # interrupted: the kernel lives on
        return cell, self.resources

    def _name(self, cell, index):
        """The cell as people find it: "the answer cell of Part 5 (`p5_mha`)", "a cell you
        added after Part 5"."""
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        name = self._places[index].name
        return f"{name} (`{gid}`)" if gid else name

    def _fault(self, cell, index, kind):
        gid = cell.metadata.get("nbgrader", {}).get("grade_id") or ""
        where = self._name(cell, index)
        self._record.faults.append({"cell": gid, "where": where, "fault": kind})
        self.log.warning("%s in %s", kind, where)

    def _fresh_kernel_without(self, cell, index, fault):
        """Record ``fault`` and go on in a new kernel that has run the cells up to ``index``
        except the faulty ones."""
        self._fault(cell, index, fault)
        self._dead.add(index)
        self._restart(index + 1)

    def _restart(self, index):
        """A fresh sandboxed kernel with the cells before ``index`` replayed (outputs dropped)."""
        self._restarts += 1
        self._channel.reset()  # the judge's agent lived in the old kernel
        if self._restarts > self.max_kernel_restarts:
            return  # the remaining cells are not run; nbclient shuts this kernel down at the end
        run_sync(self._async_cleanup_kernel)()
        self.km = self.create_kernel_manager()
        self.start_new_kernel()
        self.start_new_kernel_client()
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

    def output(self, outs, msg, display_id, cell_index):
        if self._probing is not None:
            return None  # what the kernel prints while the judge calls it is not kept
        self._outputs[cell_index] += 1
        if self._outputs[cell_index] > self.max_outputs:
            return self._too_many_outputs(outs, cell_index)
        content = msg.get("content", {})
        size = len(content.get("text", "")) + sum(
            len(str(v)) for v in content.get("data", {}).values()
        )
        left = self.max_output_bytes - self._output_bytes[cell_index]
        self._output_bytes[cell_index] += size
        if size <= left:
            return super().output(outs, msg, display_id, cell_index)
        if left > 0 and msg["msg_type"] == "stream":
            msg = {**msg, "content": {**content, "text": content["text"][:left]}}
            super().output(outs, msg, display_id, cell_index)
        if cell_index not in self._truncated:
            self._truncated.add(cell_index)
            self._fault(self.nb.cells[cell_index], cell_index, "output truncated")
            note = f"[output truncated: this cell printed more than {self.max_output_bytes} bytes]"
            outs.append(nbformat.v4.new_output("display_data", data={"text/plain": note}))
        return None

    def _too_many_outputs(self, outs, cell_index):
        """Past ``max_outputs``: drop the output and, the first time, interrupt the cell (each
        output costs the grader a message), saying so in the cell."""
        if self._outputs[cell_index] == self.max_outputs + 1:
            self._fault(self.nb.cells[cell_index], cell_index, "refused: too many outputs")
            note = (
                f"[this cell was interrupted: it sent more than {self.max_outputs} outputs "
                "(ResilientExecute.max_outputs)]"
            )
            outs.append(nbformat.v4.new_output("display_data", data={"text/plain": note}))
            interrupted = self.km.interrupt_kernel()
            if inspect.isawaitable(interrupted):
                asyncio.ensure_future(interrupted)
        return None


def _call(method, *args):
    """Call a kernel manager's method from a thread other than the grader's event loop's."""
    result = method(*args)
    if inspect.isawaitable(result):
        asyncio.run(result)
