"""Building a model from its config, and counting its parameters (Emelin et al. Table 5 accounting)."""

from __future__ import annotations

from collections import OrderedDict

from torch import nn

from nmtvariants.errors import ConfigError
from nmtvariants.models.config import ModelConfig
from nmtvariants.models.transformer import Transformer
from nmtvariants.models.variants import install_variants


def build_model(cfg: ModelConfig, vocab_size: int) -> Transformer:
    """The base Transformer with every plug-in of ``cfg.variant`` installed into its seams."""
    if vocab_size <= 4:
        raise ConfigError(f"vocab_size must exceed the 4 special symbols, got {vocab_size}")
    model = Transformer(cfg, vocab_size)
    install_variants(model, cfg.variant)
    return model


def count_parameters(model: nn.Module) -> int:
    """Distinct trainable parameters (a table shared by encoder, decoder and output counts once)."""
    return sum(p.numel() for p in model.parameters())


def parameter_breakdown(model: nn.Module, depth: int = 2) -> OrderedDict[str, int]:
    """Parameter counts grouped by the first ``depth`` components of their names (shared ones once)."""
    groups: OrderedDict[str, int] = OrderedDict()
    seen: set[int] = set()
    for name, param in model.named_parameters():
        if id(param) in seen:
            continue
        seen.add(id(param))
        key = ".".join(name.split(".")[:depth])
        groups[key] = groups.get(key, 0) + param.numel()
    return groups
