"""One Transformer with switches for every variant of the four studies.

Public API::

    cfg = model_config("tiny", overrides={"dropout": ...}, variant={})
    model = build_model(cfg, vocab_size=V)
    logits = model(src, tgt_in)                      # src: a [B, S] tensor or a SourceInputs
    memories = model.encode_inputs(inputs); logits = model.decode(tgt_in, memories, cache=None)
    model = load_model(checkpoint_path)
"""

from nmtvariants.models.build import build_model, count_parameters, parameter_breakdown
from nmtvariants.models.checkpoint_io import load_model
from nmtvariants.models.config import PRESETS, ModelConfig, model_config
from nmtvariants.models.hooks import capture
from nmtvariants.models.interfaces import Memory, SourceInputs
from nmtvariants.models.transformer import DecoderCache, Transformer
from nmtvariants.models.variants import register_variant

__all__ = [
    "PRESETS",
    "DecoderCache",
    "Memory",
    "ModelConfig",
    "SourceInputs",
    "Transformer",
    "build_model",
    "capture",
    "count_parameters",
    "load_model",
    "model_config",
    "parameter_breakdown",
    "register_variant",
]
