"""Lexical shortcuts' modules (torch): the gated shortcut and its installer; the plug-in's declaration
and options are its package's (torch-free, read when a config is checked)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from nmtvariants.errors import ConfigError
from nmtvariants.models.interfaces import Memory, StackContext
from nmtvariants.models.variants import init_plugin_parameters
from nmtvariants.plugins.shortcuts import KEY, STACKS, ShortcutOptions

if TYPE_CHECKING:
    from nmtvariants.models.attention import MultiHeadAttention
    from nmtvariants.models.layers import SubLayer
    from nmtvariants.models.transformer import Transformer


class GatedShortcut(nn.Module):
    """The ``kv_transform`` of one attention: gated keys and values between a shortcut input S (E, the
    source embeddings, or H_{l-2}) and the hidden input H (eqs 5-14). Returns full-width [B, T, d]."""

    def __init__(self, d: int, options: ShortcutOptions, cross: bool, factory: dict[str, Any]):
        super().__init__()
        self.options = options
        self.cross = cross
        self.fused = options.kind == "feature_fusion"
        if self.fused:  # W^K, W^V of eqs 13-14: [S; H] -> [K_sc | K], [V_sc | V]
            self.key_fusion = nn.Linear(2 * d, 2 * d, bias=False, **factory)
            self.value_fusion = nn.Linear(2 * d, 2 * d, bias=False, **factory)
        else:  # W^{K_sc}, W^{V_sc} of eqs 5-6; eqs 7-8 use the attention's own k_proj / v_proj
            self.key_shortcut = nn.Linear(d, d, bias=False, **factory)
            self.value_shortcut = nn.Linear(d, d, bias=False, **factory)
        self.key_gate_bias = nn.Parameter(torch.empty(d, **factory))  # b^K of eq 9
        self.value_gate_bias = nn.Parameter(torch.empty(d, **factory))  # b^V of eq 10
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init_plugin_parameters(self)
        # TF's glorot_uniform on a rank-1 shape [d] takes fan_in = fan_out = d
        limit = math.sqrt(6.0 / (2 * self.key_gate_bias.numel()))
        nn.init.uniform_(self.key_gate_bias, -limit, limit)
        nn.init.uniform_(self.value_gate_bias, -limit, limit)

    def inputs(
        self,
        hidden: torch.Tensor,
        ctx: StackContext,
        layer_input: torch.Tensor | None,
        memory: Memory | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(S, H) for this attention: see the module docstring for which tensors they are."""
        if self.cross:
            if memory is None or memory.embeddings is None:
                raise ValueError(
                    "decoder-to-encoder shortcuts need the source embeddings (Memory.embeddings); "
                    "this memory has none"
                )
            return memory.embeddings, hidden
        if self.options.source == "embeddings":
            shortcut = ctx.embeddings
        else:  # history = [E, H_1, .., H_{l-1}]: H_{l-2} from layer 3 on, E for layers 1 and 2
            shortcut = ctx.history[-2] if len(ctx.history) >= 2 else ctx.history[0]
        if self.options.wiring == "authors" and layer_input is not None:
            return shortcut, layer_input
        return shortcut, hidden

    def forward(
        self,
        attn: MultiHeadAttention,
        hidden: torch.Tensor,
        ctx: StackContext,
        *,
        layer_input: torch.Tensor | None,
        memory: Memory | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        shortcut, state = self.inputs(hidden, ctx, layer_input, memory)
        if self.fused:
            both = torch.cat([shortcut, state], dim=-1)
            k_sc, k_h = self.key_fusion(both).chunk(2, dim=-1)
            v_sc, v_h = self.value_fusion(both).chunk(2, dim=-1)
        else:
            k_sc, v_sc = self.key_shortcut(shortcut), self.value_shortcut(shortcut)
            k_h, v_h = attn.k_proj(state), attn.v_proj(state)
        # the bias in the projections' dtype keeps K/V in the compute dtype under autocast
        r_k = torch.sigmoid(k_sc + k_h + self.key_gate_bias.to(k_sc.dtype))
        r_v = torch.sigmoid(v_sc + v_h + self.value_gate_bias.to(v_sc.dtype))
        recorder = attn.hooks.recorder
        if recorder is not None:
            recorder.put(f"{attn.name}.key_gate", r_k)
            recorder.put(f"{attn.name}.value_gate", r_v)
        # eqs 11-12: r * X_sc + (1 - r) * X, as one fused lerp
        return torch.lerp(k_h, k_sc, r_k), torch.lerp(v_h, v_sc, r_v)


def gated_attentions(
    model: Transformer, options: ShortcutOptions
) -> list[tuple[SubLayer, MultiHeadAttention, bool]]:
    """(sub-layer, attention, is cross-attention) for every attention that gets a shortcut."""
    found: list[tuple[SubLayer, MultiHeadAttention, bool]] = []
    stacks = STACKS[options.self_attention]
    if "encoder" in stacks:
        found += [(layer.self_attn, layer.self_attn.attn, False) for layer in model.encoder_layers]
    if "decoder" in stacks:
        for layer in model.decoder_layers:
            if layer.self_attn is None:
                raise ConfigError(
                    f"{KEY}.self_attention: the decoder layout {','.join(layer.layout)} has no "
                    "self-attention; use self_attention: encoder"
                )
            found.append((layer.self_attn, layer.self_attn.attn, False))
    if options.cross_attention:
        for layer in model.decoder_layers:
            if layer.cross_attn is None:
                raise ConfigError(
                    f"{KEY}.cross_attention: the decoder layout {','.join(layer.layout)} has no "
                    "decoder-to-encoder attention"
                )
            found += [(layer.cross_attn, attn, True) for attn in layer.cross_attn.attns]
    return found


def install_shortcuts(model: Transformer, raw: Any) -> None:
    """Put a :class:`GatedShortcut` into the ``kv_transform`` seam of every selected attention."""
    options = ShortcutOptions.parse(raw)
    reference = model.output_weight
    factory = {"device": reference.device, "dtype": reference.dtype}
    for block, attn, cross in gated_attentions(model, options):
        if attn.kv_transform is not None:
            raise ConfigError(f"{KEY}: {attn.name} already has a key/value transform from another variant")
        attn.kv_transform = GatedShortcut(model.cfg.d_model, options, cross, factory)
        if options.kind == "feature_fusion":  # the fused maps replace the layer's W^K and W^V
            attn.k_proj = None
            attn.v_proj = None
        block.residual_from_normed = options.wiring == "authors"
