"""The judge's session with one notebook's kernel: its checks, its secret, its channel.

A :class:`JudgeSession` is made per notebook: the assignment's checks, a fresh secret,
the channel to the judge's agent in the kernel (:class:`~attncourse.judge.channel.PipeChannel`)
and the student's namespace as the judge sees it. :meth:`JudgeSession.message` runs one
test cell's check in a thread of the grader while one execution in the kernel serves its
requests; the kernel's life (executions, interrupts, restarts) is
:class:`~attncourse.preprocessors.kernellife.KernelLife`'s.
"""

import time
from logging import Logger
from pathlib import Path

import torch
from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode

from attncourse.constants import EXAMPLE_STUDENT
from attncourse.judge import verdict
from attncourse.judge.channel import PipeChannel
from attncourse.judge.remote import KernelFault, Session, StudentNamespace
from attncourse.pointers import located_cells
from attncourse.preprocessors.kernellife import KernelLife
from attncourse.roster import roster_reader
from attncourse.runrecord import RunRecord


class JudgeSession:
    """One notebook's judge, reaching the kernel of ``kernel`` over the socket ``path``."""

    def __init__(
        self,
        kernel: KernelLife,
        nb: NotebookNode,
        resources: ResourcesDict,
        record: RunRecord,
        path: Path,
        max_reply_bytes: int,
        checks_module: str | None,
        log: Logger,
    ) -> None:
        info = resources.get("nbgrader", {})
        assignment = info.get("assignment")
        try:
            self._checks = verdict.checks_of(assignment, checks_module)
        except (ImportError, AttributeError) as e:
            log.error("No hidden tests for %s: %s", assignment, e)
            self._checks = {}
        torch.set_num_threads(1)  # the judge's references are small: threads only contend
        self._kernel, self._log = kernel, log
        self._secret = verdict.new_secret()
        self.channel = PipeChannel(
            kernel.probe,
            path,
            max_reply_bytes,
            timeout=kernel.call_timeout,
            stop=kernel.stop_serving,
            grace=kernel.iopub_timeout,
        )
        self.session = Session(self.channel)
        self._ns = StudentNamespace(
            self.session,
            located_cells(nb),
            info.get("student") or EXAMPLE_STUDENT,
            roster=roster_reader(info.get("db_url")),
            matches=record.instance_matches,  # classmates' numbers, for the report
        )
        self.seconds = 0.0  # in checks, their requests included
        self._lost = None

    def message(self, cell: NotebookNode, index: int) -> str | None:
        """The verdict of test cell ``index``, computed here from data the kernel returns."""
        kernel = self._kernel
        check = self._checks.get(cell.metadata.get("nbgrader", {}).get("grade_id", ""))
        if check is None:
            message = "no hidden test is registered for this cell (an instructor's error)"
            self._log.error("%s: %s", kernel.where(cell, index), message)
            return message
        if kernel.left() <= 0:
            return kernel.budget_message()
        started = time.monotonic()
        try:
            with kernel.probing_at(index):
                return self._judged(
                    lambda: verdict.run_check(check, self._ns, self._secret, test_index=index),
                    index,
                )
        finally:
            self.seconds += time.monotonic() - started

    def _judged(self, work, index):
        """``work()`` (a check) while one execution in the kernel serves its requests; a
        kernel lost in that execution is restarted once the check is over."""
        self._lost = None
        try:
            self._kernel.may_probe()
            message = self.channel.judge(work, self._serve)
        except KernelFault as fault:  # the agent could not be installed: every request fails
            self.channel.fail(str(fault))
            return work()
        if self._lost is not None:
            self._kernel.recover(self._lost, index)
        return message

    def _serve(self, code):
        self._lost = self._kernel.serve(code)

    def kernel_replaced(self) -> None:
        """The judge's agent lived in the old kernel: install it again before the next check."""
        self.channel.reset()
