"""Reconstruction probes (Yang et al. 2020 §3, seed brief §3.3): how much of a sentence a frozen
representation sequence still holds, as the perplexity of force-decoding it from that sequence.

The probe is a one-layer Transformer decoder (self-attention, cross-attention, FFN) built from the
project's own :class:`~nmtvariants.models.layers.DecoderLayer` and
:class:`~nmtvariants.models.embeddings.Embedder`. It treats the representation sequence
``r_1..r_T`` as its encoder memory, after a linear projection to its own width, and force-decodes
a word sequence: the source sentence or the target sentence (``tokens + </s>``, fed ``<s> + tokens``).

Target probing of decoder states needs a mask, or the probe copies the answer: the decoder state
at position t has read the decoder input up to ``y_t`` and so encodes it, while the probe at step t
must predict ``y_{t+1}``, which state ``t+1`` holds. With ``causal=True`` the memory is a
:class:`~nmtvariants.models.interfaces.Memory` whose ``attend_mask`` lets query t see memory
positions ``<= t`` only (the §3.3 suggestion, together with the usual causal self-attention). The
probe builds that mask itself and hands it to the layer, so it does not depend on how the NMT
model's decoder consumes ``Memory.causal``. By default the mask is on exactly when decoder states
are probed for the target; source probing sees the whole sequence.

Open choices (§3.3 "[unclear]"), fixed here: pre-norm with a final LayerNorm; output tied to the
probe's own embedding table (no sharing with the NMT model, which stays untouched); Adam (0.9/0.98,
eps 1e-9), a linear warm-up then inverse square root when ``warmup > 0``, else a constant rate;
early stopping with ``patience`` on the valid NLL. The suggested width is 512/8 heads/2048 with
dropout 0.1 (the defaults); toy configs pass smaller sizes.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from nmtvariants.analysis.splits import seeded, train_early_stopped
from nmtvariants.data.vocab import BOS_ID, PAD_ID
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.models.config import ModelConfig
from nmtvariants.models.embeddings import Embedder
from nmtvariants.models.hooks import HookState
from nmtvariants.models.interfaces import Memory, StackContext
from nmtvariants.models.layers import DecoderLayer
from nmtvariants.models.variants import init_plugin_parameters

STANDARD_LAYOUT = ("self", "cross", "ffn")


@dataclass
class ReconstructionConfig:
    d_model: int = 512
    n_heads: int = 8
    d_ff: int = 2048
    dropout: float = 0.1
    lr: float = 5e-4
    warmup: int = 0
    batch_sentences: int = 32
    patience: int = 3
    max_epochs: int = 50
    seed: int = 1
    device: str = "cpu"

    def model_config(self) -> ModelConfig:
        return ModelConfig(
            d_model=self.d_model,
            n_heads=self.n_heads,
            d_ff=self.d_ff,
            encoder_layers=0,
            decoder_layers=1,
            embedding_dropout=self.dropout,
            residual_dropout=self.dropout,
            attention_dropout=self.dropout,
            relu_dropout=self.dropout,
        )


@dataclass
class SequencePair:
    """One example: a representation sequence [T, d] and the token ids to decode (``tokens + </s>``)."""

    memory: np.ndarray
    target: np.ndarray


class ReconstructionProbe(nn.Module):
    """Projection of the memory, embedder, one standard decoder layer, final LayerNorm, tied output."""

    def __init__(self, d_in: int, vocab_size: int, cfg: ModelConfig):
        super().__init__()
        self.hooks = HookState()  # the probe's own: the NMT model's recorder never sees the probe
        self.project = nn.Linear(d_in, cfg.d_model)
        table = nn.Embedding(vocab_size, cfg.d_model)
        self.embed = Embedder(
            table, cfg.d_model, cfg.embedding_dropout, cfg.scale_embeddings, cfg.max_positions
        )
        self.layer = DecoderLayer(cfg, self.hooks, 0, STANDARD_LAYOUT)
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        init_plugin_parameters(self)

    def forward(
        self, memory_states: torch.Tensor, memory_pad: torch.Tensor, tgt_in: torch.Tensor, causal: bool
    ) -> torch.Tensor:
        """Logits [B, T, V] for decoder input ``tgt_in`` [B, T] reading memory [B, S, d_in] (pad [B, S])."""
        memory = Memory(self.project(memory_states), memory_pad, causal=causal)
        x = self.embed(tgt_in)
        ctx = StackContext(side="decoder", embeddings=x, history=[x])
        x = self.layer(x, ctx, [memory], [memory.attend_mask(tgt_in.size(1))])
        return F.linear(self.norm(x), self.embed.table.weight)


def collate_pairs(pairs: list[SequencePair]) -> tuple[torch.Tensor, ...]:
    """Padded memory [B, S, d], its pad mask, decoder input ``<s> + tokens`` and output ``tokens + </s>``."""
    width = max(len(p.memory) for p in pairs)
    length = max(len(p.target) for p in pairs)
    memory = np.zeros((len(pairs), width, pairs[0].memory.shape[1]), dtype=np.float32)
    pad = np.ones((len(pairs), width), dtype=bool)
    tgt_out = np.full((len(pairs), length), PAD_ID, dtype=np.int64)
    tgt_in = tgt_out.copy()
    for row, pair in enumerate(pairs):
        memory[row, : len(pair.memory)] = pair.memory
        pad[row, : len(pair.memory)] = False
        tgt_out[row, : len(pair.target)] = pair.target
        tgt_in[row, 0] = BOS_ID
        tgt_in[row, 1 : len(pair.target)] = pair.target[:-1]
    return (
        torch.from_numpy(memory),
        torch.from_numpy(pad),
        torch.from_numpy(tgt_in),
        torch.from_numpy(tgt_out),
    )


@torch.no_grad()
def evaluate(
    probe: ReconstructionProbe, pairs: list[SequencePair], causal: bool, batch: int, device: torch.device
) -> dict[str, Any]:
    """Per-token NLL, perplexity and forced-decoding accuracy over ``pairs``."""
    probe.eval()
    total, correct, tokens = 0.0, 0, 0
    for start in range(0, len(pairs), batch):
        memory, pad, tgt_in, tgt_out = (t.to(device) for t in collate_pairs(pairs[start : start + batch]))
        logits = probe(memory, pad, tgt_in, causal)
        real = tgt_out.ne(PAD_ID)
        total += float(F.cross_entropy(logits[real], tgt_out[real], reduction="sum"))
        correct += int(logits.argmax(-1)[real].eq(tgt_out[real]).sum())
        tokens += int(real.sum())
    if tokens == 0:
        return {"tokens": 0, "nll": math.nan, "perplexity": math.nan, "accuracy": math.nan}
    return {
        "tokens": tokens,
        "nll": total / tokens,
        "perplexity": math.exp(total / tokens),
        "accuracy": correct / tokens,
    }


def train_reconstruction_probe(
    train: list[SequencePair],
    valid: list[SequencePair],
    test: list[SequencePair],
    vocab_size: int,
    causal: bool,
    config: ReconstructionConfig,
) -> dict[str, Any]:
    """Train a probe on ``train``, stop on the ``valid`` NLL, report ``valid`` and ``test``."""
    if not train or not valid:
        raise InputError("probe data: the train and valid parts must hold sentences; extract more sentences")
    if config.batch_sentences < 1 or config.warmup < 0:
        raise ConfigError("batch_sentences must be positive and warmup non-negative")
    for part in (train, valid, test):
        for pair in part:
            if pair.target.min() < 0 or pair.target.max() >= vocab_size:
                raise InputError(f"probe data: token ids outside the vocabulary of {vocab_size}")
    device = torch.device(config.device)
    with seeded(config.seed, device):
        probe = ReconstructionProbe(train[0].memory.shape[1], vocab_size, config.model_config()).to(device)
        optimizer = torch.optim.Adam(probe.parameters(), lr=config.lr, betas=(0.9, 0.98), eps=1e-9)
        steps = 0

        def rate(step: int) -> float:
            if config.warmup == 0:
                return config.lr
            return config.lr * min(step / config.warmup, math.sqrt(config.warmup / step))

        def run_epoch(epoch: int) -> float:
            nonlocal steps
            probe.train()
            order = np.random.default_rng([config.seed, epoch]).permutation(len(train))
            total, tokens = 0.0, 0
            for start in range(0, len(order), config.batch_sentences):
                chosen = [train[i] for i in order[start : start + config.batch_sentences]]
                memory, pad, tgt_in, tgt_out = (t.to(device) for t in collate_pairs(chosen))
                logits = probe(memory, pad, tgt_in, causal)
                loss = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD_ID)
                steps += 1
                for group in optimizer.param_groups:
                    group["lr"] = rate(steps)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                count = int(tgt_out.ne(PAD_ID).sum())
                total += loss.item() * count
                tokens += count
            return total / tokens

        def validate() -> dict[str, float]:
            result = evaluate(probe, valid, causal, config.batch_sentences, device)
            return {"valid_nll": result["nll"], "valid_perplexity": result["perplexity"]}

        stop = train_early_stopped(
            probe, run_epoch, validate, "valid_nll", False, config.patience, config.max_epochs
        )
        return {
            "kind": "reconstruction",
            "causal": causal,
            "config": asdict(config),
            "sentences": {"train": len(train), "valid": len(valid), "test": len(test)},
            "best_epoch": stop.best_epoch,
            "epochs": stop.epochs,
            "history": stop.history,
            "valid": evaluate(probe, valid, causal, config.batch_sentences, device),
            "test": evaluate(probe, test, causal, config.batch_sentences, device) if test else None,
        }
