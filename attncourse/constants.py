"""Names and defaults the package shares, each defined here and read from here.

``nbgrader_config.py`` sets what an instructor may change (the course id, the plugins); the
limits of a kernel and a notebook are traits of the plugins, not here. Nothing here imports anything of the package.
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

# The limits of a kernel and of a notebook are traits (tagged ``limit``) of
# SandboxKernelManager and ResilientExecute, each defined there once; ``make limits`` lists them.
# Modules the fork server imports once before forking kernels (never the course's grading code).
# matplotlib.pyplot: every assignment draws; imported in each kernel it cost about 0.3 s of CPU.
# torch._inductor.config: the kernel's first line (``exec_lines`` in nbgrader_config.py) calls
# torch.use_deterministic_algorithms, which imports it, and with it torch._dynamo and sympy: 2.3 s
# of CPU in every kernel, more than the cells of a whole at_scale notebook (py-spy on an
# autograde of 23 at_scale notebooks: 38 % of the kernels' CPU). It starts no thread and touches
# no GPU at import (tests/sandbox/test_gpu.py forks a kernel that initialises CUDA after it).
# Kernels need torch._dynamo even without that line: torch.optim's optimizers import it when the
# first one is made (torch._compile._disable_dynamo), as attention_at_scale's training part does
# in every kernel; stop 47 set the deterministic mode without the import and left the server 2.3 s
# cheaper to start, and each at_scale kernel 2.3 s dearer (make test's CPU unchanged): reverted.
# ipykernel.debugger: every kernel imports its debugger as it starts (debugpy and pydevd, 130
# modules, 0.1-0.4 s of CPU); importing it starts no thread.
PRELOAD = (
    "torch",
    "torch._inductor.config",
    "numpy",
    "ipykernel.kernelapp",
    "ipykernel.debugger",
    "matplotlib.pyplot",
)

# The grading process's own data limit (RLIMIT_DATA): a reply or a check that would need more
# fails that check with a MemoryError instead of taking the worker down. A grading process
# uses about 1 GiB; the largest accepted reply (a 256 MiB array) adds about 1 GiB while decoded.
GRADER_DATA_MB = 6144


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
