# Every target builds .venv from requirements.txt first when it is missing or stale.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
ASSIGNMENT ?= attention_variants
WORKERS ?= $(shell nproc)
# nbgrader runs alembic (and kernels) from PATH.
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: venv demo test test-fast lint format release grade feedback export report bench formgrader collect-lms clean

$(STAMP): requirements.txt pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) not found: install Python 3.11 or run make PYTHON=python3"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

venv: $(STAMP)

demo: venv  ## build the release, autograde the bundled demo submissions, feedback, export
	$(BIN)/attncourse demo

test: venv  ## the whole pytest suite
	$(BIN)/python -m pytest -n auto --dist loadgroup

test-fast: venv  ## the suite without the slow autograde runs
	$(BIN)/python -m pytest -m "not slow and not browser"

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: venv
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

release: venv  ## source/ -> release/ for every assignment
	$(BIN)/attncourse release

grade: venv  ## autograde every submission of ASSIGNMENT with WORKERS workers
	$(BIN)/attncourse grade $(ASSIGNMENT) --workers $(WORKERS)

feedback: venv
	$(BIN)/attncourse feedback $(ASSIGNMENT)

export: venv
	$(BIN)/attncourse export

report: venv
	$(BIN)/attncourse report

bench: venv
	$(BIN)/attncourse bench

clean:
	rm -rf .demo autograded feedback reports gradebook.db .pytest_cache .ruff_cache
