"""The one encoder-decoder Transformer that every study's variant plugs into.

``forward(src, tgt_in)`` gives logits for teacher forcing; ``encode`` and ``decode`` are separate so that
beam search encodes once and decodes step by step with a :class:`DecoderCache` (self-attention keys and
values appended per step, cross-attention keys and values computed once per memory). Sequences are
right-padded with PAD_ID; sources are ``tokens + </s>``, decoder inputs ``<s> + tokens``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from nmtvariants.data.vocab import PAD_ID
from nmtvariants.models.attention import StackContext
from nmtvariants.models.config import ModelConfig
from nmtvariants.models.embeddings import Embedder
from nmtvariants.models.hooks import HookState
from nmtvariants.models.layers import DecoderLayer, EncoderLayer
from nmtvariants.models.variants import decoder_layout, multi_source

PROJECTION_BLOCK = 1024


@dataclass
class Memory:
    """What the decoder attends to: encoder states [B, S, d] and a padding mask [B, S] (True at pads).

    ``embeddings`` keeps the encoder's embedding-layer output for variants that attend to it
    (dec-to-enc lexical shortcuts).
    """

    states: torch.Tensor
    pad_mask: torch.Tensor
    embeddings: torch.Tensor | None = None

    def index_select(self, index: torch.Tensor) -> Memory:
        return Memory(
            self.states.index_select(0, index),
            self.pad_mask.index_select(0, index),
            None if self.embeddings is None else self.embeddings.index_select(0, index),
        )

    def repeat_interleave(self, repeats: int) -> Memory:
        return Memory(
            self.states.repeat_interleave(repeats, 0),
            self.pad_mask.repeat_interleave(repeats, 0),
            None if self.embeddings is None else self.embeddings.repeat_interleave(repeats, 0),
        )


class LayerCache:
    """One decoder layer's cached self-attention K/V and per-memory cross-attention K/V.

    Self-attention keys and values live in time-major buffers [capacity, rows, H, d_head] that grow by
    doubling: appending a step writes one contiguous slice, and beam reordering is a single
    ``index_select`` into a spare buffer (no concatenation, no per-step reallocation). Attention reads
    the filled part as a strided [rows, H, t, d_head] view.
    """

    def __init__(self) -> None:
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None
        self._spare: tuple[torch.Tensor, torch.Tensor] | None = None
        self.length = 0
        self.cross: list[tuple[torch.Tensor, torch.Tensor]] | None = None

    def append_self(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append new keys/values [rows, H, T, d_head]; return all cached ones (same layout)."""
        new = k.size(2)
        end = self.length + new
        if self.k is None or end > self.k.size(0):
            capacity = max(end, 2 * (0 if self.k is None else self.k.size(0)), 16)
            shape = (capacity, k.size(0), k.size(1), k.size(3))
            grown_k, grown_v = k.new_empty(shape), v.new_empty(shape)
            if self.k is not None:
                grown_k[: self.length] = self.k[: self.length]
                grown_v[: self.length] = self.v[: self.length]
            self.k, self.v, self._spare = grown_k, grown_v, None
        self.k[self.length : end] = k.permute(2, 0, 1, 3)
        self.v[self.length : end] = v.permute(2, 0, 1, 3)
        self.length = end
        return self.k[:end].permute(1, 2, 0, 3), self.v[:end].permute(1, 2, 0, 3)

    def reorder(self, index: torch.Tensor) -> None:
        if self.k is None:
            return
        n = self.length
        if index.numel() != self.k.size(1):  # fewer rows (finished sentences dropped): new buffers
            self.k, self.v = self.k.index_select(1, index), self.v.index_select(1, index)
            self._spare = None
            return
        if self._spare is None:
            self._spare = (torch.empty_like(self.k), torch.empty_like(self.v))
        spare_k, spare_v = self._spare
        torch.index_select(self.k[:n], 1, index, out=spare_k[:n])
        torch.index_select(self.v[:n], 1, index, out=spare_v[:n])
        self._spare = (self.k, self.v)
        self.k, self.v = spare_k, spare_v


@dataclass
class DecoderCache:
    """State of incremental decoding: feed only new positions to ``Transformer.decode``.

    ``group``: decoder rows per memory row. Beam search keeps the memory (and its cross-attention K/V)
    at one row per sentence and sets ``group`` to the beam size; the beams of a sentence are adjacent.
    """

    layers: list[LayerCache] = field(default_factory=list)
    position: int = 0
    group: int = 1

    def reorder(self, index: torch.Tensor) -> None:
        """Select decoder rows (beam reordering): self-attention caches follow ``index``."""
        for layer in self.layers:
            layer.reorder(index)

    def select_memory(self, index: torch.Tensor) -> None:
        """Select memory rows (dropping finished sentences): cross-attention K/V follow ``index``."""
        for layer in self.layers:
            if layer.cross is not None:
                layer.cross = [(k.index_select(0, index), v.index_select(0, index)) for k, v in layer.cross]


