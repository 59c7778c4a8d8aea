"""Sub-layers (self-attention, cross-attention, feed-forward) and the layers built from them.

Every sub-layer owns its LayerNorm and residual: pre-norm computes ``x + drop(f(LN(x)))`` (Emelin et al.,
Libovický et al.), post-norm ``LN(x + drop(f(x)))`` (Vaswani et al., fairseq, Yang et al.). A decoder
layer is a *sequence* of sub-layers given by ``variant.decoder_layout`` (Yang et al. §3.5): the standard
``self,cross,ffn``; ``cross,ffn`` (SEM->IFM, no self-attention); ``cross,self,ffn`` (SEM->TEM->IFM);
``self,cross`` (the simplified decoder: IFM reduced to the one Add&Norm after cross-attention).

Cross-attention holds one attention per memory (multi-source, Libovický et al. §4.2); the ``serial``
combination attends to the memories one after the other, each with its own LayerNorm and residual,
which for a single memory is exactly the standard encoder-decoder attention sub-layer. Each memory's
mask comes from ``Memory.attend_mask`` (padding, and causal order for a ``causal`` memory).

A multi-source strategy plug-in (``variants.declare_strategy``) replaces ``DecoderLayer.cross_attn``
with a module called as ``block(x, ctx, memories, attends, cache=..., group=...)`` returning the new
state [rows, T, d]; subclassing :class:`CrossAttentionBlock` gives it ``keys_values`` (cached
per-memory keys/values) and the residual/norm of :class:`SubLayer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from nmtvariants.models.attention import MultiHeadAttention
from nmtvariants.models.config import ModelConfig
from nmtvariants.models.dropout import Dropout
from nmtvariants.models.hooks import HookState
from nmtvariants.models.interfaces import Memory, StackContext

if TYPE_CHECKING:
    from nmtvariants.models.decoder_cache import LayerCache


class SubLayer(nn.Module):
    """Norm, dropout and residual shared by all sub-layers; ``transform`` is the sub-layer's function."""

    kind = ""

    def __init__(self, cfg: ModelConfig, hooks: HookState, name: str):
        super().__init__()
        self.pre_norm = cfg.norm == "pre"
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.dropout = Dropout(cfg.residual_dropout)
        self.hooks = hooks
        self.name = name
        # Emelin et al.'s shortcut blocks add the *normalised* input back (seed brief §1.2);
        # plug-ins set this.
        self.residual_from_normed = False

    def _residual(self, x: torch.Tensor, h: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        recorder = self.hooks.recorder
        if self.pre_norm:
            out = self.dropout.add(h if self.residual_from_normed else x, y)
        else:
            out = self.norm(self.dropout.add(x, y))
        if recorder is not None:
            recorder.put(f"{self.name}.out", y)
            recorder.put(f"{self.name}.state", out)
        return out


class FeedForwardBlock(SubLayer):
    """Linear(d, d_ff) + ReLU + Linear(d_ff, d), both biased by default."""

    kind = "ffn"

    def __init__(self, cfg: ModelConfig, hooks: HookState, name: str):
        super().__init__(cfg, hooks, name)
        self.w1 = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.ffn_bias)
        self.w2 = nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.ffn_bias)
        self.relu_dropout = Dropout(cfg.relu_dropout)
        self.dropout_on_input = cfg.relu_dropout_at == "input"

    def forward(self, x: torch.Tensor, ctx: StackContext) -> torch.Tensor:
        h = self.norm(x) if self.pre_norm else x
        if self.dropout_on_input:
            y = self.w2(torch.relu(self.w1(self.relu_dropout(h))))
        else:
            y = self.w2(self.relu_dropout(torch.relu(self.w1(h))))
        return self._residual(x, h, y)


class SelfAttentionBlock(SubLayer):
    """Self-attention over the stack's own positions; causal in the decoder, cached when decoding."""

    kind = "self"

    def __init__(self, cfg: ModelConfig, hooks: HookState, name: str, causal: bool):
        super().__init__(cfg, hooks, name)
        self.attn = MultiHeadAttention(
            cfg.d_model, cfg.n_heads, cfg.attention_dropout, cfg.attention_bias, hooks, name
        )
        self.causal = causal

    def forward(
        self,
        x: torch.Tensor,
        ctx: StackContext,
        attend: torch.Tensor | None = None,
        cache: LayerCache | None = None,
    ) -> torch.Tensor:
        h = self.norm(x) if self.pre_norm else x
        k, v = self.attn.project_kv(h, ctx, layer_input=x)
        if cache is not None:
            y = self.attn.attend_cached(h, k, v, cache, ctx)
        else:
            y = self.attn(h, k, v, ctx, attend=attend, causal=self.causal)
        return self._residual(x, h, y)


