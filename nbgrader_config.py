"""nbgrader configuration of the attention course (instructor side)."""

import os

from attncourse.plainfiles import Refusals
from attncourse.sandbox.forkstart import ForkServers
from attncourse.sandbox.sparekernel import SpareKernel

c = get_config()  # noqa: F821

c.CourseDirectory.course_id = "attention"
c.CourseDirectory.assignment_id = ""

# Budgets of one notebook (attncourse.preprocessors.resilientexecute; defaults: attncourse.constants).
# Seconds a single cell (or one call of the judge into the kernel) may run before it is interrupted.
c.Execute.timeout = 120
# Seconds a whole notebook may run; past it the rest is not run and its tests fail, saying so.
c.ResilientExecute.notebook_budget = 900
# Bytes a cell may print before the rest is dropped (a note says so).
c.ResilientExecute.max_output_bytes = 1_000_000
# Bytes the kernel may send the judge in answer to one call; a larger answer fails that check.
c.ResilientExecute.max_reply_bytes = 256 * 2**20
# Seconds to wait for a cell's last output after its reply (a flood of output).
c.ResilientExecute.iopub_timeout = 30
# Kernel deaths or hangs in one notebook after which its remaining cells are not run.
c.ResilientExecute.max_kernel_restarts = 3
# One fork server (torch imported once) and one spare kernel per nbgrader command, shared by its
# notebooks (attncourse grade's grading processes pass their own, shared by their students).
c.ResilientExecute.fork_servers = ForkServers()
c.ResilientExecute.spare = SpareKernel()

# The kernel loads nothing of the course: hidden tests run in the grader's process (attncourse.judge).
# It computes as deterministically as PyTorch allows (no TF32, deterministic kernels, a fixed cuBLAS
# workspace); no check relies on it: the judge compares in float64 with measured tolerances.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
c.Execute.extra_arguments = [
    "--HistoryManager.hist_file=:memory:",
    "--IPKernelApp.exec_lines=['import torch as _t; _t.use_deterministic_algorithms(True, warn_only"
    "=True); _t.backends.cuda.matmul.allow_tf32 = False; _t.backends.cudnn.allow_tf32 = False; del _t']",
]

# Students may not edit the question, setup and test cells.
c.LockCells.lock_readonly_cells = True
c.LockCells.lock_grade_cells = True

# attncourse grade: empty grades on a local Dask cluster started per run; an address grades on a
# running one (README, "Grading a large class"), as `make grade SCHEDULER=tcp://HOST:8786` does.
c.CourseGrading.scheduler = ""

# Each kernel runs sandboxed (ResilientExecute always starts it with
# attncourse.sandbox.kernelmanager.SandboxKernelManager): hidden course tree, no network, these
# limits (0 turns a limit off; defaults: attncourse.constants).
# Off only where the platform cannot sandbox at all: kernels would then see the whole course.
c.SandboxKernelManager.enabled = True
# Address space of the kernel (MiB); not applied on a GPU grader, where CUDA reserves far more.
c.SandboxKernelManager.memory_mb = 3072
# CPU seconds of one kernel.
c.SandboxKernelManager.cpu_seconds = 900
# Processes and threads of the kernel's uid (a fork bomb stops here).
c.SandboxKernelManager.processes = 64
# Largest file the kernel may write (MiB).
c.SandboxKernelManager.file_size_mb = 64
# Each kernel's own memory cgroup (MiB): all its processes and its tmpfs pages; the only memory
# limit on a GPU grader (no address-space limit under CUDA). Needs root or a delegated cgroup.
c.SandboxKernelManager.cgroup_memory_mb = 3072
# One scratch tmpfs per kernel (MiB): /tmp, /var/tmp, /dev/shm and what it writes to its copy.
c.SandboxKernelManager.tmpfs_mb = 256
# GPU memory (MiB) each kernel may pin on a card it shares, held by the grader's CUDA MPS daemon;
# also how many kernels a GPU's free memory holds by default (0: no limit, lanes from cores only).
c.SandboxKernelManager.gpu_memory_mb = 4096
# No network for the kernel (a network namespace); as root, a fresh uid per kernel.
c.SandboxKernelManager.isolate_network = True
c.SandboxKernelManager.drop_privileges = True
# Kernels are forked from a server that imported these once (never the course's grading code).
c.SandboxKernelManager.fork_server = True
c.SandboxKernelManager.preload = ["torch", "numpy", "ipykernel.kernelapp"]

# An unreadable notebook (bad JSON) is graded as empty with the reason, not an aborted run.
c.Autograde.exporter_class = "attncourse.tolerantexporter.TolerantNotebookExporter"

