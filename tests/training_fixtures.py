"""A tiny synthetic parallel corpus and run configs shared by the training tests.

The task (target = source reversed, each word mapped through a fixed bijection) is learnable in a
few dozen updates, so tests can check that the loss falls without training for long.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from nmtvariants.data.vocab import Vocabulary
from nmtvariants.fileio import read_lines, write_lines

REPO = Path(__file__).resolve().parents[1]


def make_corpus(
    root: Path, pairs: int = 300, types: int = 40, seed: int = 0, max_len: int = 10
) -> dict[str, str]:
    """Write train/valid text and a vocabulary under ``root``; return the ``data:`` config section."""
    rng = np.random.default_rng(seed)
    mapping = rng.permutation(types)
    root.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    for split, count in (("train", pairs), ("valid", max(pairs // 10, 8))):
        src_lines, tgt_lines = [], []
        for _ in range(count):
            ids = rng.integers(0, types, size=int(rng.integers(2, max_len + 1)))
            src_lines.append(" ".join(f"w{i}" for i in ids))
            tgt_lines.append(" ".join(f"w{mapping[i]}" for i in ids[::-1]))
        write_lines(root / f"{split}.src", src_lines)
        write_lines(root / f"{split}.tgt", tgt_lines)
        files[f"{split}_src"] = str(root / f"{split}.src")
        files[f"{split}_tgt"] = str(root / f"{split}.tgt")
    vocab = Vocabulary.build(itertools.chain(read_lines(root / "train.src"), read_lines(root / "train.tgt")))
    vocab.save(root / "vocab.txt")
    files["vocab"] = str(root / "vocab.txt")
    return files


def run_config(data: dict[str, str], model: dict[str, Any] | None = None, **train: Any) -> dict[str, Any]:
    """A run config for a very small model; ``train`` entries override the defaults below."""
    settings = {
        "max_updates": 20,
        "batch_tokens": 200,
        "warmup": 10,
        "lr_peak": 3e-3,
        "save_every": 5,
        "keep_last": 3,
        "valid_every": 10,
        "log_every": 5,
        "seed": 7,
        "threads": 1,
        "progress": False,
        "tensorboard": False,
    }
    settings.update(train)
    base_model = {"preset": "tiny", "d_model": 32, "n_heads": 2, "d_ff": 64}
    base_model.update(model or {})
    return {"data": dict(data), "model": base_model, "variant": {}, "train": settings}


def cli_env(threads: int = 1) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = str(threads)
    return env


def train_command(config: dict[str, Any], outdir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "nmtvariants",
        "train",
        "--config-json",
        json.dumps(config),
        "--outdir",
        str(outdir),
    ]


def run_train_cli(config: dict[str, Any], outdir: Path) -> subprocess.CompletedProcess:
    result = subprocess.run(
        train_command(config, outdir), env=cli_env(), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return result
