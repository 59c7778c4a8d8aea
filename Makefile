# Two set-up commands for a fresh machine: `make demo` and `make test`. Both are idempotent:
# the virtual environment is (re)installed only when pyproject.toml changes.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= all

# Debian packages the tests use as references or data: the Perl Lingua::Translit module (the ISO 9
# oracle) and WordNet (METEOR). Installed when missing and we are root; otherwise we say what to run.
DEBIAN_PACKAGES := liblingua-translit-perl wordnet-base wordnet-sense-index

.PHONY: demo test lint clean-results install system-deps

install: $(STAMP)

# torch and torchvision first, pinned together: stanza would otherwise pull another torch build.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "torch==2.14.1" "torchvision==0.29.1"
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

system-deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else echo "missing Debian packages: $$missing -- run: sudo apt-get install $$missing"; exit 1; fi; \
	fi

demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/snakemake --cores $(CORES) --configfile config.yaml

# The whole suite, long tests included (plain `pytest` runs the fast ones only).
test: $(STAMP) system-deps
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q -m "slow or not slow" --durations=15

# The linters' versions are pinned in pyproject.toml (dev extra); CI runs this before the tests.
lint: $(STAMP)
	$(BIN)/ruff check src tests workflow_scripts benchmarks
	$(BIN)/ruff format --check src tests workflow_scripts benchmarks
	$(BIN)/snakefmt --check Snakefile rules
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/snakemake --lint

clean-results:
	rm -rf results data models logs
