"""The multi-source strategies' modules (torch): parallel, flat and hierarchical cross-attention and
their installers; the strategies' declaration (names, option keys) is the package's (torch-free)."""

from __future__ import annotations

import torch
from torch import nn

from nmtvariants.errors import ConfigError
from nmtvariants.models.attention import MultiHeadAttention
from nmtvariants.models.config import ModelConfig
from nmtvariants.models.hooks import HookState
from nmtvariants.models.interfaces import Memory, StackContext
from nmtvariants.models.layers import CrossAttentionBlock
from nmtvariants.models.transformer import Transformer
from nmtvariants.models.variants import init_plugin_parameters

Pairs = list[tuple[torch.Tensor, torch.Tensor]]


def concat_attends(memories: list[Memory], attends: list[torch.Tensor | None]) -> torch.Tensor:
    """The memories' boolean masks [B, 1, Tq or 1, S_i] joined along the key axis (flat attention).

    A missing mask means every key of that memory may be seen; masks with per-query rows (a causal
    memory) make the joined mask per-query too.
    """
    masks = [
        ~m.pad_mask[:, None, None, :] if a is None else a for m, a in zip(memories, attends, strict=True)
    ]
    queries = max(mask.size(-2) for mask in masks)
    return torch.cat([mask.expand(-1, -1, queries, -1) for mask in masks], dim=-1)


class _CombinedCross(CrossAttentionBlock):
    """Shared parts: one query LayerNorm (``SubLayer.norm``) and the residual around a dropped output."""

    def __init__(self, cfg: ModelConfig, hooks: HookState, name: str, n_sources: int):
        super().__init__(cfg, hooks, name, n_sources)
        self.extra_norms = nn.ModuleList()  # the memories share the one query LayerNorm

    def query(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x) if self.pre_norm else x

    def contexts(
        self,
        h: torch.Tensor,
        kvs: Pairs,
        ctx: StackContext,
        attends: list[torch.Tensor | None],
        group: int,
    ) -> list[torch.Tensor]:
        """Drop(A_i(h, S_i)) for every memory i."""
        return [
            self.dropout(attn(h, k, v, ctx, attend=attend, group=group))
            for attn, (k, v), attend in zip(self.attns, kvs, attends, strict=True)
        ]

    def add(self, x: torch.Tensor, h: torch.Tensor, dropped: torch.Tensor) -> torch.Tensor:
        """The residual around an already dropped-out output (``SubLayer._residual`` without its dropout)."""
        base = h if self.residual_from_normed else x
        out = base + dropped if self.pre_norm else self.norm(x + dropped)
        recorder = self.hooks.recorder
        if recorder is not None:
            recorder.put(f"{self.name}.out", dropped)
            recorder.put(f"{self.name}.state", out)
        return out


class ParallelCross(_CombinedCross):
    """``x + sum_i Drop(A_i(LN(x), S_i))`` (eq 4)."""

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
        h = self.query(x)
        return self.add(x, h, torch.stack(self.contexts(h, kvs, ctx, attends, group)).sum(0))


class HierarchicalCross(_CombinedCross):
    """``x + Drop(A_hier(q_t, [c_1t; ...; c_Nt]))`` with ``c_i = Drop(A_i(q, S_i))`` (eqs 7-8)."""

    def __init__(self, cfg: ModelConfig, hooks: HookState, name: str, n_sources: int, heads: int):
        super().__init__(cfg, hooks, name, n_sources)
        # Neural Monkey: the second level's attention dropout is the main dropout rate
        self.hier = MultiHeadAttention(
            cfg.d_model, heads, cfg.residual_dropout, cfg.attention_bias, hooks, f"{name}.hier"
        )

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
        h = self.query(x)
        contexts = self.contexts(h, kvs, ctx, attends, group)
        rows, length, d = h.shape
        # one length-1 query per (row, position) over that position's N contexts
        stacked = torch.stack(contexts, dim=2).reshape(rows * length, len(contexts), d)
        k, v = self.hier.project_kv(stacked, ctx)
        y = self.hier(h.reshape(rows * length, 1, d), k, v, ctx).reshape(rows, length, d)
        return self.add(x, h, self.dropout(y))


class FlatCross(_CombinedCross):
    """``x + Drop(A(LN(x), [S_1; ...; S_N]))`` with one attention over all memories (eqs 5-6)."""

    def __init__(self, cfg: ModelConfig, hooks: HookState, name: str):
        super().__init__(cfg, hooks, name, 1)

    def memory_kv(self, memories: list[Memory], ctx: StackContext) -> Pairs:
        """One (keys, values) pair: every memory through the shared projections, joined along time."""
        attn = self.attns[0]
        pairs = [attn.project_kv(m.states, ctx, memory=m) for m in memories]
        return [(torch.cat([k for k, _ in pairs], dim=2), torch.cat([v for _, v in pairs], dim=2))]

    def forward(
        self,
        x: torch.Tensor,
        ctx: StackContext,
        memories: list[Memory],
        attends: list[torch.Tensor | None],
        cache=None,
        group: int = 1,
    ) -> torch.Tensor:
        ((k, v),) = self.keys_values(memories, ctx, cache)
        h = self.query(x)
        y = self.attns[0](h, k, v, ctx, attend=concat_attends(memories, attends), group=group)
        return self.add(x, h, self.dropout(y))


def _replace_cross(model: Transformer, make) -> None:
    for index, layer in enumerate(model.decoder_layers):
        if layer.cross_attn is None:
            continue
        block = make(f"decoder.layers.{index}.cross")
        init_plugin_parameters(block)
        layer.cross_attn = block


def install_parallel(model: Transformer, options: dict) -> None:
    _replace_cross(model, lambda name: ParallelCross(model.cfg, model.hooks, name, model.n_memories))


def install_flat(model: Transformer, options: dict) -> None:
    _replace_cross(model, lambda name: FlatCross(model.cfg, model.hooks, name))


def install_hierarchical(model: Transformer, options: dict) -> None:
    heads = options.get("hier_heads", model.cfg.n_heads)
    d = model.cfg.d_model
    if not isinstance(heads, int) or isinstance(heads, bool) or heads < 1 or d % heads:
        raise ConfigError(
            f"model.variant.multi_source.hier_heads: must be a positive divisor of d_model {d}, got {heads!r}"
        )
    _replace_cross(
        model, lambda name: HierarchicalCross(model.cfg, model.hooks, name, model.n_memories, heads)
    )