class Transformer(nn.Module):
    """Encoder-decoder Transformer; see :class:`ModelConfig` for the switches."""

    def __init__(self, cfg: ModelConfig, vocab_size: int):
        super().__init__()
        self.cfg = cfg
        self.vocab_size = vocab_size
        self.hooks = HookState()
        layout = decoder_layout(cfg.variant)
        _, n_sources = multi_source(cfg.variant)
        self.n_sources = n_sources
        d = cfg.d_model
        tgt_table = nn.Embedding(vocab_size, d)
        src_table = tgt_table if cfg.share_embeddings == "all" else nn.Embedding(vocab_size, d)
        self.src_embed = Embedder(
            src_table, d, cfg.embedding_dropout, cfg.scale_embeddings, cfg.max_positions
        )
        self.tgt_embed = Embedder(
            tgt_table, d, cfg.embedding_dropout, cfg.scale_embeddings, cfg.max_positions
        )
        self.encoder_layers = nn.ModuleList(
            EncoderLayer(cfg, self.hooks, i) for i in range(cfg.encoder_layers)
        )
        self.decoder_layers = nn.ModuleList(
            DecoderLayer(cfg, self.hooks, i, layout, n_sources) for i in range(cfg.decoder_layers)
        )
        final = cfg.norm == "pre" and cfg.final_norm
        self.encoder_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps) if final else None
        self.decoder_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps) if final else None
        self.output_projection = (
            None if cfg.share_embeddings in ("all", "decoder") else nn.Linear(d, vocab_size, bias=False)
        )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot-uniform weights, zero biases, LayerNorm gain 1 (Emelin et al.'s initialisation)."""
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.xavier_uniform_(module.weight)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)

    # ------------------------------------------------------------------ encoder
    def encode(self, src: torch.Tensor, aux: Mapping[str, torch.Tensor] | None = None) -> Memory:
        """Encode ``src`` [B, S] (tokens + </s>, right-padded with PAD_ID) into a :class:`Memory`."""
        pad_mask = src.eq(PAD_ID)
        x = self.src_embed(src)
        recorder = self.hooks.recorder
        if recorder is not None:
            recorder.put("encoder.embeddings", x)
        ctx = StackContext(side="encoder", embeddings=x, aux=aux or {}, history=[x], pad_mask=pad_mask)
        attend = ~pad_mask[:, None, None, :]
        for index, layer in enumerate(self.encoder_layers):
            ctx.layer = index
            x = layer(x, ctx, attend)
            ctx.history.append(x)
            if recorder is not None:
                recorder.put(f"encoder.layers.{index}", x)
        if self.encoder_norm is not None:
            x = self.encoder_norm(x)
        if recorder is not None:
            recorder.put("encoder.output", x)
        return Memory(states=x, pad_mask=pad_mask, embeddings=ctx.embeddings)

    # ------------------------------------------------------------------ decoder
    def new_cache(self, group: int = 1) -> DecoderCache:
        return DecoderCache(layers=[LayerCache() for _ in self.decoder_layers], group=group)

    def decode_states(
        self,
        tgt_in: torch.Tensor,
        memory: Memory | Sequence[Memory],
        cache: DecoderCache | None = None,
        aux: Mapping[str, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """Decoder output states [B, T, d] (before the output projection)."""
        memories = [memory] if isinstance(memory, Memory) else list(memory)
        if len(memories) != self.n_sources:
            raise ValueError(f"this model attends to {self.n_sources} memories, got {len(memories)}")
        offset = cache.position if cache is not None else 0
        group = cache.group if cache is not None else 1
        x = self.tgt_embed(tgt_in, offset)
        recorder = self.hooks.recorder
        if recorder is not None:
            recorder.put("decoder.embeddings", x)
        ctx = StackContext(side="decoder", embeddings=x, aux=aux or {}, history=[x], offset=offset)
        attends = [~m.pad_mask[:, None, None, :] for m in memories]
        for index, layer in enumerate(self.decoder_layers):
            ctx.layer = index
            layer_cache = cache.layers[index] if cache is not None else None
            x = layer(x, ctx, memories, attends, cache=layer_cache, group=group)
            ctx.history.append(x)
            if recorder is not None:
                recorder.put(f"decoder.layers.{index}", x)
        if self.decoder_norm is not None:
            x = self.decoder_norm(x)
        if recorder is not None:
            recorder.put("decoder.output", x)
        if cache is not None:
            cache.position = offset + tgt_in.size(1)
        return x

    @property
    def output_weight(self) -> torch.Tensor:
        """The output projection's [V, d] weight: the target embedding table when tied."""
        table = self.output_projection if self.output_projection is not None else self.tgt_embed.table
        return table.weight

    def project(self, states: torch.Tensor) -> torch.Tensor:
        """Output logits [.., V]: the transposed target embedding table when tied.

        In inference on CPU the product is taken in blocks of PROJECTION_BLOCK vocabulary rows, each
        block of the table small enough to stay in cache while all states stream past it
        (benchmarks/decode.py: ~10% faster beam search on the small model); training uses one GEMM.
        """
        weight = self.output_weight
        if self.training or states.is_cuda or weight.size(0) <= 2 * PROJECTION_BLOCK:
            return F.linear(states, weight)
        blocks = [
            F.linear(states, weight[s : s + PROJECTION_BLOCK])
            for s in range(0, weight.size(0), PROJECTION_BLOCK)
        ]
        return torch.cat(blocks, dim=-1)

    def decode(
        self,
        tgt_in: torch.Tensor,
        memory: Memory | Sequence[Memory],
        cache: DecoderCache | None = None,
        aux: Mapping[str, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """Logits [B, T, V] for decoder input ``tgt_in`` [B, T].

        With a ``cache``, ``tgt_in`` holds only the new position(s); earlier ones come from the cache.
        """
        return self.project(self.decode_states(tgt_in, memory, cache, aux))

    def forward(
        self, src: torch.Tensor, tgt_in: torch.Tensor, aux: Mapping[str, torch.Tensor] | None = None
    ) -> torch.Tensor:
        return self.decode(tgt_in, self.encode(src, aux), aux=aux)