class CrossAttentionBlock(SubLayer):
    """Attention from the decoder to one or more memories (``serial`` combination, Libovický et al.)."""

    kind = "cross"

    def __init__(self, cfg: ModelConfig, hooks: HookState, name: str, n_sources: int = 1):
        super().__init__(cfg, hooks, name)
        names = [name] if n_sources == 1 else [f"{name}.{k}" for k in range(n_sources)]
        self.attns = nn.ModuleList(
            MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.attention_dropout, cfg.attention_bias, hooks, n)
            for n in names
        )
        # one LayerNorm per memory; the first is SubLayer.norm so that one source has the standard names
        self.extra_norms = nn.ModuleList(
            nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) for _ in range(n_sources - 1)
        )
        self.names = names

    def memory_kv(self, memories: list[Memory], ctx: StackContext) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [
            attn.project_kv(m.states, ctx, memory=m) for attn, m in zip(self.attns, memories, strict=True)
        ]

    def keys_values(
        self, memories: list[Memory], ctx: StackContext, cache: LayerCache | None
    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Every memory's keys/values, computed once per decoding run when there is a ``cache``.

        ``cache.cross`` must stay a list of (keys, values) with memory rows first: beam search selects
        its rows when sentences finish (``LayerCache.select``).
        """
        if cache is None:
            return self.memory_kv(memories, ctx)
        if cache.cross is None:
            # heads-first and contiguous once, so that every step's attention products read them as
            # views instead of copying them ([B, H, S, d_head] from split heads is a transposed view)
            cache.cross = [(k.contiguous(), v.contiguous()) for k, v in self.memory_kv(memories, ctx)]
        return cache.cross

    def forward(
        self,
        x: torch.Tensor,
        ctx: StackContext,
        memories: list[Memory],
        attends: list[torch.Tensor | None],
        cache: LayerCache | None = None,
        group: int = 1,
    ) -> torch.Tensor:
        kvs = self.keys_values(memories, ctx, cache)
        recorder = self.hooks.recorder
        for index, attn in enumerate(self.attns):
            norm = self.norm if index == 0 else self.extra_norms[index - 1]
            h = norm(x) if self.pre_norm else x
            k, v = kvs[index]
            y = attn(h, k, v, ctx, attend=attends[index], group=group)
            if self.pre_norm:
                x = self.dropout.add(h if self.residual_from_normed else x, y)
            else:
                x = norm(self.dropout.add(x, y))
            if recorder is not None:
                recorder.put(f"{self.names[index]}.out", y)
                recorder.put(f"{self.names[index]}.state", x)
        return x


class EncoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig, hooks: HookState, index: int, prefix: str = "encoder"):
        super().__init__()
        name = f"{prefix}.layers.{index}"
        self.self_attn = SelfAttentionBlock(cfg, hooks, f"{name}.self", causal=False)
        self.ffn = FeedForwardBlock(cfg, hooks, f"{name}.ffn")

    def forward(self, x: torch.Tensor, ctx: StackContext, attend: torch.Tensor | None) -> torch.Tensor:
        return self.ffn(self.self_attn(x, ctx, attend=attend), ctx)


class DecoderLayer(nn.Module):
    """Sub-layers in the order of ``layout`` (a tuple of kinds from models.variants.SUBLAYER_KINDS, each at most once)."""

    def __init__(
        self, cfg: ModelConfig, hooks: HookState, index: int, layout: tuple[str, ...], n_sources: int = 1
    ):
        super().__init__()
        name = f"decoder.layers.{index}"
        self.layout = layout
        self.self_attn = (
            SelfAttentionBlock(cfg, hooks, f"{name}.self", causal=True) if "self" in layout else None
        )
        self.cross_attn = (
            CrossAttentionBlock(cfg, hooks, f"{name}.cross", n_sources) if "cross" in layout else None
        )
        self.ffn = FeedForwardBlock(cfg, hooks, f"{name}.ffn") if "ffn" in layout else None

    def forward(
        self,
        x: torch.Tensor,
        ctx: StackContext,
        memories: list[Memory],
        attends: list[torch.Tensor | None],
        cache: LayerCache | None = None,
        group: int = 1,
    ) -> torch.Tensor:
        for kind in self.layout:
            if kind == "self":
                x = self.self_attn(x, ctx, cache=cache)
            elif kind == "cross":
                x = self.cross_attn(x, ctx, memories, attends, cache=cache, group=group)
            else:
                x = self.ffn(x, ctx)
        return x
