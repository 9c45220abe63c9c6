# Every target builds .venv from requirements.txt first when it is missing or stale.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
ASSIGNMENT ?= attention_variants
# The course directory every target acts on (where its nbgrader_config.py is): make grade COURSE=.demo
COURSE ?= .
AT = --course "$(COURSE)"
# make bench: copies of the full solution and of a partly wrong student (4 x 2 = 8 submissions)
COPIES ?= 4
# make bench: turns of the five configurations (each ratio compares runs of one turn)
ROUNDS ?= 1
# nbgrader runs alembic (and kernels) from PATH.
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: price fuzz soak venv demo test test-fast accept-secrets lint format release limits grade feedback export report scan similarity bench \
	collect return-feedback collect-lms release-zip formgrader workload classroom clean
PORT ?= 8888
# make classroom: the hub's address is 127.0.0.1:HUB_PORT; its accounts, homes and exchange live in CLASSROOM
HUB_PORT ?= 8000
CLASSROOM ?= /srv/attncourse-classroom
PROXY := node_modules/.package-lock.json

$(STAMP): requirements.txt pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) not found: install Python 3.11 or run make PYTHON=python3"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	# jupyter-events asks for jsonschema[format-nongpl], whose rfc3987-syntax compiles ~35 Earley
	# grammars whenever jsonschema is imported: 1.0 s of every process that imports nbformat
	# (each nbgrader command, grading process, Dask worker; jsonschema issue 1428). No schema of
	# Jupyter or nbgrader installed here uses the "iri" formats it checks; jsonschema skips them.
	$(BIN)/pip uninstall --quiet --yes rfc3987-syntax
	touch $(STAMP)

venv: $(STAMP)

# JupyterHub's proxy (configurable-http-proxy), pinned by package-lock.json.
$(PROXY): package.json package-lock.json
	@command -v npm >/dev/null || { echo "npm not found: apt-get install npm"; exit 1; }
	npm ci --ignore-scripts --no-audit --no-fund

demo: venv  ## in .demo/: release, autograde the bundled demo submissions, feedback, export, similarity, report
	$(BIN)/attncourse demo $(AT)

# One xdist worker per core: the suite computes more than it waits. With 4 workers on 2 cores
# the cores were 99 % busy (/proc/stat) and make test took 2,234 s, against 2,107 s with 2
# (stop 39's tree; stop 40's: 1,830 s). The slow groups first, in the collection's order
# (tests/conftest.py), not xdist's largest-group-first.
#
# The tests write this tree's bytecode (__pycache__/, ignored by git) even where
# PYTHONDONTWRITEBYTECODE is set, as on the machines CI runs on: without it every test
# process rewrote every test module's asserts and compiled the package again (2.7-3 s of each
# worker's 10 s of collection, and every nbgrader and grading process's imports).
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest

test: venv $(PROXY)  ## the whole pytest suite (but the secrets tests: make accept-secrets)
	$(PYTEST) -n auto --dist loadgroup --no-loadscope-reorder --durations=20 -m "not secrets"

# test-fast draws 40 files through the sanitize stage (make test 200, make fuzz 3,000): the
# 160 more cost 22 s of one worker's 150 s.
test-fast: venv  ## in parallel, no kernel started: no autograde run, sandbox or browser
	FUZZ_EXAMPLES=$(or $(FUZZ_EXAMPLES),40) $(PYTEST) -n auto --dist loadgroup -m "not slow and not browser and not kernel and not secrets"

accept-secrets: venv  ## every correct alternative over 100 secrets where make test keeps fewer (minutes of CPU)
	$(PYTEST) -n auto --dist loadgroup -m secrets

limits: venv  ## the lists of limits in README.md and nbgrader_config.py, written from the traits
	$(BIN)/python -m devtools.limits

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: venv
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

release: venv  ## source/ -> release/ for every assignment
	$(BIN)/attncourse release $(AT)

grade: venv  ## autograde every submission of ASSIGNMENT [STUDENTS="id ..." only those]: WORKERS local workers (default: cores), or SCHEDULER=tcp://HOST:8786
	$(BIN)/attncourse grade $(AT) $(ASSIGNMENT) $(if $(WORKERS),--workers $(WORKERS)) $(if $(SCHEDULER),--scheduler "$(SCHEDULER)") \
		$(foreach s,$(STUDENTS),--student "$(s)")

