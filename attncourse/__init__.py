"""Instructor-only package of the attention course: grading helpers, nbgrader plugins, CLI.

Nothing here is shipped to students, and no development tool lives here (``devtools/``: demo,
bench, the autograde of test submissions). Hidden tests run in the grader's process (the judge);
a kernel sees only the sandbox's kernel side (``attncourse.sandbox.KERNEL_MODULES``).
Imports point down this map, never up (``tests/unit/test_structure.py``).

Command line and commands
    ``cli``           ``attncourse <command>``, which the Makefile calls
    ``pipeline``      ``attncourse grade``: a class on a Dask cluster (the client)
    ``gradingsummary`` the end of ``attncourse grade``: per student, then graded and not apart
    ``worker/``       what a Dask worker does for one student, by the process each part runs in
    ``cluster``       where grading runs: a local or a running Dask cluster
    ``gpulanes``      kernels per GPU on a GPU grader, each held to its share by CUDA MPS
    ``feedback``      ``attncourse feedback``: nbgrader's feedback, then where it is
    ``report/``       ``attncourse report``: the class and each assignment on one HTML page
    ``similarity/``   ``attncourse similarity``: pairs of students with the same answers, per part
    ``formgrader``    ``make formgrader``: JupyterLab with formgrader on the course
    ``workload``      ``attncourse workload``: minutes of grading by hand per student

nbgrader plugins
    ``preprocessors/``     the preprocessors, one per module (sanitize, run, feedback)
    ``tolerantexporter``   an unreadable notebook is graded as empty, saying why
    ``readingrepairs``     a cell nbformat cannot read costs that cell (or its attachments)
    ``gradebookview``      formgrader's list of a notebook's submissions, linear in the class
    ``feedbackexporter``   the feedback: nbgrader's page, or a banner for one not graded
    ``export``             ``nbgrader export``: grades.csv and a Canvas import file
    ``exchange``           the exchange: publish, collect (plain files only), return
    ``lms``                release zips and collection of an LMS's download
    ``prover``             the rule prover each release ships (``coursecheck/``), generated

The judge and the sandbox
    ``judge/``        hidden tests computed in the grader's process, asking the kernel for data;
                      ``judge.checks`` and ``judge.rules`` are what every assignment's checks share
    ``grading/``      one package per assignment, one shape for all (its tolerances, its
                      references, a checks module per group of parts, CHECKS in its init);
                      loaded by the judge only; nothing else lives there
    ``sandbox/``      each kernel in a sandbox: its kernel side and the grader's kernel manager

Course files and notebooks
    ``course``        where the course lives, its config, how to call nbgrader
    ``names``         an assignment or student the course lacks stops a command, listing those it has
    ``cells``         what a cell is (grade id, answer, test)
    ``parts``         the part each cell belongs to ("Part 5", "Q3(b)"): one vocabulary for all
    ``pointers``      where a message points, as the student sees it: part, function, line
    ``pointing``      the words of those pointers: pure functions, shipped with the students' prover
    ``ipythoncode``   a cell's text as the Python IPython runs (magics to calls), parsed: one transform
    ``runrecord``     a notebook's run record: what grading it recorded, built and read here
    ``handoffs``      what crosses each boundary of a submission's route: one frozen dataclass each
    ``status``        what became of a submission: graded, or untouched, unreadable, missing
    ``gradebook``     scores read from a gradebook, one student's results written to it
    ``roster``        the class roster (the gradebook's students), read once per graded notebook
    ``plainfiles``    submissions are files: links and special files refused, never followed
    ``markscheme``    the mark scheme of each written answer
    ``safemarkdown``  Markdown rendered without script, for formgrader and feedback
    ``mathml``        TeX formulas to checked MathML, so pages show math without a script
    ``pagetemplates`` formgrader's and the feedback's page templates: nothing from outside
    ``integrity/``    the integrity scan of a submission's source, and ``attncourse scan``

Names and defaults
    ``constants``     every shared name, limit, budget and default, read from here
    ``upstream``      every private name of nbclient, jupyter_client and nbgrader used, behind one adapter
    ``dangerous``     the names in student code that reach past the answer: the integrity scan's
                      and the judge's one vocabulary, shipped with the students' prover
"""
