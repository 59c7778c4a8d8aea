"""Plug-in ``fifth_gate`` of the fifth study: one learned scalar that scales the source embeddings.

``{fifth_gate: {init: 0.5}}`` multiplies the source embedder's output (token embedding, positions
and dropout) by a parameter ``g`` that starts at ``init`` (default 1.0) and is trained with the
model; the study's table reports where ``g`` ended. Tiny on purpose: it exists to prove that a
study living outside the package reaches training, decoding and its table through ``extensions``
(rules/studies/README.md), not to improve translation.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from nmtvariants.errors import ConfigError
from nmtvariants.models.transformer import Transformer
from nmtvariants.models.variants import register_variant

NAME = "fifth_gate"
PARAMETER = f"{NAME}.value"  # its key in a checkpoint's state dict


class EmbeddingGate(nn.Module):
    """A forward hook with a parameter: the hooked module's output times ``value``."""

    def __init__(self, init: float) -> None:
        super().__init__()
        self.value = nn.Parameter(torch.tensor(float(init)))

    def forward(self, module: nn.Module, args: tuple, output: torch.Tensor) -> torch.Tensor:
        return output * self.value.to(output.dtype)


def initial_value(options: Any) -> float:
    """The gate's start, ``init`` of the options (1.0: the baseline's embeddings unchanged)."""
    options = {} if options is None else options
    init = options.get("init", 1.0) if isinstance(options, dict) else None
    if not isinstance(init, int | float) or isinstance(init, bool):
        raise ConfigError(f"model.variant.{NAME}: expected {{init: <number>}}, got {options!r}")
    return float(init)


@register_variant(NAME)
def install(model: Transformer, options: Any) -> None:
    """Attach the gate to the model (so it is saved and loaded with it) and hook it on the source
    embedder, which every encoding (training, validation, beam search) goes through."""
    model.fifth_gate = EmbeddingGate(initial_value(options))
    model.src_embed.register_forward_hook(model.fifth_gate)
