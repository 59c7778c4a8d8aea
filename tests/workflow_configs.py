"""Configs for tests that run the real workflow: the embedded default with a few keys changed.

A config named with --configfile replaces config.yaml (it is not merged into it), so tests write a
complete config: config.yaml deep-merged with their overrides.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]


def deep_merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def default_config_with(overrides: dict[str, Any]) -> dict[str, Any]:
    default = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    return deep_merge(default, overrides)


def write_config(path: Path, overrides: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(default_config_with(overrides), sort_keys=False), encoding="utf-8")
    return path


def snakemake(
    *args: str, cwd: Path = REPO, env_extra: dict[str, str] | None = None, timeout: int = 300
) -> subprocess.CompletedProcess:
    """Run the snakemake of this interpreter's venv (in the repository unless ``cwd`` is given),
    with this checkout's src/ first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def dry_run_jobs(stdout: str) -> list[dict[str, str]]:
    """The jobs of `snakemake -n -p` output: rule, input, output, wildcards, priority (printed when not
    0), threads (printed when more than one), shell command."""
    jobs: list[dict[str, str]] = []
    for line in stdout.splitlines():
        started = re.match(r"^(?:local)?(?:rule|checkpoint) (\w+):", line)
        if started:
            jobs.append({"rule": started.group(1)})
        elif jobs and (field := re.match(r"^\s+(output|wildcards|input|priority|threads): (.*)$", line)):
            jobs[-1][field.group(1)] = field.group(2)
        elif jobs and line.startswith("Shell command: "):
            jobs[-1]["shell"] = line.removeprefix("Shell command: ")
    return jobs
