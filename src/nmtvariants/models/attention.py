"""Multi-head attention with two seams for the studies' variants.

* ``kv_transform`` (seam a) replaces the key/value projections. It receives the attention module, the
  usual K/V input (``hidden``: LN(x) in pre-norm self-attention, the memory in cross-attention) and the
  :class:`StackContext`, which carries the embedding-layer output E and the raw outputs of earlier
  layers; lexical shortcuts and feature-fusion (Emelin et al. eqs 5-14) gate keys and values between
  E and the previous layer through it. It returns full-width keys and values [B, S, d].
* ``score_transform`` (seam b) sees the scaled scores [B, H, Tq, Tk] before masking and softmax; PASCAL
  multiplies some heads' scores by a Gaussian of the distance to the query's parent there.

Without a score transform and without a recorder asking for weights, attention runs through
``F.scaled_dot_product_attention`` (fused kernels); otherwise, and when training with attention dropout
on CPU (where SDPA has no fused dropout kernel), through an explicit softmax.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from nmtvariants.models.dropout import dropout
from nmtvariants.models.hooks import HookState
from nmtvariants.models.interfaces import KVTransform, Memory, ScoreTransform, StackContext

if TYPE_CHECKING:
    from nmtvariants.models.decoder_cache import LayerCache

__all__ = ["KVTransform", "MultiHeadAttention", "ScoreTransform", "StackContext", "future_mask"]


# Inference with at most this many query rows per (row, head) uses two matmuls and a softmax instead of
# SDPA: on CPU the fused kernel's per-call setup dominates for one decoding step (benchmarks/decode.py).
SMALL_QUERY = 16


def future_mask(queries: int, keys: int, device: torch.device) -> torch.Tensor:
    """[queries, keys] True where a query may not look: the queries are the last ``queries`` of the
    ``keys`` positions (incremental decoding feeds only the new ones), each sees itself and the past."""
    return torch.ones(queries, keys, dtype=torch.bool, device=device).triu(1 + keys - queries)


def _matmul_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attend: torch.Tensor | None
) -> torch.Tensor:
    scores = torch.matmul(q * (1.0 / math.sqrt(q.size(-1))), k.transpose(-1, -2))
    if attend is not None:
        scores = scores.masked_fill(~attend, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)


class MultiHeadAttention(nn.Module):
    """Scaled dot-product attention over ``n_heads`` heads with Q/K/V/O projections (bias optional)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float, bias: bool, hooks: HookState, name: str):
        super().__init__()
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj: nn.Linear | None = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj: nn.Linear | None = nn.Linear(d_model, d_model, bias=bias)
        self.o_proj = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = dropout
        self.hooks = hooks
        self.name = name
        # seams: plug-ins assign modules here (see nmtvariants.models.variants)
        self.kv_transform: nn.Module | None = None
        self.score_transform: nn.Module | None = None

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, self.n_heads, self.d_head).transpose(1, 2)

    def project_kv(
        self,
        hidden: torch.Tensor,
        ctx: StackContext,
        layer_input: torch.Tensor | None = None,
        memory: Memory | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values [B, H, S, d_head] for ``hidden`` (through the seam when one is installed)."""
        if self.kv_transform is not None:
            k, v = self.kv_transform(self, hidden, ctx, layer_input=layer_input, memory=memory)
        else:
            k, v = self.k_proj(hidden), self.v_proj(hidden)
        return self.split_heads(k), self.split_heads(v)

    def forward(
        self,
        query_input: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        ctx: StackContext,
        attend: torch.Tensor | None = None,
        causal: bool = False,
        group: int = 1,
    ) -> torch.Tensor:
        """Attention output [B, Tq, d] (after W_O).

        ``attend``: boolean mask broadcastable to [B, H, Tq, Tk], True where attention is allowed.
        ``causal``: mask the future; the queries are the last positions of the keys (all of them without
        a cache; the explicit path only takes fewer queries than keys).
        ``group``: ``query_input`` has ``group`` rows per row of ``k``/``v`` (beams of one sentence);
        they are folded into the query-length axis so that the memory is never copied per beam.
        """
        q = self.split_heads(self.q_proj(query_input))
        explicit = self._needs_explicit(q.device)
        if group > 1 and explicit:  # the explicit path wants one row of keys per query row
            k, v = k.repeat_interleave(group, 0), v.repeat_interleave(group, 0)
            if attend is not None and attend.size(0) > 1:
                attend = attend.repeat_interleave(group, 0)
            group = 1
        rows, heads, length, d_head = q.shape
        if group > 1:
            q = q.view(rows // group, group, heads, length, d_head).transpose(1, 2)
            q = q.reshape(rows // group, heads, group * length, d_head)
            if attend is not None and attend.size(-2) > 1:  # per-query masks (a causal memory)
                attend = attend.repeat(1, 1, group, 1)
        if explicit:
            out = self._explicit(q, k, v, ctx, attend, causal)
        elif not self.training and q.size(-2) <= SMALL_QUERY and not causal:
            out = _matmul_attention(q, k, v, attend)
        else:
            out = F.scaled_dot_product_attention(
                q,
                k,
                v,
                attn_mask=attend,
                dropout_p=self.dropout if self.training else 0.0,
                is_causal=causal,
            )
        if group > 1:
            out = out.view(rows // group, heads, group, length, d_head).transpose(1, 2)
            out = out.reshape(rows, heads, length, d_head)
        out = out.transpose(1, 2).reshape(rows, length, self.d_model)
        return self.o_proj(out)

    def _needs_explicit(self, device: torch.device) -> bool:
        recorder = self.hooks.recorder
        return (
            self.score_transform is not None
            or (recorder is not None and recorder.attention)
            # SDPA's CPU kernels fall back to the math path with stock dropout when dropout_p > 0; the
            # explicit path computes the same with the cheaper CPU mask of models.dropout
            or (self.training and self.dropout > 0 and device.type == "cpu")
        )

    def attend_cached(
        self,
        query_input: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        cache: LayerCache,
        ctx: StackContext,
    ) -> torch.Tensor:
        """Incremental self-attention: store the new positions' keys/values [rows, H, T, d_head] in
        ``cache`` and attend from the new positions over every earlier one of the same hypothesis."""
        cache.append(k, v)
        if self._needs_explicit(query_input.device):  # seams and recorders see per-row keys
            keys, values = cache.row_keys_values()
            return self(query_input, keys, values, ctx, causal=True)  # the explicit path
        q = self.split_heads(self.q_proj(query_input))
        out = cache.attend(q)
        rows, _, length, _ = out.shape
        return self.o_proj(out.transpose(1, 2).reshape(rows, length, self.d_model))

    def _explicit(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        ctx: StackContext,
        attend: torch.Tensor | None,
        causal: bool,
    ) -> torch.Tensor:
        scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.d_head))
        if self.score_transform is not None:
            scores = self.score_transform(scores, ctx, self)
        if causal:
            scores = scores.masked_fill(future_mask(*scores.shape[-2:], scores.device), float("-inf"))
        if attend is not None:
            scores = scores.masked_fill(~attend, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        recorder = self.hooks.recorder
        if recorder is not None and recorder.attention:
            recorder.put(f"{self.name}.weights", weights)
        weights = dropout(weights, self.dropout, self.training)
        return torch.matmul(weights, v)
