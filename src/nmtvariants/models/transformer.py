"""The one encoder-decoder Transformer that every study's variant plugs into.

``forward(src, tgt_in)`` gives logits for teacher forcing; ``encode`` and ``decode`` are separate so that
beam search encodes once and decodes step by step with a :class:`DecoderCache` (self-attention keys and
values appended per step and never reordered, cross-attention keys and values computed once per
memory; see models/decoder_cache.py). Sequences are
right-padded with PAD_ID; sources are ``tokens + </s>``, decoder inputs ``<s> + tokens``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from nmtvariants.data.vocab import PAD_ID
from nmtvariants.models.config import ModelConfig
from nmtvariants.models.decoder_cache import DecoderCache
from nmtvariants.models.embeddings import Embedder
from nmtvariants.models.hooks import HookState
from nmtvariants.models.interfaces import AuxLosses, Memory, SourceInputs, StackContext
from nmtvariants.models.layers import DecoderLayer, EncoderLayer
from nmtvariants.models.variants import decoder_layout, init_plugin_parameters, multi_source

PROJECTION_BLOCK = 1024


class Transformer(nn.Module):
    """Encoder-decoder Transformer; see :class:`ModelConfig` for the switches."""

    def __init__(self, cfg: ModelConfig, vocab_size: int):
        super().__init__()
        self.cfg = cfg
        self.vocab_size = vocab_size
        self.hooks = HookState()
        self.aux_losses = AuxLosses()
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
        init_plugin_parameters(self)

    # ------------------------------------------------------------------ encoder
    def encode(self, src: torch.Tensor, aux: Mapping[str, torch.Tensor] | None = None) -> Memory:
        """Encode ``src`` [B, S] (tokens + </s>, right-padded with PAD_ID) into a :class:`Memory`."""
        pad_mask = src.eq(PAD_ID)
        x = self.src_embed(src, aux=aux)
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

    def encode_inputs(self, inputs: SourceInputs | torch.Tensor) -> list[Memory]:
        """One :class:`Memory` per encoder for a batch's :class:`SourceInputs` (or a bare source)."""
        inputs = SourceInputs.of(inputs)
        if len(inputs.sources) != 1 or inputs.features is not None:
            raise ValueError(
                f"this model has one text encoder and no feature encoder; got {len(inputs.sources)} "
                f"source(s){' and features' if inputs.features is not None else ''}"
            )
        return [self.encode(inputs.src, inputs.aux)]

    # ------------------------------------------------------------------ decoder
    def new_cache(self, group: int = 1) -> DecoderCache:
        return DecoderCache.for_layers(len(self.decoder_layers), group=group)

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
        if cache is not None:
            cache.advance(tgt_in.size(0), tgt_in.size(1), tgt_in.device)
        x = self.tgt_embed(tgt_in, offset)
        recorder = self.hooks.recorder
        if recorder is not None:
            recorder.put("decoder.embeddings", x)
        ctx = StackContext(side="decoder", embeddings=x, aux=aux or {}, history=[x], offset=offset)
        attends = [m.attend_mask(tgt_in.size(1), offset) for m in memories]
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
