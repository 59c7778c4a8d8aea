"""Lexical shortcuts (Emelin, Titov & Sennrich 2019): gated connections from the embeddings into attention.

Spelling: ``--variant '{"shortcuts": {"kind": "lexical"}}'`` (eqs 5-12) or ``{"kind": "feature_fusion"}``
(eqs 13-14). The defaults are the paper's main setting: self-attention shortcuts in encoder and decoder,
from the embeddings, with the authors' wiring. Options (all optional):

* ``kind``: ``lexical`` | ``feature_fusion``.
  - lexical: ``K_sc = E W^{K_sc}``, ``V_sc = E W^{V_sc}`` (new unbiased d x d maps, eqs 5-6) next to the
    layer's own ``K = H W^K``, ``V = H W^V`` (eqs 7-8); ``r = sigmoid(K_sc + K + b)`` element-wise over d
    with a d-sized bias per K and per V (eqs 9-10); ``K' = r * K_sc + (1 - r) * K`` (eqs 11-12).
  - feature_fusion: ``[K_sc | K] = [E; H] W^K`` and ``[V_sc | V] = [E; H] W^V`` with one unbiased
    2d x 2d map each, split into halves (first half = shortcut part, E first; eqs 13-14), replacing the
    layer's d x d key/value maps; the gate is eqs 9-12 unchanged.
* ``self_attention``: ``both`` | ``encoder`` | ``decoder`` | ``none``: which stacks' self-attention
  sub-layers get a shortcut (``encoder``/``decoder``: the ablations of the paper's Figure 5).
* ``cross_attention``: ``true`` adds shortcuts to decoder-to-encoder attention with E fixed to the
  *source* embeddings (``Memory.embeddings``) and H the encoder output (Table 4, "dec-to-enc"); with
  ``self_attention: none`` that variant alone, otherwise together with the self-attention shortcuts.
* ``source``: ``embeddings`` (lexical) | ``n_minus_2`` (non-lexical, Table 4): layer n takes the output
  of layer n-2 in place of E; layers 1 and 2 take the embeddings (footnote 5: nothing lies below them).
  This is the variant the paper describes; the published code selects it with a misspelt string and
  so builds plain lexical shortcuts instead (seed brief §1.4). The authors' intended module is the
  feature-fusion one: Table 4's row is ``{kind: feature_fusion, source: n_minus_2}``.
* ``wiring``: ``authors`` | ``pre_norm`` (matters only in pre-norm models, the default):
  - ``authors`` (the TF code, seed brief §1.2): H in eqs 7-8 is the sub-layer's raw, un-normalised input
    (the previous layer's output in the standard layout; in ``cross,self,ffn`` the cross-attention
    sub-layer's output), the queries come from LN(x), and every sub-layer that carries a
    shortcut adds LN(x) back as its residual, not x (``SubLayer.residual_from_normed``). That is
    neither pre-norm nor post-norm, but it is the model the paper's numbers come from.
  - ``pre_norm``: clean pre-norm: H is LN(x), the same input the baseline's keys and values see, and
    the residual adds x as in every other sub-layer.
  In cross-attention H is always the encoder output (which ends with the encoder's LayerNorm).

E is the embedding-layer output as the authors used it: sqrt(d)-scaled embeddings plus positions, after
embedding dropout (``StackContext.embeddings``, ``Memory.embeddings``). New weights are Glorot-uniform;
the gate biases too (the TF code's ``glorot_uniform_initializer`` on a [d] vector: limit sqrt(3/d)),
not zero. Gated keys and values are computed per position, so incremental decoding caches them like
ordinary keys and values (``DecoderCache``) and each position is gated once. The gates are recorded
as ``{attention name}.key_gate`` / ``.value_gate`` [B, T, d] under :func:`nmtvariants.models.capture`.

Parameters per gated attention: lexical 2d^2 + 2d, feature-fusion 6d^2 + 2d (Table 5: BASE 65,166K ->
71,470K and 84,053K; BIG 218,413K -> 293,935K). The paper trains them with warm-up 6000 (lexical) and
8000 (feature-fusion) instead of the baseline's 4000 (A.1); that belongs to the experiment's trainer config.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from nmtvariants.errors import ConfigError
from nmtvariants.models.interfaces import Memory, StackContext
from nmtvariants.models.variants import init_plugin_parameters, register_variant

if TYPE_CHECKING:
    from nmtvariants.models.attention import MultiHeadAttention
    from nmtvariants.models.layers import SubLayer
    from nmtvariants.models.transformer import Transformer

KINDS = ("lexical", "feature_fusion")
STACKS = {"both": ("encoder", "decoder"), "encoder": ("encoder",), "decoder": ("decoder",), "none": ()}
SOURCES = ("embeddings", "n_minus_2")
WIRINGS = ("authors", "pre_norm")
KEY = "model.variant.shortcuts"


@dataclass(frozen=True)
class ShortcutOptions:
    kind: str = "lexical"
    self_attention: str = "both"
    cross_attention: bool = False
    source: str = "embeddings"
    wiring: str = "authors"

    @classmethod
    def parse(cls, raw: Any) -> ShortcutOptions:
        """Validate the variant's options; every error names the offending key."""
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise ConfigError(f"{KEY}: expected a mapping like {{kind: lexical}}, got {raw!r}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(raw) - set(known))
        if unknown:
            raise ConfigError(f"{KEY}: unknown option(s) {', '.join(unknown)}; known: {', '.join(known)}")
        options = cls(**raw)
        for name, allowed in (
            ("kind", KINDS),
            ("self_attention", tuple(STACKS)),
            ("source", SOURCES),
            ("wiring", WIRINGS),
        ):
            if getattr(options, name) not in allowed:
                raise ConfigError(
                    f"{KEY}.{name}: must be one of {', '.join(allowed)}, got {getattr(options, name)!r}"
                )
        if not isinstance(options.cross_attention, bool):
            raise ConfigError(
                f"{KEY}.cross_attention: must be true or false, got {options.cross_attention!r}"
            )
        if options.self_attention == "none" and not options.cross_attention:
            raise ConfigError(f"{KEY}: self_attention none without cross_attention adds no shortcut")
        if options.source != "embeddings" and options.self_attention == "none":
            raise ConfigError(
                f"{KEY}.source: {options.source} applies to self-attention shortcuts only "
                "(decoder-to-encoder shortcuts always come from the source embeddings)"
            )
        return options

    @property
    def main_setting(self) -> bool:
        """Whether these are the paper's main shortcuts (self-attention on both sides, from the
        embeddings, none into decoder-to-encoder attention): the models its Tables 1-3 and 5 and its
        analyses report; the others are Table 4's and Figure 5's ablations."""
        return self.self_attention == "both" and not self.cross_attention and self.source == "embeddings"


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


@register_variant("shortcuts")
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
