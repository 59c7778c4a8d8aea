"""PASCAL's modules (torch): the parent-scaled score transform and its installer; the plug-in's
declaration and options are its package's (torch-free, read when a config is checked)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from nmtvariants.errors import ConfigError, InputError
from nmtvariants.models.interfaces import AUX_PAD, StackContext
from nmtvariants.plugins.pascal import KEY, PARENTS_STREAM, PascalOptions

if TYPE_CHECKING:
    from nmtvariants.models.attention import MultiHeadAttention
    from nmtvariants.models.transformer import Transformer


class ParentScaling(nn.Module):
    """The ``score_transform`` of the PASCAL layer: scores [B, H, T, T] -> the first ``heads`` heads
    multiplied by the parent-distance matrix D [B, 1, T, T] (rows of ones at padding and where a
    parent is ignored). No parameters and no buffers: checkpoints are the baseline's."""

    def __init__(self, options: PascalOptions, heads: int):
        super().__init__()
        self.options = options
        self.heads = heads

    def distances(self, parents_x2: torch.Tensor, keys: int, dtype: torch.dtype) -> torch.Tensor:
        """D [B, T, keys]: the Normal density (or the parent-only window) of every key position j
        around each query's parent; rows of ones for queries at padding."""
        centre = parents_x2.to(dtype) / 2
        offset = torch.arange(keys, device=parents_x2.device, dtype=dtype)[None, None, :] - centre[..., None]
        if self.options.parent_only:
            weights = (offset.abs() < 1).to(dtype)
        else:
            variance = self.options.variance
            weights = torch.exp(offset.square() / (-2.0 * variance)) / math.sqrt(2.0 * math.pi * variance)
        return torch.where(parents_x2.ne(AUX_PAD)[..., None], weights, torch.ones_like(weights))

    def forward(self, scores: torch.Tensor, ctx: StackContext, attn: MultiHeadAttention) -> torch.Tensor:
        parents_x2 = ctx.aux.get(PARENTS_STREAM)
        if parents_x2 is None:
            raise InputError(
                f"variant pascal ({attn.name}): the batch has no {PARENTS_STREAM!r} source stream; "
                "provide subword parent positions (`nmtvariants parents --mode middle` on the parsed "
                "source) to the data and to translation, or drop the pascal variant"
            )
        batch, _, queries, keys = scores.shape
        if parents_x2.shape != (batch, queries) or queries != keys:
            raise ValueError(
                f"variant pascal ({attn.name}): parents {tuple(parents_x2.shape)} do not match the "
                f"self-attention scores {tuple(scores.shape)}; the stream must align with the source tokens"
            )
        # float32 at least: under bf16 autocast the density would lose its tail
        dtype = torch.promote_types(scores.dtype, torch.float32)
        weights = self.distances(parents_x2, keys, dtype)[:, None]  # [B, 1, T, T]
        if self.training and self.options.q > 0:
            ignored = torch.rand(batch, self.heads, queries, 1, device=scores.device) < self.options.q
            weights = torch.where(ignored, torch.ones((), dtype=dtype, device=scores.device), weights)
        scaled = (scores[:, : self.heads].to(dtype) * weights).to(scores.dtype)
        return torch.cat([scaled, scores[:, self.heads :]], dim=1)


def install_pascal(model: Transformer, raw: Any) -> None:
    """Put :class:`ParentScaling` into the ``score_transform`` seam of the chosen encoder layer."""
    options = PascalOptions.parse(raw)
    layers = len(model.encoder_layers)
    if options.layer > layers:
        raise ConfigError(f"{KEY}.layer: {options.layer}, but the encoder has {layers} layer(s)")
    attn = model.encoder_layers[options.layer - 1].self_attn.attn
    heads = attn.n_heads if options.heads is None else options.heads
    if heads > attn.n_heads:
        raise ConfigError(f"{KEY}.heads: {heads}, but the layer has {attn.n_heads} heads")
    if attn.score_transform is not None:
        raise ConfigError(f"{KEY}: {attn.name} already has a score transform from another variant")
    attn.score_transform = ParentScaling(options, heads)