feedback: venv  ## HTML feedback for ASSIGNMENT: test results and messages, no hidden tests
	$(BIN)/attncourse feedback $(AT) $(ASSIGNMENT)

export: venv  ## grades.csv and canvas_grades.csv [ROSTER=Canvas gradebook export for Canvas ids]
	$(BIN)/attncourse export $(AT) $(if $(ROSTER),--roster "$(ROSTER)")

report: venv  ## reports/index.html: per part failure rates, student × part heat map, mistakes by cause, backlog, trends
	$(BIN)/attncourse report $(AT)

scan: venv  ## list integrity findings in ASSIGNMENT's submitted notebooks, without grading
	$(BIN)/attncourse scan $(AT) $(ASSIGNMENT)

similarity: venv  ## reports/similarity_ASSIGNMENT.html and .csv: pairs of students with the same answers
	$(BIN)/attncourse similarity $(AT) $(ASSIGNMENT)

bench: venv  ## complete notebooks of ASSIGNMENT: stock nbgrader, nbgrader with the course config, attncourse grade 1 and all workers, the plain-python floor; the three target ratios
	$(BIN)/attncourse bench $(AT) --assignment $(ASSIGNMENT) --copies $(COPIES) --rounds $(ROUNDS)

price: venv  ## what each hostile notebook (10,000 cells, many outputs, a parse bomb, 50 MB) costs beside an honest one of ASSIGNMENT: CPU, peak memory, ratios
	$(BIN)/python devtools/price.py --assignment $(ASSIGNMENT)

fuzz: venv  ## thousands of generated hostile notebooks through the grading path (seeded: FUZZ_SEED), counts by outcome
	FUZZ_EXAMPLES=$(or $(FUZZ_EXAMPLES),3000) FUZZ_BATCH=$(or $(FUZZ_BATCH),120) $(PYTEST) -p no:xdist -p no:randomly \
		-W ignore --hypothesis-show-statistics tests/pipeline/test_fuzz_notebooks.py

soak: venv  ## as root: STUDENTS_SOAK (1000) students of attention_worksheet on PostgreSQL through injected faults; checks and throughput
	$(BIN)/python devtools/soak.py --students $(or $(STUDENTS_SOAK),1000)

collect: venv  ## copy ASSIGNMENT's submissions from the nbgrader exchange into submitted/
	$(BIN)/attncourse collect $(AT) $(ASSIGNMENT)

return-feedback: venv  ## put ASSIGNMENT's feedback in the exchange for students to fetch
	$(BIN)/attncourse return-feedback $(AT) $(ASSIGNMENT)

collect-lms: venv  ## ZIP=<Canvas or Moodle download> [ROSTER=roster.csv ROSTER_COLUMNS=ID,SIS Login ID]
	@test -n "$(ZIP)" || { echo "usage: make collect-lms ZIP=submissions.zip ASSIGNMENT=$(ASSIGNMENT) [ROSTER=roster.csv]"; exit 2; }
	$(BIN)/attncourse collect-lms $(AT) "$(ZIP)" $(ASSIGNMENT) $(if $(ROSTER),--roster "$(ROSTER)") $(if $(ROSTER_COLUMNS),--roster-columns "$(ROSTER_COLUMNS)")

release-zip: venv  ## dist/<assignment>.zip of each release/ folder, for an LMS or a download link
	$(BIN)/attncourse release-zip $(AT)

formgrader: venv  ## JupyterLab with formgrader on 127.0.0.1:PORT, token printed
	$(BIN)/attncourse formgrader --port $(PORT) $(AT)

classroom: venv $(PROXY)  ## as root: JupyterHub on 127.0.0.1:HUB_PORT with demo accounts (printed); Ctrl-C stops it
	$(BIN)/python -m classroom --root $(CLASSROOM) --port $(HUB_PORT)

workload: venv  ## minutes of manual grading per student, from the mark schemes
	$(BIN)/attncourse workload $(AT)

clean:
	rm -rf .demo autograded feedback reports gradebook.db .pytest_cache .ruff_cache
