"""One Transformer with switches for every variant of the four studies.

Public API::

    cfg = model_config("tiny", overrides={"dropout": ...}, variant={})
    model = build_model(cfg, vocab_size=V)
    logits = model(src, tgt_in)                      # src: a [B, S] tensor or a SourceInputs
    memories = model.encode_inputs(inputs); logits = model.decode(tgt_in, memories, cache=None)
    model = load_model(checkpoint_path)

The names are imported from their modules on first use (PEP 562), so that importing a torch-free
module of this package (``models.variants``, ``models.config``: what checking a config needs, which the
Snakefile does at every start) does not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nmtvariants.models.build import build_model, count_parameters, parameter_breakdown
    from nmtvariants.models.checkpoint_io import load_model
    from nmtvariants.models.config import PRESETS, ModelConfig, model_config
    from nmtvariants.models.hooks import capture
    from nmtvariants.models.interfaces import Memory, SourceInputs
    from nmtvariants.models.transformer import DecoderCache, Transformer
    from nmtvariants.models.variants import register_variant

# name -> the module that defines it
_HOMES = {
    "build_model": "build",
    "count_parameters": "build",
    "parameter_breakdown": "build",
    "load_model": "checkpoint_io",
    "PRESETS": "config",
    "ModelConfig": "config",
    "model_config": "config",
    "capture": "hooks",
    "Memory": "interfaces",
    "SourceInputs": "interfaces",
    "DecoderCache": "transformer",
    "Transformer": "transformer",
    "register_variant": "variants",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
