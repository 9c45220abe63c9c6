"""nbgrader configuration of the attention course (instructor side)."""

import os

c = get_config()  # noqa: F821

c.CourseDirectory.course_id = "attention"
c.CourseDirectory.assignment_id = ""

# Seconds a single cell may run when autograding before it is interrupted and loses its points.
c.Execute.timeout = 120

# Load the tamper-resistant checking helpers before the first student cell runs.
c.Execute.extra_arguments = [
    "--HistoryManager.hist_file=:memory:",
    "--IPKernelApp.exec_lines=['import attncourse.checks']",
]

# Students may not edit the question, setup and test cells.
c.LockCells.lock_readonly_cells = True
c.LockCells.lock_grade_cells = True

# Each kernel runs sandboxed (attncourse.sandbox): hidden course tree, no network, these limits.
c.SandboxKernelManager.memory_mb = 3072
c.SandboxKernelManager.cpu_seconds = 900

# An unreadable notebook (bad JSON) is graded as empty with the reason, not an aborted run.
c.Autograde.exporter_class = "attncourse.preprocessors.TolerantNotebookExporter"

# Before a submission runs: scan it for tampering (imports, rebinding torch/np/builtins, locked-cell edits).
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.ClearOutput",
    "attncourse.preprocessors.RepairGradeCells",  # put back deleted/stripped/duplicated grade cells
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "attncourse.integrity.IntegrityScan",  # before OverwriteCells restores the locked cells
    "nbgrader.preprocessors.OverwriteCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# After it ran: withhold the points of parts with integrity findings; show graders the mark scheme.
c.Autograde.autograde_preprocessors = [
    "attncourse.preprocessors.ResilientExecute",  # sandboxed kernel; a crash costs only its cell
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "attncourse.preprocessors.StderrAsDisplay",  # a warning on stderr no longer zeroes a test
    "attncourse.preprocessors.RecordGradingRun",  # repairs, faults, protections into the notebook
    "nbgrader.preprocessors.SaveAutoGrades",
    "attncourse.integrity.WithholdIntegrity",  # after SaveAutoGrades: zero the part, comment why
    "attncourse.markscheme.InsertMarkScheme",  # graders-only cell under each written answer
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# Feedback shows each test's result and message, never hidden-test source, tracebacks or mark schemes.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "attncourse.feedback.HideHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
# nbgrader export writes nbgrader's grades.csv and a Canvas gradebook import file beside it.
c.ExportApp.plugin_class = "attncourse.export.CourseExport"

# Exchange for release_assignment / collect / release_feedback: <course>/exchange (git-ignored).
# On a JupyterHub use one directory every user can reach: c.Exchange.root = "/srv/nbgrader/exchange"
c.Exchange.root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exchange")

# nbgrader zip_collect (make collect-lms): read student and notebook from Canvas/Moodle file names.
c.ZipCollectApp.collector_plugin = "attncourse.lms.LmsCollector"
