# Two set-up commands for a fresh machine: `make demo` and `make test`. Both are idempotent. They install
# exactly the versions in requirements.lock (a newer release on PyPI changes nothing until `make lock`),
# and first the Debian packages they need, which they install when run as root.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCK := requirements.lock
CORES ?= all

# Debian packages outside the venv. The demo: WordNet (NLTK's METEOR in the multi-source study).
# The tests add the Perl Lingua::Translit module (the ISO 9 oracle) and a JDK (the Meteor 1.5 adapter's
# stub jar); the SLURM test installs slurm-wlm and munge itself (tests/slurm_cluster.py).
DEMO_PACKAGES := wordnet-base wordnet-sense-index
TEST_PACKAGES := $(DEMO_PACKAGES) liblingua-translit-perl $(if $(shell command -v javac),,default-jdk-headless)

.PHONY: demo test test-all lint lock sync clean-results install demo-system-deps test-system-deps

install: sync

# The venv, created once; `sync` then makes it equal to the lock on every run (seconds when it is).
# torch and its CUDA libraries are half of the install's work: one pip process installs them (and then
# this package) while another installs the rest (--no-deps: the lock lists every package but pip's own
# setuptools, which `sync` then adds). On the 2-core Zen 4 EPYC the install took ~56 s instead of ~90
# (benchmarks/results/demo_budget.md). No pip cache: the lock is installed once, and a cached copy of
# every downloaded wheel (several GB for torch's CUDA libraries) would double the disk the install needs.
TORCH_STACK := ^(torch|torchvision|triton|nvidia-|cuda-)
$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	grep -E '$(TORCH_STACK)' $(LOCK) > $(VENV)/lock-torch.txt
	grep -vE '$(TORCH_STACK)' $(LOCK) > $(VENV)/lock-rest.txt
	{ $(BIN)/python -m pip install -q --no-cache-dir --no-deps -r $(VENV)/lock-torch.txt \
	  && $(BIN)/python -m pip install -q --no-cache-dir --no-deps -e .; } & torch=$$!; \
	  $(BIN)/python -m pip install -q --no-cache-dir --no-deps -r $(VENV)/lock-rest.txt; rest=$$?; \
	  wait $$torch && test $$rest = 0
	touch $(STAMP)

# The package's own bytecode, compiled here: every workflow job is a fresh process, and where
# PYTHONDONTWRITEBYTECODE is set (containers often set it) Python would otherwise compile the modules
# a job imports on every job, never keeping the result (pip compiles the installed packages itself).
# An edited module's stale .pyc is never used: Python checks the source's mtime.
sync: $(STAMP)
	$(BIN)/python -m pip install -q -r $(LOCK)
	$(BIN)/python -m compileall -q src

# Re-resolve pyproject.toml's ranges in a throw-away venv, write the lock and the conda env files' pins
# from it. Deliberate: run it, run `make test`, commit the three together.
lock:
	rm -rf .lock-venv
	$(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install -q --upgrade pip
	.lock-venv/bin/python -m pip install -q ".[dev]"
	{ echo "# Every package \`make demo\` and \`make test\` install, at the version they were tested with."; \
	  echo "# Written by \`make lock\` on $$(date -u +%F) from pyproject.toml; edit that and re-lock."; \
	  .lock-venv/bin/python -m pip freeze --exclude nmtvariants; } > $(LOCK).tmp
	mv $(LOCK).tmp $(LOCK)
	rm -rf .lock-venv build
	$(PYTHON) envs/pin_from_lock.py $(LOCK)

# $(1): the packages; $(2): the make target to run again once they are installed.
define install_debian
	@missing=$$(for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done | xargs); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else echo "missing Debian packages: run \`sudo apt-get install $$missing\` and then \`make $(2)\` again"; exit 2; fi; \
	fi
endef

demo-system-deps:
	$(call install_debian,$(DEMO_PACKAGES),demo)

test-system-deps:
	$(call install_debian,$(TEST_PACKAGES),test)

# System packages first: a user without them is told within seconds, before the venv is built.
# Snakemake's scheduler settings are the workflow profile's (profiles/default/config.yaml).
demo: demo-system-deps sync
	$(BIN)/nmtvariants check-resources config.yaml
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/snakemake --cores $(CORES) --configfile config.yaml

# The fast tests (pytest's default selection), one worker per core, a test file per worker (its
# module fixtures are built once); `test-all` adds the long ones (-m slow).
TEST_WORKERS ?= auto
test: test-system-deps sync
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=15

test-all: test-system-deps sync
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "slow or not slow" --durations=15

# The linters' versions are pinned in pyproject.toml (dev extra); CI runs this before the tests.
lint: sync
	$(BIN)/ruff check src tests workflow_scripts benchmarks envs
	$(BIN)/ruff format --check src tests workflow_scripts benchmarks envs
	$(BIN)/snakefmt --check Snakefile rules
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/snakemake --lint

clean-results:
	rm -rf results data models logs
