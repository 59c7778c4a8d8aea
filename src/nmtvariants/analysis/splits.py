"""What both probe kinds share: a split by sentence, seeded training, early stopping, the report file.

Why by sentence: the states of one sentence share context, so splitting tokens at random would let
a probe see a held-out token's neighbours (and for reconstruction, the sentence itself) in
training. Early stopping reads the *valid* part; the reported figures come from the *test* part,
which no choice was tuned on (or from a separate test file, the authors' protocol: train on one
set, stop on a dev set, report on a test set).
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from nmtvariants.errors import ConfigError, InputError
from nmtvariants.fileio import PathLike, atomic_write


@dataclass
class Split:
    """Sentence ids of each part (sorted)."""

    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray

    def sizes(self) -> dict[str, int]:
        return {"train": len(self.train), "valid": len(self.valid), "test": len(self.test)}


def split_sentences(count: int, valid_fraction: float, test_fraction: float, seed: int) -> Split:
    """A seeded random split of ``count`` sentences; ``test_fraction=0`` leaves the test part empty
    (for a separate test file). Every non-zero part gets at least one sentence."""
    for key, value in (("valid_fraction", valid_fraction), ("test_fraction", test_fraction)):
        if not 0.0 <= value < 1.0:
            raise ConfigError(f"{key} must be in [0, 1), got {value}")
    if valid_fraction <= 0.0 or valid_fraction + test_fraction >= 1.0:
        raise ConfigError(
            f"valid_fraction {valid_fraction} must be > 0 and leave training sentences with "
            f"test_fraction {test_fraction}"
        )
    n_valid = max(1, round(count * valid_fraction))
    n_test = max(1, round(count * test_fraction)) if test_fraction > 0 else 0
    if count - n_valid - n_test < 1:
        raise InputError(
            f"{count} sentences cannot be split into train, valid ({n_valid}) and test ({n_test}); "
            "extract more sentences (--max-sentences)"
        )
    order = np.random.default_rng([seed, 7]).permutation(count)
    return Split(
        train=np.sort(order[n_valid + n_test :]),
        valid=np.sort(order[:n_valid]),
        test=np.sort(order[n_valid : n_valid + n_test]),
    )


@contextlib.contextmanager
def seeded(seed: int, device: torch.device) -> Iterator[None]:
    """Seed torch's generators for the block and restore the caller's state afterwards (so a probe
    neither depends on nor disturbs whatever ran before it)."""
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


@dataclass
class StopResult:
    best_epoch: int
    epochs: int
    history: list[dict[str, float]]


def train_early_stopped(
    probe: nn.Module,
    run_epoch: Callable[[int], float],
    validate: Callable[[], dict[str, float]],
    score: str,
    higher_is_better: bool,
    patience: int,
    max_epochs: int,
) -> StopResult:
    """Train epoch by epoch until ``patience`` epochs pass without a better valid ``score``; the probe
    ends with the weights of its best epoch."""
    if patience < 1 or max_epochs < 1:
        raise ConfigError(f"patience ({patience}) and max_epochs ({max_epochs}) must be positive")
    best_value = -math.inf if higher_is_better else math.inf
    best_state: dict[str, torch.Tensor] = copy.deepcopy(probe.state_dict())
    best_epoch, history, waited = 0, [], 0
    for epoch in range(1, max_epochs + 1):
        train_loss = run_epoch(epoch)
        metrics = validate()
        history.append({"epoch": epoch, "train_loss": train_loss, **metrics})
        value = metrics[score]
        if (value > best_value) if higher_is_better else (value < best_value):
            best_value, best_epoch, waited = value, epoch, 0
            best_state = copy.deepcopy(probe.state_dict())
        else:
            waited += 1
            if waited >= patience:
                break
    probe.load_state_dict(best_state)
    return StopResult(best_epoch=best_epoch, epochs=len(history), history=history)


def write_report(path: PathLike, report: dict[str, Any]) -> None:
    """The probe's figures as JSON, atomically."""
    with atomic_write(Path(path)) as out:
        json.dump(report, out, indent=2, sort_keys=True)
        out.write("\n")
