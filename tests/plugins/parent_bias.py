"""Test plug-in ``test_parent_bias``: reads the ``parents`` stream, biases attention toward the parent.

In the first encoder layer's self-attention, query position ``i`` gets ``+ b_h`` on its score for
key ``parents[i]`` (one learned bias per head, starting at 1), through the ``score_transform`` seam:
a minimal PASCAL-like mechanism that proves an integer stream reaches the encoder in training,
validation, beam search and scoring. Loaded through ``NMTV_PLUGINS`` (models/variants.py).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from nmtvariants.errors import InputError
from nmtvariants.models.interfaces import StackContext
from nmtvariants.models.transformer import Transformer
from nmtvariants.models.variants import register_variant

NAME = "test_parent_bias"
STREAM = "parents"


class ParentBias(nn.Module):
    def __init__(self, heads: int):
        super().__init__()
        self.bias = nn.Parameter(torch.ones(heads))

    def forward(self, scores: torch.Tensor, ctx: StackContext, attn: nn.Module) -> torch.Tensor:
        parents = ctx.aux.get(STREAM)
        if parents is None:
            raise InputError(
                f"variant {NAME}: needs the integer stream {STREAM!r} aligned with the source "
                f"(data.train_aux / data.valid_aux {{{STREAM}: FILE}}, or --aux {STREAM}=FILE)"
            )
        batch, heads, queries, keys = scores.shape
        if tuple(parents.shape) != (batch, queries):
            raise ValueError(f"{NAME}: parents {tuple(parents.shape)} vs scores {tuple(scores.shape)}")
        onehot = F.one_hot(parents.clamp(min=0), keys).to(scores.dtype)  # padding (AUX_PAD) -> 0, masked
        return scores + self.bias.view(1, heads, 1, 1).to(scores.dtype) * onehot[:, None]


@register_variant(NAME)
def install(model: Transformer, options: object) -> None:
    model.encoder_layers[0].self_attn.attn.score_transform = ParentBias(model.cfg.n_heads)
