"""Test plug-in ``test_aux_loss``: a weighted auxiliary loss, the squared size of the encoder states.

``total = sum over real source positions of mean_d(h_d^2)`` for the last encoder layer's output ``h``
(a sum over the batch, like the main loss), added with the variant's ``weight`` (default 0.1)
through ``model.aux_losses`` by a forward hook. The trainer scales it with the main loss and logs
it as ``aux_enc_l2``. Loaded through ``NMTV_PLUGINS`` (models/variants.py).
"""

from __future__ import annotations

from typing import Any

import torch

from nmtvariants.errors import ConfigError
from nmtvariants.models.transformer import Transformer
from nmtvariants.models.variants import register_variant

NAME = "test_aux_loss"
TERM = "enc_l2"


def encoder_l2(states: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
    return states.float().pow(2).mean(-1).masked_fill(pad_mask, 0.0).sum()


@register_variant(NAME)
def install(model: Transformer, options: Any) -> None:
    options = options if isinstance(options, dict) else {}
    weight = options.get("weight", 0.1)
    if not isinstance(weight, int | float) or weight < 0:
        raise ConfigError(f"model.variant.{NAME}.weight: must be a number >= 0, got {weight!r}")

    def add_term(module, args, output):
        ctx = args[1]
        model.aux_losses.add(TERM, encoder_l2(output, ctx.pad_mask), float(weight))

    model.encoder_layers[-1].register_forward_hook(add_term)
