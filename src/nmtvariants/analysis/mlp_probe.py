"""Lexical probes (Emelin et al. 2019 §5, seed brief §1.7): an MLP predicting a label per token state.

The authors' classifier is ``logits = ReLU(dropout_0.5(W1 s + b1)) W2`` with a hidden layer of 512
and **no output bias**, trained with softmax cross-entropy (no label smoothing) and Adam at a
constant 2e-4 (beta 0.9/0.98, eps 1e-9) on batches of 512 token states, early-stopped with patience 5
on validation accuracy; the best epoch is evaluated. Their dropout sits *before* the ReLU; since
inverted dropout multiplies by a non-negative factor, ``ReLU(drop(x)) == drop(ReLU(x))`` for the same
mask, so the order is immaterial and kept as theirs. Their input width is hard-coded 512; here it is
the representation's width. Their padding filter is ineffective (§1.7); here padding never reaches
the probe (see :mod:`~nmtvariants.analysis.extract`).

The label is any integer per token: by default the subword at the state's position (the model's
input token: the source token for the encoder, the decoder-input token for the decoder, with the
final ``</s>`` and the leading ``<s>`` dropped as the authors do). Held-out accuracy is reported
overall and per group of any number of groupings (frequency bin, POS) given as per-token arrays.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from nmtvariants.analysis.splits import seeded, train_early_stopped
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.models.dropout import Dropout
from nmtvariants.models.variants import init_plugin_parameters

EVAL_ROWS = 4096


@dataclass
class MLPProbeConfig:
    hidden: int = 512
    dropout: float = 0.5
    lr: float = 2e-4
    batch_size: int = 512
    patience: int = 5
    max_epochs: int = 100
    seed: int = 1
    device: str = "cpu"


@dataclass
class TokenSet:
    """Features [N, d], integer labels [N], and optional groupings (name -> [N] labels of any kind)."""

    features: np.ndarray
    labels: np.ndarray
    groups: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.features.ndim != 2 or len(self.features) != len(self.labels):
            raise InputError(
                f"probe data: features {self.features.shape} and labels {self.labels.shape} do not align"
            )
        for name, values in self.groups.items():
            if len(values) != len(self.labels):
                raise InputError(f"grouping {name!r}: {len(values)} values for {len(self.labels)} tokens")

    def __len__(self) -> int:
        return len(self.labels)


class MLPProbe(nn.Module):
    """One hidden layer (biased), dropout then ReLU, an unbiased output layer (Emelin et al.'s code)."""

    def __init__(self, d_in: int, n_classes: int, hidden: int = 512, dropout: float = 0.5):
        super().__init__()
        self.hidden = nn.Linear(d_in, hidden)
        self.dropout = Dropout(dropout)
        self.output = nn.Linear(hidden, n_classes, bias=False)
        init_plugin_parameters(self)  # Glorot, as the rest of the project

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.output(torch.relu(self.dropout(self.hidden(x))))


@torch.no_grad()
def _predict(probe: MLPProbe, data: TokenSet, device: torch.device) -> tuple[np.ndarray, float]:
    """Predicted labels and summed cross-entropy over ``data``."""
    probe.eval()
    predictions, total = [], 0.0
    for start in range(0, len(data), EVAL_ROWS):
        x = torch.from_numpy(data.features[start : start + EVAL_ROWS]).float().to(device)
        y = torch.from_numpy(data.labels[start : start + EVAL_ROWS]).long().to(device)
        logits = probe(x)
        total += float(F.cross_entropy(logits, y, reduction="sum"))
        predictions.append(logits.argmax(-1).cpu().numpy())
    return np.concatenate(predictions) if predictions else np.zeros(0, np.int64), total


def evaluate(probe: MLPProbe, data: TokenSet, device: torch.device) -> dict[str, Any]:
    """Accuracy, perplexity and token count overall, and accuracy per group of each grouping."""
    predicted, total = _predict(probe, data, device)
    correct = predicted == data.labels
    count = len(data)
    result: dict[str, Any] = {
        "tokens": count,
        "accuracy": float(correct.mean()) if count else math.nan,
        "nll": total / count if count else math.nan,
        "perplexity": math.exp(total / count) if count else math.nan,
    }
    if data.groups:
        result["groups"] = {
            name: {
                str(label): {
                    "accuracy": float(correct[values == label].mean()),
                    "tokens": int((values == label).sum()),
                }
                for label in sorted(set(values.tolist()), key=str)
            }
            for name, values in data.groups.items()
        }
    return result


def train_mlp_probe(
    train: TokenSet, valid: TokenSet, test: TokenSet, n_classes: int, config: MLPProbeConfig
) -> dict[str, Any]:
    """Train a probe on ``train``, stop on ``valid`` accuracy, report ``valid`` and ``test``."""
    if len(train) == 0 or len(valid) == 0:
        raise InputError("probe data: the train and valid parts must hold tokens; extract more sentences")
    for part in (train, valid, test):
        if len(part) and (part.labels.min() < 0 or part.labels.max() >= n_classes):
            raise InputError(f"probe data: labels outside [0, {n_classes})")
    if config.batch_size < 1:
        raise ConfigError(f"batch_size must be positive, got {config.batch_size}")
    device = torch.device(config.device)
    with seeded(config.seed, device):
        probe = MLPProbe(train.features.shape[1], n_classes, config.hidden, config.dropout).to(device)
        optimizer = torch.optim.Adam(probe.parameters(), lr=config.lr, betas=(0.9, 0.98), eps=1e-9)
        features = torch.from_numpy(np.ascontiguousarray(train.features)).float()
        labels = torch.from_numpy(train.labels).long()

        def run_epoch(epoch: int) -> float:
            probe.train()
            order = np.random.default_rng([config.seed, epoch]).permutation(len(train))
            total = 0.0
            for start in range(0, len(order), config.batch_size):
                rows = torch.from_numpy(order[start : start + config.batch_size])
                logits = probe(features[rows].to(device))
                loss = F.cross_entropy(logits, labels[rows].to(device))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += loss.item() * len(rows)
            return total / len(order)

        def validate() -> dict[str, float]:
            result = evaluate(probe, valid, device)
            return {"valid_accuracy": result["accuracy"], "valid_nll": result["nll"]}

        stop = train_early_stopped(
            probe, run_epoch, validate, "valid_accuracy", True, config.patience, config.max_epochs
        )
        return {
            "kind": "mlp",
            "config": asdict(config),
            "classes": n_classes,
            "tokens": {"train": len(train), "valid": len(valid), "test": len(test)},
            "best_epoch": stop.best_epoch,
            "epochs": stop.epochs,
            "history": stop.history,
            "valid": evaluate(probe, valid, device),
            "test": evaluate(probe, test, device) if len(test) else None,
        }
