"""Token embeddings scaled by sqrt(d) plus tensor2tensor-style sinusoidal positions.

The T2T signal (Emelin et al.'s ``get_positional_signal``, seed brief §1.1) differs from Vaswani et al.'s
interleaved one: the first half of the vector holds sines, the second half cosines, and the timescales
run geometrically from 1 to 1e4 over ``d/2 - 1`` steps. It is added after the sqrt(d) scaling and
followed by embedding dropout.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch
from torch import nn

from nmtvariants.models.dropout import Dropout


def sinusoidal_positions(
    length: int, dim: int, min_timescale: float = 1.0, max_timescale: float = 1.0e4, offset: int = 0
) -> torch.Tensor:
    """[length, dim] float32 signal for positions offset..offset+length-1 (T2T ``get_timing_signal_1d``)."""
    half = dim // 2
    log_increment = math.log(max_timescale / min_timescale) / max(half - 1, 1)
    inv_timescales = min_timescale * torch.exp(torch.arange(half, dtype=torch.float64) * -log_increment)
    positions = torch.arange(offset, offset + length, dtype=torch.float64)
    scaled = positions[:, None] * inv_timescales[None, :]
    return torch.cat([torch.sin(scaled), torch.cos(scaled)], dim=1).float()


class Embedder(nn.Module):
    """Looks tokens up in a (possibly shared) table, scales, adds positions, applies dropout."""

    def __init__(self, table: nn.Embedding, d_model: int, dropout: float, scale: bool, max_positions: int):
        super().__init__()
        self.table = table
        self.scale = math.sqrt(d_model) if scale else 1.0
        self.dropout = Dropout(dropout)
        self.d_model = d_model
        self.register_buffer("positions", sinusoidal_positions(max_positions, d_model), persistent=False)
        # seam: a plug-in's EmbeddingTransform (models.interfaces), applied after scaling, before positions
        self.feature_transform: nn.Module | None = None

    def position_signal(self, length: int, offset: int = 0) -> torch.Tensor:
        end = offset + length
        if end > self.positions.size(0):  # grow rather than fail on an unusually long input
            grown = sinusoidal_positions(max(end, 2 * self.positions.size(0)), self.d_model)
            self.positions = grown.to(self.positions.device)
        return self.positions[offset:end]

    def forward(
        self, tokens: torch.Tensor, offset: int = 0, aux: Mapping[str, torch.Tensor] | None = None
    ) -> torch.Tensor:
        x = self.table(tokens)
        if self.scale != 1.0:
            x = x * self.scale
        if self.feature_transform is not None:
            x = self.feature_transform(x, tokens, aux or {})
        x = x + self.position_signal(tokens.size(1), offset).to(x.dtype)
        return self.dropout(x)
