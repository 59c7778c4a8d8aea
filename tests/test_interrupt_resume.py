"""Crash and rerun: the real workflow killed mid-preprocessing and mid-training, then rerun.

Two copies of one committed toy workflow (tests/toy_workflow.py) run the same targets: one straight
through, one interrupted twice. The interrupted one is started in its own process group and
1. stopped with SIGTERM to the whole group as soon as the first preprocessing output appears
   (other preprocessing jobs are running then: 2 cores), and rerun;
2. killed with SIGKILL to the whole group (a crash, or a node lost) as soon as the first training
   checkpoint is complete (its sha256 sidecar is written last), while training goes on.
After each interruption every file under a final name must be complete: the outputs under data/
and results/ equal the straight run's byte for byte, and every checkpoint verifies; temporary
files (``.<name>.<random>.tmp``, nmtvariants.fileio.atomic_write) are the only allowed leftovers.
The rerun after SIGKILL first stops on Snakemake's lock; the README's recovery section (`snakemake
--unlock`, then the same command with --rerun-incomplete) then completes the run, its training log
says it resumed from the newest checkpoint, and the final model and tables equal the straight run's
(training on CPU with one thread is deterministic and a resume restores the RNG states).

Four workflow runs of about 30 jobs: slow.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from toy_workflow import run_snakemake, snakemake_command, snakemake_env, toy_config, workflow_copy

from nmtvariants.training.checkpoints import (
    latest_valid_checkpoint,
    list_checkpoints,
    load_checkpoint,
    sidecar_path,
)

pytestmark = pytest.mark.slow

MAX_UPDATES = 30
TARGETS = ("results/tables/baseline/baseline.md", "results/tables/preprocessing.md")
TEMPORARY = r"^\..+\.tmp$"


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """A committed toy workflow in two folders (one commit), the first run straight through."""
    straight = tmp_path_factory.mktemp("straight")
    workflow_copy(straight, toy_config(max_updates=MAX_UPDATES))
    interrupted = tmp_path_factory.mktemp("interrupted")
    shutil.copytree(straight, interrupted, symlinks=True, dirs_exist_ok=True)
    result = run_snakemake(straight, *TARGETS)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return SimpleNamespace(straight=straight, interrupted=interrupted)


def run_until(root: Path, appeared, sig: signal.Signals, timeout: float = 600) -> str:
    """Run the targets in a new process group; send ``sig`` to the group once ``appeared()`` gives
    a path; returns that path (relative to ``root``)."""
    process = subprocess.Popen(
        snakemake_command(*TARGETS),
        cwd=root,
        env=snakemake_env(root),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    try:
        while (found := appeared()) is None:
            assert process.poll() is None, (
                "the run ended before the kill point:\n" + process.stderr.read().decode()
            )
            assert time.monotonic() < deadline, "no kill point within the time limit"
            time.sleep(0.01)
        os.killpg(process.pid, sig)
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return str(found.relative_to(root))


def first(root: Path, pattern: str) -> Path | None:
    return next(iter(sorted(root.glob(pattern))), None)


def final_files(root: Path) -> dict[str, Path]:
    """Files under a final name in data/ and results/ (temporary names left out)."""
    files = {}
    for top in ("data", "results"):
        for path in (root / top).rglob("*"):
            if path.is_file() and not (path.name.startswith(".") and path.name.endswith(".tmp")):
                files[str(path.relative_to(root))] = path
    return files


def assert_complete(copies: SimpleNamespace) -> int:
    """Every output under a final name equals the straight run's; every checkpoint verifies."""
    straight = final_files(copies.straight)
    found = final_files(copies.interrupted)
    assert set(found) <= set(straight), sorted(set(found) - set(straight))
    different = [name for name, path in found.items() if path.read_bytes() != straight[name].read_bytes()]
    assert not different, different
    for folder in (copies.interrupted / "models" / "runs").glob("*/checkpoints"):
        for _, path in list_checkpoints(folder):
            # the sidecar comes last: a checkpoint without one is skipped on resume, by design
            if sidecar_path(path).exists():
                load_checkpoint(path)  # verifies the sha256 sidecar
    return len(found)


def model_state(root: Path) -> dict[str, torch.Tensor]:
    (run,) = (root / "models" / "runs").iterdir()
    return load_checkpoint(run / "final.pt")["model"]


def test_killed_mid_preprocessing_and_mid_training_then_rerun(copies: SimpleNamespace) -> None:
    root = copies.interrupted
    stopped_at = run_until(root, lambda: first(root, "data/toyworld/tok/[!.]*"), signal.SIGTERM)
    assert stopped_at.startswith("data/toyworld/tok/")
    preprocessed = assert_complete(copies)
    assert not (root / "data/toyworld/en-de/bpe/vocab.txt").exists(), "preprocessing had already finished"

    sidecars = "models/runs/*/checkpoints/checkpoint_[0-9]*.pt.sha256"
    run_until(root, lambda: first(root, sidecars), signal.SIGKILL)
    assert not list(root.glob("models/runs/*/final.pt")), "training finished before the kill"
    assert assert_complete(copies) > preprocessed
    (run,) = (root / "models" / "runs").iterdir()
    newest, _ = latest_valid_checkpoint(run / "checkpoints") or (None, None)
    assert newest is not None

    locked = run_snakemake(root, *TARGETS)
    assert locked.returncode != 0 and "--unlock" in locked.stdout + locked.stderr
    unlocked = run_snakemake(root, "--unlock", *TARGETS)
    assert unlocked.returncode == 0, unlocked.stderr[-3000:]
    rerun = run_snakemake(root, "--rerun-incomplete", *TARGETS)  # README, "When a run is interrupted"
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-5000:]

    train_log = (root / "logs" / "train" / f"{run.name}.log").read_text(encoding="utf-8")
    assert f"resumed from {newest.relative_to(root)}" in train_log, train_log[-2000:]
    assert f"finished at update {MAX_UPDATES}" in train_log
    finished = assert_complete(copies)
    assert finished == len(final_files(copies.straight))
    straight_model, resumed_model = model_state(copies.straight), model_state(root)
    assert straight_model.keys() == resumed_model.keys()
    assert all(torch.equal(straight_model[k], resumed_model[k]) for k in straight_model)
