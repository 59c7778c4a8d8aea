"""The encoders of a model: text encoders over token sequences, and a feature encoder over a dense grid.

A single-source model has one text encoder whose modules live directly on the Transformer
(``encoder_layers``, ``encoder_norm``: the parameter names of every checkpoint so far). A multi-source
model (``variant.multi_source``, Libovický et al. 2018) adds one :class:`TextEncoder` per further
source unless the encoders are shared, and a :class:`FeatureEncoder` when a feature grid is given.
All text sources share the source embedding table and positions (each source starts at position 0).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from nmtvariants.data.vocab import PAD_ID
from nmtvariants.errors import InputError
from nmtvariants.models.config import ModelConfig
from nmtvariants.models.embeddings import Embedder
from nmtvariants.models.hooks import HookState
from nmtvariants.models.interfaces import Memory, StackContext
from nmtvariants.models.layers import EncoderLayer


class TextEncoder(nn.Module):
    """The layers (and final LayerNorm) of a further source's encoder; ``prefix`` names its records."""

    def __init__(self, cfg: ModelConfig, hooks: HookState, depth: int, prefix: str):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(cfg, hooks, i, prefix) for i in range(depth))
        final = cfg.norm == "pre" and cfg.final_norm
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) if final else None


def run_text_encoder(
    embedder: Embedder,
    layers: nn.ModuleList,
    norm: nn.LayerNorm | None,
    hooks: HookState,
    src: torch.Tensor,
    aux: Mapping[str, torch.Tensor],
    prefix: str = "encoder",
) -> Memory:
    """Encode ``src`` [B, S] (tokens + </s>, right-padded with PAD_ID) through one stack into a Memory.

    Records ``{prefix}.embeddings``, ``{prefix}.layers.{i}`` and ``{prefix}.output`` while capturing.
    """
    pad_mask = src.eq(PAD_ID)
    x = embedder(src, aux=aux)
    recorder = hooks.recorder
    if recorder is not None:
        recorder.put(f"{prefix}.embeddings", x)
    ctx = StackContext(side="encoder", embeddings=x, aux=aux, history=[x], pad_mask=pad_mask)
    attend = ~pad_mask[:, None, None, :]
    for index, layer in enumerate(layers):
        ctx.layer = index
        x = layer(x, ctx, attend)
        ctx.history.append(x)
        if recorder is not None:
            recorder.put(f"{prefix}.layers.{index}", x)
    if norm is not None:
        x = norm(x)
    if recorder is not None:
        recorder.put(f"{prefix}.output", x)
    return Memory(states=x, pad_mask=pad_mask, embeddings=ctx.embeddings)


class FeatureEncoder(nn.Module):
    """``W f + b``: a per-position linear projection of a feature grid [B, R, C] to d_model; every
    position is real. With ``layer_norm`` (``multi_source.features.layer_norm: true``), ``LN(W f + b)``.

    The projection is the paper's ("a linear projection into 512 dimensions") and Neural Monkey's
    ``SpatialFiller`` (seed brief §4.3): a 1x1 convolution with bias over the flattened image regions,
    no normalisation after it, no positional signal, no self-attention among the regions. The image
    states are therefore *not* put on the text states' scale, which is what the paper's account of the
    flat strategy's weak multimodal result turns on ("the optimization failed to find a common
    representation of the input modalities"): the flat strategy's shared keys must learn it.

    The LayerNorm is ours, off by default, and a deviation from the paper when on. Every text memory
    leaves its encoder through a LayerNorm, so its states have unit scale per position; ResNet's last
    block is a ReLU output with a large common component (the random-weight ResNet-18 of the offline
    demo gives vectors of norm ~100), so without any scaling the projected grid is several times the
    scale of the text states and under the flat strategy's shared keys takes nearly all the attention
    mass at every query (the demo's flat run before any scaling: valid loss rising 4.27 -> 4.56, BLEU
    0). The offline demo standardises its untrained ResNet's features at extraction instead
    (``image_features.standardise``, :mod:`nmtvariants.vision.features`), which keeps this encoder the
    paper's; the LayerNorm stays an explicit option for feature grids that cannot be re-extracted.
    """

    def __init__(
        self, channels: int, d_model: int, hooks: HookState, eps: float = 1e-5, layer_norm: bool = False
    ):
        super().__init__()
        self.channels = channels
        self.proj = nn.Linear(channels, d_model)
        self.norm = nn.LayerNorm(d_model, eps=eps) if layer_norm else None
        self.hooks = hooks

    def forward(self, features: torch.Tensor) -> Memory:
        if features.dim() != 3 or features.size(-1) != self.channels:
            raise InputError(
                f"feature grid: expected [batch, regions, {self.channels}] (the model's "
                f"multi_source.features.channels), got shape {list(features.shape)}; give features "
                "with that many channels or a model built for them"
            )
        states = self.proj(features.to(self.proj.weight.dtype))
        if self.norm is not None:
            states = self.norm(states)
        recorder = self.hooks.recorder
        if recorder is not None:
            recorder.put("features.output", states)
        pad_mask = torch.zeros(features.shape[:2], dtype=torch.bool, device=features.device)
        return Memory(states=states, pad_mask=pad_mask)
