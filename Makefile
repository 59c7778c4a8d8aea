# Two set-up commands for a fresh machine: `make demo` and `make test`. Both are idempotent:
# the virtual environment is (re)installed only when pyproject.toml changes.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= all

.PHONY: demo test test-slow lint format-check dryrun-experiments clean-results install

install: $(STAMP)

# torch and torchvision first, pinned together: stanza would otherwise pull another torch build.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "torch==2.14.1" "torchvision==0.29.1"
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) --configfile config.yaml

test: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q

test-slow: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q -m slow

lint: $(STAMP)
	$(BIN)/ruff check src tests workflow_scripts benchmarks
	$(BIN)/snakemake --lint

clean-results:
	rm -rf results data models logs
