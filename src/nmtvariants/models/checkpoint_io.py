"""Loading a trained model for inference from the checkpoint format the trainer writes.

A checkpoint is a dict ``{"model_config": asdict(cfg), "vocab_size": int, "model": state_dict, ...}``
(other keys, such as optimiser state, are ignored here). The model is rebuilt from the stored config,
so decoding needs neither the experiment config nor the training code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from nmtvariants.errors import InputError
from nmtvariants.models.build import build_model
from nmtvariants.models.config import ModelConfig
from nmtvariants.models.transformer import Transformer
from nmtvariants.training.checkpoints import load_checkpoint

REQUIRED_KEYS = ("model_config", "vocab_size", "model")


def read_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """The checkpoint dict at ``path``, through the trainer's loader: a file whose sha256 sidecar
    disagrees is rejected (decoding damaged weights would go unnoticed in the scores); a file
    without a sidecar (saved by other code) is read unchecked."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: checkpoint not found; train a model first (`nmtvariants train`)")
    checkpoint = load_checkpoint(path, map_location=map_location, require_sidecar=False)
    missing = [key for key in REQUIRED_KEYS if not isinstance(checkpoint, dict) or key not in checkpoint]
    if missing:
        raise InputError(f"{path}: not an nmtvariants checkpoint (missing {', '.join(missing)})")
    return checkpoint


def model_from_checkpoint(checkpoint: dict[str, Any]) -> Transformer:
    cfg = ModelConfig.from_dict(checkpoint["model_config"])
    model = build_model(cfg, int(checkpoint["vocab_size"]))
    model.load_state_dict(checkpoint["model"])
    return model


def load_model(path: str | Path, map_location: str | torch.device = "cpu") -> Transformer:
    """Rebuild the model stored at ``path`` and load its weights; returned in eval mode."""
    checkpoint = read_checkpoint(path, map_location)
    try:
        model = model_from_checkpoint(checkpoint)
    except RuntimeError as error:
        raise InputError(f"{path}: weights do not fit the stored model config ({error})") from None
    return model.to(map_location).eval()
