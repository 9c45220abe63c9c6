"""Names and defaults the package shares, each defined here and read from here.

``nbgrader_config.py`` sets what an instructor may change (the course id, the limits and
budgets below); the plugins fall back to these defaults where a configuration leaves a
setting out. Nothing here imports anything of the package.
"""

import os

# Key of the pipeline's record in notebook, cell and output metadata.
METADATA_KEY = "attncourse"

# Folders and files of a course directory (nbgrader's default names, which this course keeps).
SOURCE = "source"
RELEASE = "release"
SUBMITTED = "submitted"
AUTOGRADED = "autograded"
FEEDBACK = "feedback"
GRADEBOOK = "gradebook.db"
REPORTS = "reports"  # attncourse report
DIST = "dist"  # attncourse release-zip
DEMO = ".demo"  # attncourse demo's scratch course
RUN_RECORDS = ".attncourse"  # in autograded/: each grading run's summary and logs

# Limits of one sandboxed kernel (SandboxKernelManager; 0 turns a limit off).
MEMORY_MB = 3072  # address space (not applied on a GPU grader)
CPU_SECONDS = 900  # CPU time of the kernel
PROCESSES = 64  # processes and threads of the kernel's uid
FILE_SIZE_MB = 64  # largest file the kernel may write
CGROUP_MEMORY_MB = 3072  # the kernel's own memory cgroup: all its processes and its tmpfs
GPU_MEMORY_MB = (
    4096  # GPU memory a kernel may pin on a card it shares (CUDA MPS's per-client limit)
)
TMPFS_MB = 256  # its one scratch tmpfs: /tmp, /var/tmp, /dev/shm and changes to its copy
# Modules the fork server imports once before forking kernels (never the course's grading code).
PRELOAD = ("torch", "numpy", "ipykernel.kernelapp")

# Budgets of one notebook (Execute, ResilientExecute).
CELL_TIMEOUT_S = 120  # one cell, or one call of the judge into the kernel
NOTEBOOK_BUDGET_S = 900  # the whole notebook: its cells and the judge's calls
MAX_OUTPUT_BYTES = 1_000_000  # what a cell may print before the rest is dropped
MAX_REPLY_BYTES = 256 * 2**20  # the largest answer the kernel may send the judge for one call
# The grading process's own data limit (RLIMIT_DATA): a reply or a check that would need more
# fails that check with a MemoryError instead of taking the worker down. A grading process
# uses about 1 GiB; the largest accepted reply (a 256 MiB array) adds about 1 GiB while decoded.
GRADER_DATA_MB = 6144
IOPUB_TIMEOUT_S = 30  # wait for a cell's last output after its reply
MAX_KERNEL_RESTARTS = 3  # kernel deaths or hangs after which the remaining cells are not run


def cores():
    """The CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def default_workers():
    """Grading workers on one machine when none are asked for: one per core."""
    return cores()


def threads_per_kernel(slots, available=None):
    """Torch threads of each kernel when ``slots`` kernels share ``available`` cores (default:
    this machine's): the cores shared out, at least one each, so kernels never oversubscribe."""
    return max(1, (available or cores()) // max(1, slots))


# The id a notebook draws its own numbers from when neither a hub login nor STUDENT_ID is set,
# and the id the judge grades under when none is given (the case tables, in-process runs).
EXAMPLE_STUDENT = "example"
