"""`make lint` passes on a fresh clone: the linters are pinned to the versions the code is formatted
with, those are the versions installed here, the Snakemake files are formatted with them, and CI
runs the lint before the tests."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]
LINTERS = ("ruff", "snakefmt", "black")  # black: snakefmt formats through it


def _dev_requirements() -> dict[str, Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = (Requirement(text) for text in project["optional-dependencies"]["dev"])
    return {requirement.name: requirement for requirement in requirements}


def test_linters_are_pinned_exactly_to_the_installed_versions() -> None:
    dev = _dev_requirements()
    for name in LINTERS:
        specifiers = list(dev[name].specifier)
        assert [spec.operator for spec in specifiers] == ["=="], f"{name}: {dev[name]} is not an exact pin"
        assert specifiers[0].version == importlib.metadata.version(name), name


def _tool(name: str) -> str:
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    assert found, f"{name} not installed: pip install -e '.[dev]'"
    return found


def test_snakemake_files_are_formatted_with_the_pinned_snakefmt() -> None:
    result = subprocess.run(
        [_tool("snakefmt"), "--check", "Snakefile", "rules"], cwd=REPO, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_ci_runs_lint_before_the_tests() -> None:
    commands = [line.strip() for line in (REPO / ".ci/run").read_text(encoding="utf-8").splitlines()]
    assert commands.index("make lint") < commands.index("make test")
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    lint = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    for command in ("ruff check", "ruff format --check", "snakefmt --check", "snakemake --lint"):
        assert command in lint, command
