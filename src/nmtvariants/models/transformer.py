"""The one encoder-decoder Transformer that every study's variant plugs into.

``forward(src, tgt_in)`` gives logits for teacher forcing (``src``: a source [B, S] or a
:class:`SourceInputs`); ``encode_inputs`` runs every encoder once (text sources in order, then the
feature grid; models/encoders.py) and returns one :class:`Memory` each; ``decode`` attends to them.
Encoding and decoding are separate so that beam search encodes once and decodes step by step with a
:class:`DecoderCache` (self-attention keys and values appended per step and never reordered,
cross-attention keys and values computed once per memory; see models/decoder_cache.py). Sequences are
right-padded with PAD_ID; sources are ``tokens + </s>``, decoder inputs ``<s> + tokens``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from nmtvariants.errors import InputError
from nmtvariants.models.config import ModelConfig
from nmtvariants.models.decoder_cache import DecoderCache
from nmtvariants.models.embeddings import Embedder
from nmtvariants.models.encoders import FeatureEncoder, TextEncoder, run_text_encoder
from nmtvariants.models.hooks import HookState
from nmtvariants.models.interfaces import AuxLosses, Memory, SourceInputs, StackContext
from nmtvariants.models.layers import DecoderLayer, EncoderLayer
from nmtvariants.models.variants import decoder_layout, init_plugin_parameters, multi_source



class Transformer(nn.Module):
    """Encoder-decoder Transformer; see :class:`ModelConfig` for the switches."""

    def __init__(self, cfg: ModelConfig, vocab_size: int):
        super().__init__()
        self.cfg = cfg
        self.vocab_size = vocab_size
        self.hooks = HookState()
        self.aux_losses = AuxLosses()
        layout = decoder_layout(cfg.variant)
        self.multi_source = multi_source(cfg.variant, cfg.encoder_layers)
        self.n_memories = self.multi_source.memories
        d = cfg.d_model
        tgt_table = nn.Embedding(vocab_size, d)
        src_table = tgt_table if cfg.share_embeddings == "all" else nn.Embedding(vocab_size, d)
        self.src_embed = Embedder(
            src_table, d, cfg.embedding_dropout, cfg.scale_embeddings, cfg.max_positions
        )
        self.tgt_embed = Embedder(
            tgt_table, d, cfg.embedding_dropout, cfg.scale_embeddings, cfg.max_positions
        )
        # the first source's encoder keeps the single-source names; further ones are TextEncoders
        depths = self.multi_source.encoder_layers
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg, self.hooks, i) for i in range(depths[0]))
        own = [] if self.multi_source.share_encoders else depths[1:]
        self.source_encoders = nn.ModuleList(
            TextEncoder(cfg, self.hooks, depth, f"encoder{k}") for k, depth in enumerate(own, start=1)
        )
        channels = self.multi_source.feature_channels
        self.feature_encoder = (
            None
            if channels is None
            else FeatureEncoder(
                channels, d, self.hooks, cfg.layer_norm_eps, self.multi_source.feature_layer_norm
            )
        )
        self.decoder_layers = nn.ModuleList(
            DecoderLayer(cfg, self.hooks, i, layout, self.n_memories) for i in range(cfg.decoder_layers)
        )
        final = cfg.norm == "pre" and cfg.final_norm
        self.encoder_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps) if final else None
        self.decoder_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps) if final else None
        self.output_projection = (
            None if cfg.share_embeddings in ("all", "decoder") else nn.Linear(d, vocab_size, bias=False)
        )
        # seam: an int8 copy of the output projection for CPU decoding (inference/precision.py); the
        # float weight stays, because the embeddings and the training objective read it
        self.quantized_projection: nn.Module | None = None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot-uniform weights, zero biases, LayerNorm gain 1 (Emelin et al.'s initialisation)."""
        init_plugin_parameters(self)

    # ------------------------------------------------------------------ encoder
    def encode(
        self, src: torch.Tensor, aux: Mapping[str, torch.Tensor] | None = None, source: int = 0
    ) -> Memory:
        """Encode ``src`` [B, S] (tokens + </s>, right-padded with PAD_ID) with text encoder ``source``.

        ``aux`` streams are aligned with the first source; the other sources' encoders get none.
        """
        count = self.multi_source.sources
        if not 0 <= source < count:
            raise ValueError(f"this model has {count} text encoder(s), asked for encoder {source}")
        if source == 0 or self.multi_source.share_encoders:
            layers, norm = self.encoder_layers, self.encoder_norm
        else:
            encoder = self.source_encoders[source - 1]
            layers, norm = encoder.layers, encoder.norm
        prefix = "encoder" if source == 0 else f"encoder{source}"
        streams = (aux or {}) if source == 0 else {}
        return run_text_encoder(self.src_embed, layers, norm, self.hooks, src, streams, prefix)

    def encode_inputs(self, inputs: SourceInputs | torch.Tensor) -> list[Memory]:
        """One :class:`Memory` per encoder: the text sources in order, then the feature grid."""
        inputs = SourceInputs.of(inputs)
        self.check_inputs(inputs)
        memories = [self.encode(src, inputs.aux, k) for k, src in enumerate(inputs.sources)]
        if self.feature_encoder is not None:
            memories.append(self.feature_encoder(inputs.features))
        return memories

    def check_inputs(self, inputs: SourceInputs) -> None:
        """InputError unless ``inputs`` has the sources and features this model's encoders read."""
        expected = self.multi_source.sources
        if len(inputs.sources) != expected:
            raise InputError(
                f"model inputs: this model has {expected} text encoder(s) (multi_source.sources) but the "
                f"batch has {len(inputs.sources)} source sequence(s); give one source file per encoder"
            )
        rows = inputs.batch_size
        for k, src in enumerate(inputs.sources):
            if src.dim() != 2 or src.size(0) != rows:
                raise InputError(
                    f"model inputs: source {k} has shape {list(src.shape)}, expected [{rows}, length] "
                    "like source 0; every source needs one line per sentence"
                )
        for name, stream in inputs.aux.items():
            if stream.shape != inputs.src.shape:
                raise InputError(
                    f"model inputs: stream {name!r} has shape {list(stream.shape)}, expected "
                    f"{list(inputs.src.shape)} (one value per token of source 0, padded with AUX_PAD)"
                )
        if self.feature_encoder is None:
            if inputs.features is not None:
                raise InputError(
                    "model inputs: the batch has a feature grid but this model has no feature encoder "
                    "(multi_source.features); drop the features or use a model built with them"
                )
        elif inputs.features is None:
            raise InputError(
                f"model inputs: this model's feature encoder needs a feature grid [batch, regions, "
                f"{self.feature_encoder.channels}]; give the features file"
            )
        elif inputs.features.size(0) != rows:
            raise InputError(
                f"model inputs: the feature grid has {inputs.features.size(0)} rows for {rows} sentences; "
                "give one feature row per sentence"
            )

    # ------------------------------------------------------------------ decoder
    def new_cache(self, group: int = 1, positions: int = 0) -> DecoderCache:
        return DecoderCache.for_layers(len(self.decoder_layers), group=group, positions=positions)

    def decode_states(
        self,
        tgt_in: torch.Tensor,
        memory: Memory | Sequence[Memory],
        cache: DecoderCache | None = None,
        aux: Mapping[str, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """Decoder output states [B, T, d] (before the output projection)."""
        memories = [memory] if isinstance(memory, Memory) else list(memory)
        if len(memories) != self.n_memories:
            raise ValueError(f"this model attends to {self.n_memories} memories, got {len(memories)}")
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

        One product, also in CPU inference: taking it in blocks of 1,024 vocabulary rows (each block
        of the table staying in cache) was ~10% faster on MKL's generic path, but with its AVX-512
        kernels (``mkl_dispatch``) one product is 0-6% faster per beam search (small model, 8,004
        types, four interleaved rounds on a Zen 4 core, 2026-11-27) and needs no concatenation.
        A model quantised to int8 (``translate --dtype int8``) projects through its int8 copy.
        """
        if self.quantized_projection is not None:
            return self.quantized_projection(states)
        return F.linear(states, self.output_weight)

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
        self,
        src: torch.Tensor | SourceInputs,
        tgt_in: torch.Tensor,
        aux: Mapping[str, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """Teacher-forced logits for a bare source [B, S] (with ``aux``) or a :class:`SourceInputs`."""
        inputs = SourceInputs.of(src, aux)
        return self.decode(tgt_in, self.encode_inputs(inputs), aux=inputs.aux)
