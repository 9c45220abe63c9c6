"""A kernel that dies is replaced; when no replacement starts, the notebook is still graded.

``ResilientExecute`` restarts a dead kernel and replays the cells before the one that killed
it. A replacement can fail to start (a loaded grader past jupyter_client's start timeout, a
fork server gone): then the cells after it are not run and say why, a fault names the cause,
and ``preprocess`` returns, so nbgrader keeps the student's autograded notebook instead of
dropping it as an error. The control: the same notebook with a replacement that starts.
"""

import pytest
from nbformat.v4 import new_code_cell, new_notebook
from sandboxkit import SERVERS

from attncourse.constants import METADATA_KEY
from attncourse.preprocessors.resilientexecute import ResilientExecute

pytestmark = pytest.mark.kernel


def _notebook():
    nb = new_notebook(
        cells=[
            new_code_cell("x = 1"),
            new_code_cell("import os\nos._exit(1)"),
            new_code_cell("print(x + 1)"),
        ]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    return nb


def _run(execute, tmp_path):
    resources = {"metadata": {"path": str(tmp_path)}, "nbgrader": {"assignment": "toy"}}
    nb, resources = execute.preprocess(_notebook(), resources)
    return nb, resources[METADATA_KEY]


def test_a_replacement_kernel_that_fails_to_start_costs_only_the_cells_after(tmp_path):
    execute = ResilientExecute(fork_servers=SERVERS)
    starts = []
    start = execute.start_new_kernel

    def second_start_fails(**kwargs):
        starts.append(1)
        if len(starts) > 1:
            raise RuntimeError("Kernel didn't respond in 60 seconds")
        return start(**kwargs)

    execute.start_new_kernel = second_start_fails
    nb, record = _run(execute, tmp_path)
    assert len(starts) == 2
    assert nb.cells[1].outputs[0]["ename"] == "KernelDied"
    why = "no fresh kernel could be started (RuntimeError: Kernel didn't respond in 60 seconds)"
    assert [(o["ename"], o["evalue"]) for o in nb.cells[2].outputs] == [
        ("NotRun", f"{why}; this cell was not run")
    ]
    assert {"cell": "", "where": "a restart", "fault": why} in record.faults


def test_control_a_replacement_that_starts_runs_the_cells_after(tmp_path):
    nb, record = _run(ResilientExecute(fork_servers=SERVERS), tmp_path)
    assert nb.cells[1].outputs[0]["ename"] == "KernelDied"
    assert [o.get("text") for o in nb.cells[2].outputs] == ["2\n"]
    assert [f["fault"] for f in record.faults] == ["kernel died"]


# Code in the kernel holds the session's key and its sockets: it can send IOPub messages of a
# wrong signature (or threads can interleave the frames of two messages). nbclient's reader
# raises ValueError ("Invalid Signature") out of the cell's execution, and nbgrader dropped the
# whole autograded notebook (the attack suite's `thread_writes_into_judge_channel` student, in
# CI and in make test under load). Now that cell scores 0 and names why, the kernel is replaced
# and the cells after it run.
FORGED_IOPUB = """
from jupyter_client.session import Session
kernel = get_ipython().kernel
forger = Session(key=b"not the kernel's key", username=kernel.session.username)
forger.send(kernel.iopub_socket, "stream", {"name": "stdout", "text": "forged"},
            parent=kernel.get_parent("shell"))
import time; time.sleep(1)
"""


def _forging(forge):
    nb = new_notebook(
        cells=[
            new_code_cell("x = 1"),
            new_code_cell(FORGED_IOPUB if forge else "y = 2"),
            new_code_cell("print(x + 1)"),
        ]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    return nb


@pytest.mark.parametrize("forge", [True, False], ids=["forged_signature", "control"])
def test_a_message_of_a_wrong_signature_costs_only_its_cell(tmp_path, forge):
    resources = {"metadata": {"path": str(tmp_path)}, "nbgrader": {"assignment": "toy"}}
    nb, resources = ResilientExecute(fork_servers=SERVERS).preprocess(_forging(forge), resources)
    record = resources[METADATA_KEY]
    assert [o.get("text") for o in nb.cells[2].outputs] == ["2\n"]  # ran, with cell 1 replayed
    if not forge:
        assert record.faults == [] and nb.cells[1].outputs == []
        return
    [error] = [o for o in nb.cells[1].outputs if o["output_type"] == "error"]
    assert error["ename"] == "KernelMessage"
    assert "could not read (ValueError: Invalid Signature)" in error["evalue"], error["evalue"]
    assert [f["fault"] for f in record.faults] == [
        "the kernel sent a message the grader could not read (ValueError: Invalid Signature)"
    ]
