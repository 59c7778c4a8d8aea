#!/bin/sh
# Runs inside the freshly created conda env (evaluate.yaml), from Snakemake's working directory.
# Installs this repository's package as editable and without dependencies: the env file pins the
# family's stack, and jobs always run the checked-out code (which, by design, never re-runs jobs:
# see docs/cluster.md). Set NMTV_REPO when Snakemake does not run from the repository root.
set -eu
repo="${NMTV_REPO:-$PWD}"
if [ ! -f "$repo/pyproject.toml" ]; then
    echo "evaluate.post-deploy.sh: $repo is not the nmtvariants repository; set NMTV_REPO" >&2
    exit 1
fi
python -m pip install --quiet --no-deps --no-build-isolation -e "$repo"
