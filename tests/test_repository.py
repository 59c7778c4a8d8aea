"""The repository's top level is the design card's layout and nothing else: a stray file there (the output
of a mistyped shell redirection, a scratch note) would reach every clone. Adding a top-level entry is a
deliberate act: add it to ``TOP_LEVEL`` in the same commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# The design card's entries (Snakefile, config.yaml, README.md, rules/, envs/, workflow_scripts/, src/,
# tests/) and the project's own: CI, build and lock files, benchmarks, docs, paper configs, cluster
# profiles, config schemas, the workflow's report templates.
TOP_LEVEL = {
    ".ci",
    ".gitignore",
    "Makefile",
    "README.md",
    "Snakefile",
    "benchmarks",
    "config.yaml",
    "docs",
    "envs",
    "experiments",
    "profiles",
    "pyproject.toml",
    "requirements.lock",
    "rules",
    "schemas",
    "src",
    "tests",
    "workflow",
    "workflow_scripts",
}


def test_the_top_level_holds_only_the_layouts_entries():
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, text=True
    ).stdout.split("\0")
    top = {path.split("/", 1)[0] for path in tracked if path}
    assert top - TOP_LEVEL == set(), f"unexpected top-level entries: {sorted(top - TOP_LEVEL)}"
    assert {"Snakefile", "config.yaml", "README.md", "rules", "src", "tests"} <= top