# Before a submission runs: scan it for tampering (imports, rebinding torch/np/builtins, locked-cell edits).
c.Autograde.sanitize_preprocessors = [
    # first: no symlink, FIFO or device reaches a kernel
    "attncourse.preprocessors.refusespecialfiles.RefuseSpecialFiles",
    # the price of one submission: cells, a cell's source, what the rule prover parses (its traits)
    "attncourse.preprocessors.submissionlimits.SubmissionLimits",
    "nbgrader.preprocessors.ClearOutput",
    # put back deleted/stripped/duplicated grade cells
    "attncourse.preprocessors.repairgradecells.RepairGradeCells",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    # before OverwriteCells restores the locked cells
    "attncourse.preprocessors.integrityscan.IntegrityScan",
    "nbgrader.preprocessors.OverwriteCells",
    # after it: the provided cell draws the numbers of the id the notebook is graded under
    "attncourse.preprocessors.pininstance.PinInstance",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# Before autograde copies a student's folder: remove its symlinks and special files, never followed
# (one record of them per command, which RefuseSpecialFiles writes into each notebook).
refusals = Refusals()
c.Autograde.pre_convert_hook = refusals
c.RefuseSpecialFiles.refusals = refusals
# Run: student cells in the sandboxed kernel, each test cell's verdict from the judge (outside it).
# After it ran: flag parts with integrity findings for review; show graders the mark scheme.
c.Autograde.autograde_preprocessors = [
    # sandboxed kernel + judge; a crash costs its cell
    "attncourse.preprocessors.resilientexecute.ResilientExecute",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    # student output is shown as text, never run
    "attncourse.preprocessors.inertoutputs.InertOutputs",
    # a warning on stderr no longer zeroes a test
    "attncourse.preprocessors.stderrasdisplay.StderrAsDisplay",
    # repairs, faults, protections into the notebook
    "attncourse.preprocessors.recordgradingrun.RecordGradingRun",
    "nbgrader.preprocessors.SaveAutoGrades",
    # after SaveAutoGrades: flag the part for review, say why
    "attncourse.preprocessors.flagintegrity.FlagIntegrity",
    # an unreadable or untouched notebook: flagged, every grade needs a look, the reason in a comment
    "attncourse.preprocessors.flagnotgraded.FlagNotGraded",
    # graders-only cell under each written answer
    "attncourse.preprocessors.insertmarkscheme.InsertMarkScheme",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# Feedback shows each test's result and message, never hidden-test source, tracebacks or mark schemes.
c.GenerateFeedback.preprocessors = [
    # student output is shown as text, never run
    "attncourse.preprocessors.inertoutputs.InertOutputs",
    # the submission's status: a not-graded one gets a banner (reason, next step), not a page of zeros
    "attncourse.preprocessors.feedbackstatus.FeedbackStatus",
    "nbgrader.preprocessors.GetGrades",
    # the contents list names the parts; a written answer not graded yet is "awaiting grading"
    "attncourse.preprocessors.partcontents.PartContents",
    # test results and messages, no hidden test, traceback or mark scheme
    "attncourse.preprocessors.hidehiddentests.HideHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
# The feedback page: nbgrader's, with a contents list and score lines that name the parts, and a
# banner (reason, next step) instead of a page of zeros for a submission that was not graded.
c.GenerateFeedback.exporter_class = "attncourse.feedbackexporter.FeedbackExporter"
# formgrader's pages (and feedback): student output shown as text, Markdown rendered without script,
# links and images that cannot reach the Jupyter server, math as MathML; nothing loaded from outside
# (formgrader's MathJax comes from the Jupyter server, the feedback needs none).
from attncourse.pagetemplates import use_offline_templates  # noqa: E402

use_offline_templates()
c.HTMLExporter.preprocessors = ["attncourse.preprocessors.inertoutputs.InertOutputs"]
c.HTMLExporter.filters = {"markdown2html": "attncourse.safemarkdown.SafeMarkdown"}
c.HTMLExporter.sanitize_html = True
# nbgrader export writes nbgrader's grades.csv and a Canvas gradebook import file beside it.
c.ExportApp.plugin_class = "attncourse.export.CourseExport"

# Exchange for release_assignment / collect / release_feedback: <course>/exchange (git-ignored).
# On a JupyterHub use one directory every user can reach: c.Exchange.root = "/srv/nbgrader/exchange"
c.Exchange.root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exchange")
# nbgrader collect copies regular files and folders only: symlinks and special files are refused.
c.ExchangeFactory.collect = "attncourse.exchange.PlainFilesCollect"

# nbgrader zip_collect (make collect-lms): read student and notebook from Canvas/Moodle file names.
c.ZipCollectApp.collector_plugin = "attncourse.lms.LmsCollector"
