# Two entry points for a newcomer: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The CPU wheel of torch first: a bare `torch` requirement would pull a multi-GB CUDA build.
TORCH_SPEC ?= torch==2.13.0

.PHONY: demo test lint docs bench clean

$(BIN)/gca: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "$(TORCH_SPEC)" || $(BIN)/pip install -q --index-url https://download.pytorch.org/whl/cpu torch
	$(BIN)/pip install -q -e ".[dev]"
	touch $(BIN)/gca

demo: $(BIN)/gca
	$(BIN)/gca train --out runs/demo

# One pytest-xdist worker per core, each with its share of the threads (tests/conftest.py); tests that share a
# module fixture stay in one worker (--dist loadgroup). Plain `pytest` runs them one at a time. The suite starts
# about 150 Python processes: each reads gca's and the tests' compiled bytecode (__pycache__, git-ignored) where a
# PYTHONDONTWRITEBYTECODE in the environment (as container images set) would have each compile them again.
test: $(BIN)/gca
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n auto --dist loadgroup

lint: $(BIN)/gca
	$(BIN)/ruff check src tests benchmarks docs/hooks
	$(BIN)/ruff format --check src tests benchmarks docs/hooks

# The documentation site (MkDocs, Material, API reference from the docstrings); --strict: a warning fails the build
# (a broken link or anchor, a parameter without a description). Not --quiet: it hides the warnings --strict counts.
docs: $(BIN)/gca
	$(BIN)/pip install -q -e ".[docs]"
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Speed and memory are measured by these scripts (they print tables), never by timed tests.
bench: $(BIN)/gca
	$(BIN)/python benchmarks/objective.py
	$(BIN)/python benchmarks/epoch.py

clean:
	rm -rf $(VENV) runs site
