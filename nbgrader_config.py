"""nbgrader configuration of the attention course (instructor side)."""

import os

c = get_config()  # noqa: F821

c.CourseDirectory.course_id = "attention"
c.CourseDirectory.assignment_id = ""

# Seconds a single cell (or one call of the judge into the kernel) may run before it is interrupted.
c.Execute.timeout = 120
# Seconds a whole notebook may run; past it the rest is not run and its tests fail, saying so.
c.ResilientExecute.notebook_budget = 900

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

# Each kernel runs sandboxed (attncourse.sandbox): hidden course tree, no network, these limits.
c.SandboxKernelManager.memory_mb = 3072
c.SandboxKernelManager.cpu_seconds = 900
# Each kernel's own memory cgroup (MiB): all its processes and its tmpfs pages; the only memory
# limit on a GPU grader (no address-space limit under CUDA). Needs root or a delegated cgroup.
c.SandboxKernelManager.cgroup_memory_mb = 3072
# One scratch tmpfs per kernel (MiB): /tmp, /var/tmp, /dev/shm and what it writes to its copy.
c.SandboxKernelManager.tmpfs_mb = 256

# An unreadable notebook (bad JSON) is graded as empty with the reason, not an aborted run.
c.Autograde.exporter_class = "attncourse.preprocessors.TolerantNotebookExporter"

# Before a submission runs: scan it for tampering (imports, rebinding torch/np/builtins, locked-cell edits).
c.Autograde.sanitize_preprocessors = [
    "attncourse.plainfiles.RefuseSpecialFiles",  # first: no symlink, FIFO or device reaches a kernel
    "nbgrader.preprocessors.ClearOutput",
    "attncourse.preprocessors.RepairGradeCells",  # put back deleted/stripped/duplicated grade cells
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "attncourse.integrity.IntegrityScan",  # before OverwriteCells restores the locked cells
    "nbgrader.preprocessors.OverwriteCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# Before autograde copies a student's folder: remove its symlinks and special files, never followed.
c.Autograde.pre_convert_hook = "attncourse.plainfiles.refuse_before_copy"
# Run: student cells in the sandboxed kernel, each test cell's verdict from the judge (outside it).
# After it ran: flag parts with integrity findings for review; show graders the mark scheme.
c.Autograde.autograde_preprocessors = [
    "attncourse.preprocessors.ResilientExecute",  # sandboxed kernel + judge; a crash costs its cell
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "attncourse.inert.InertOutputs",  # student output is shown as text, never run
    "attncourse.preprocessors.StderrAsDisplay",  # a warning on stderr no longer zeroes a test
    "attncourse.preprocessors.RecordGradingRun",  # repairs, faults, protections into the notebook
    "nbgrader.preprocessors.SaveAutoGrades",
    "attncourse.integrity.FlagIntegrity",  # after SaveAutoGrades: flag the part for review, say why
    "attncourse.markscheme.InsertMarkScheme",  # graders-only cell under each written answer
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# Feedback shows each test's result and message, never hidden-test source, tracebacks or mark schemes.
c.GenerateFeedback.preprocessors = [
    "attncourse.inert.InertOutputs",  # student output is shown as text, never run
    "nbgrader.preprocessors.GetGrades",
    "attncourse.feedback.HideHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
# formgrader's pages (and feedback): student output shown as text, Markdown rendered without script.
c.HTMLExporter.preprocessors = ["attncourse.inert.InertOutputs"]
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
