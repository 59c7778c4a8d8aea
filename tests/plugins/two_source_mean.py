"""Test plug-in: a multi-source strategy ``mean`` that proves the strategy seam works with N memories.

``out = x + Drop(sum_i w_i * A_i(LN(x), S_i))`` (pre-norm; post-norm: ``LN(x + Drop(...))``), one
attention A_i with its own projections per memory (text sources, then the feature grid), weights
``w`` from the strategy's own option ``weights`` (default: uniform, the mean). It is Libovický et
al.'s ``parallel`` combination up to the weights; the study's own strategies live in
``nmtvariants/plugins``. Importing this module registers it.
"""

from __future__ import annotations

import torch
from torch import nn

from nmtvariants.errors import ConfigError
from nmtvariants.models.config import ModelConfig
from nmtvariants.models.hooks import HookState
from nmtvariants.models.interfaces import Memory, StackContext
from nmtvariants.models.layers import CrossAttentionBlock
from nmtvariants.models.transformer import Transformer
from nmtvariants.models.variants import init_plugin_parameters, register_strategy

STRATEGY = "mean"


class WeightedSumCross(CrossAttentionBlock):
    """One query LayerNorm, one attention per memory, the weighted sum of their outputs, one residual."""

    def __init__(self, cfg: ModelConfig, hooks: HookState, name: str, weights: list[float]):
        super().__init__(cfg, hooks, name, len(weights))
        self.extra_norms = nn.ModuleList()  # one LayerNorm (SubLayer.norm) for the shared query
        self.weights = [float(w) for w in weights]

    def forward(
        self,
        x: torch.Tensor,
        ctx: StackContext,
        memories: list[Memory],
        attends: list[torch.Tensor | None],
        cache=None,
        group: int = 1,
    ) -> torch.Tensor:
        kvs = self.keys_values(memories, ctx, cache)
        h = self.norm(x) if self.pre_norm else x
        y = sum(
            w * attn(h, k, v, ctx, attend=attend, group=group)
            for w, attn, (k, v), attend in zip(self.weights, self.attns, kvs, attends, strict=True)
        )
        return self._residual(x, h, y)


@register_strategy(STRATEGY, keys=("weights",))
def install(model: Transformer, options: dict) -> None:
    n = model.n_memories
    weights = options.get("weights", [1.0 / n] * n)
    if (
        not isinstance(weights, list)
        or len(weights) != n
        or not all(isinstance(w, int | float) for w in weights)
    ):
        raise ConfigError(
            f"model.variant.multi_source.weights: give {n} numbers (one per memory), got {weights!r}"
        )
    for index, layer in enumerate(model.decoder_layers):
        if layer.cross_attn is None:
            continue
        block = WeightedSumCross(model.cfg, model.hooks, f"decoder.layers.{index}.cross", weights)
        init_plugin_parameters(block)
        layer.cross_attn = block
