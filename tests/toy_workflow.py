"""The real workflow on a toy run, in a temporary folder, as a user runs it: a committed copy of the
repository (so that every result names a known commit), a complete config (config.yaml with the
toy settings below) and `python -m snakemake` of this interpreter's venv.

The toy run is the default experiment shrunk: toyworld with a few hundred pairs, en-de only, the
tiny preset for tens of updates, checkpoints every 5 updates.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from workflow_configs import default_config_with

REPO = Path(__file__).resolve().parents[1]
CONFIG_NAME = "toy.yaml"
TARGET = "results/report.md"
COPIED_DIRS = ("rules", "schemas", "envs", "workflow", "workflow_scripts", "src")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


def toy_config(max_updates: int = 20) -> dict[str, Any]:
    """config.yaml with toyworld at 200/10/10 pairs, en-de only and one tiny baseline run."""
    config = default_config_with(
        {"toyworld": {"seed": 7, "sizes": {"train": 200, "valid": 10, "test": 10}, "image_size": 16}}
    )
    corpus = config["corpora"]["toyworld"]
    corpus["pairs"] = ["en-de"]
    corpus["preprocess"]["bpe"].update(merges=100, translit=[])
    baseline = config["experiments"]["baseline"]
    baseline["train"].update(
        max_updates=max_updates, save_every=5, valid_every=10, warmup=5, batch_tokens=512, keep_last=10
    )
    baseline["average_last"] = 2
    baseline["evaluate"]["beam"] = 2
    config["experiments"] = {"baseline": baseline}
    return config


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args],
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def workflow_copy(root: Path, config: dict[str, Any]) -> str:
    """Copy the workflow and package into ``root``, write the config, commit; returns the commit."""
    for name in ("Snakefile", "config.yaml"):
        shutil.copy2(REPO / name, root / name)
    for name in COPIED_DIRS:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    (root / CONFIG_NAME).write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    (root / ".gitignore").write_text("data/\nresults/\nmodels/\nlogs/\n.snakemake/\n", encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "toy workflow")
    return git(root, "rev-parse", "HEAD")


def snakemake_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--configfile", CONFIG_NAME, "--cores", "2", *args]


def snakemake_env(root: Path) -> dict[str, str]:
    """The copy's package first on the path, one thread per job (two jobs share the 2 cores)."""
    env = dict(os.environ, PYTHONPATH=str(root / "src"), OMP_NUM_THREADS="1")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    return env


def run_snakemake(root: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        snakemake_command(*args),
        cwd=root,
        env=snakemake_env(root),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
