"""Autograde stage, in place of ``Execute``: student cells in the sandbox, tests by the judge.

:class:`ResilientExecute` composes the kernel's life
(:class:`~attncourse.preprocessors.kernellife.KernelLife`: the sandboxed kernel, restarted
with the cells before replayed when it dies or hangs) with the judge's session
(:class:`~attncourse.preprocessors.judgesession.JudgeSession`). It runs the student's
cells, caps each cell's output and the whole notebook's time, scores a cell that lost
the kernel 0, and at each test cell writes the judge's verdict: test cells never run in
the kernel.
"""

import asyncio
import inspect
import time
from collections import defaultdict

import nbformat
from jupyter_client.manager import KernelManager
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from traitlets import Dict, Integer, Unicode

from attncourse.cells import is_test_cell
from attncourse.constants import METADATA_KEY
from attncourse.judge import verdict
from attncourse.preprocessors.judgesession import JudgeSession
from attncourse.preprocessors.kernellife import KernelLife, unreadable
from attncourse.preprocessors.submissionlimits import refusal
from attncourse.runrecord import RunRecord
from attncourse.sandbox.filesystem import JUDGE_SOCKET
from attncourse.sandbox.kernelmanager import SandboxKernelManager


def _lost(error: Exception) -> tuple[str, str, str]:
    """(error name, what the student reads, the run record's fault) of a cell whose kernel
    was lost while it ran."""
    why = "while running this cell (crash, out of memory or a hang)"
    if isinstance(error, DeadKernelError):
        return "KernelDied", f"the kernel died {why}", "kernel died"
    if isinstance(error, CellTimeoutError):
        return "CellTimeoutError", f"the cell did not stop when interrupted {why}", "hung"
    return "KernelMessage", f"{unreadable(error)} while running this cell", unreadable(error)


def _error(ename, evalue):
    return nbformat.v4.new_output(
        "error", ename=ename, evalue=evalue, traceback=[f"\x1b[0;31m{ename}\x1b[0m: {evalue}"]
    )


class ResilientExecute(KernelLife):
    """nbgrader's ``Execute`` in the sandbox, surviving dead, hung and chatty kernels, with
    each test cell's verdict from the judge."""

    timeout = Integer(
        120,
        allow_none=True,
        help="Seconds a single cell (or one call of the judge into the kernel) may run before "
        "it is interrupted (None: no limit but the notebook's budget).",
    ).tag(config=True, limit=True)
    max_output_bytes = Integer(
        1_000_000, help="Bytes a cell may print before the rest is dropped (a note says so)."
    ).tag(config=True, limit=True)
    max_outputs = Integer(
        1000,
        help="Outputs (messages: prints, displays) one cell may send; past it the cell is "
        "interrupted and the rest dropped, saying so. Each costs the grader a message; the "
        "course's cells send at most a few dozen.",
    ).tag(config=True, limit=True)
    checks_modules = Dict(
        value_trait=Unicode(),
        help="assignment -> module holding its CHECKS, for assignments whose hidden tests are "
        "not in attncourse.grading.<assignment>.",
    ).tag(config=True)
    max_reply_bytes = Integer(
        256 * 2**20,
        help="Bytes the kernel may send the judge in answer to one call; a larger answer fails "
        "that check.",
    ).tag(config=True, limit=True)

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
        self._output_bytes = defaultdict(int)
        self._outputs = defaultdict(int)
        self._truncated = set()
        with self.workspace(nb, resources, record) as workspace:
            assignment = resources.get("nbgrader", {}).get("assignment")
            self.judge = JudgeSession(
                self,
                nb,
                resources,
                record,
                workspace.run / JUDGE_SOCKET,
                self.max_reply_bytes,
                self.checks_modules.get(assignment),
                self.log,
            )
            started = self._kernel_started = time.monotonic()
            nb, resources = super().preprocess(nb, resources, km)
        record.timing["execute_s"] = round(time.monotonic() - started, 3)
        record.timing["judge_s"] = round(self.judge.seconds, 3)  # its checks, requests included
        record.timing["requests"] = self.judge.session.requests
        return nb, resources

    def kernel_replaced(self) -> None:
        self.judge.kernel_replaced()

    def preprocess_cell(
        self, cell: NotebookNode, resources: ResourcesDict, index: int
    ) -> tuple[NotebookNode, ResourcesDict]:
        if cell.cell_type != "code":
            return cell, resources
        if is_test_cell(cell):
            cell.outputs = verdict.outputs(self.judge.message(cell, index))
            cell.execution_count = None
            return cell, self.resources
        if refusal(cell):
            cell.outputs = [_error("SubmissionLimit", refusal(cell))]
            return cell, resources
        if not cell.source.strip():
            return cell, resources
        if self.gave_up():
            cell.outputs = [_error("NotRun", f"{self.lost()}; this cell was not run")]
            return cell, resources
        if self.left() <= 0:
            if "budget" not in {f["fault"] for f in self._record.faults}:
                self._fault(cell, index, "budget")
            cell.outputs = [_error("NotRun", self.budget_message())]
            return cell, resources
        try:
            cell = self.execute_cell(cell, index, store_history=True)
        except Exception as e:  # noqa: BLE001 - dead, hung, or a message nbclient could not
            # read (nbgrader would drop the whole notebook): this cell scores 0, the kernel is new
            ename, what, fault = _lost(e)
            cell.outputs.append(
                _error(
                    ename,
                    f"{what}; it scores 0 and the kernel was restarted for the cells after it",
                )
            )
            self.fresh_kernel_without(cell, index, fault)
            return cell, self.resources
        # A cell that left processes behind (their zombies keep counting against the process
        # limit) or ran out of memory (what it allocated stays referenced) would spoil the
        # cells after it: continue in a fresh kernel without it.
        if isinstance(self.km, SandboxKernelManager) and self.km.reap_strays():
            self.fresh_kernel_without(cell, index, "left processes behind")
        elif any(o.get("ename") == "MemoryError" for o in cell.outputs):
            self.fresh_kernel_without(cell, index, "out of memory")
        elif any(o.get("ename") == "CellTimeoutError" for o in cell.outputs):
            self._fault(cell, index, "timeout")  # interrupted: the kernel lives on
        return cell, self.resources

    def output(self, outs: list, msg: dict, display_id: str | None, cell_index: int) -> None:
        if self.probing is not None:
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
