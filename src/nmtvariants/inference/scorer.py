"""Forced decoding: the model's log-probability of given translations, batched.

Used for ContraWSD (the reference must outscore every contrastive translation), reranking and
held-out perplexity. Scores are plain log-softmax probabilities (no label smoothing), summed or averaged
over the target tokens *including* </s>.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import torch

from nmtvariants.data.vocab import BOS_ID, EOS_ID, PAD_ID
from nmtvariants.models.transformer import Transformer


@dataclass
class PairScore:
    """Per-token log-probabilities of one candidate (its tokens, then </s>)."""

    token_log_probs: list[float]

    @property
    def sum(self) -> float:
        return float(sum(self.token_log_probs))

    @property
    def mean(self) -> float:
        return self.sum / len(self.token_log_probs)


def pad_batch(sequences: Sequence[Sequence[int]], front: int | None = None) -> torch.Tensor:
    """Right-pad id lists with PAD_ID (optionally prefixing ``front``) into a LongTensor [B, T]."""
    extra = 0 if front is None else 1
    width = max(len(s) for s in sequences) + extra
    out = torch.full((len(sequences), width), PAD_ID, dtype=torch.long)
    for row, seq in enumerate(sequences):
        if front is not None:
            out[row, 0] = front
        if seq:
            out[row, extra : extra + len(seq)] = torch.as_tensor(list(seq), dtype=torch.long)
    return out


@torch.inference_mode()
def token_log_probs(
    model: Transformer,
    src: torch.Tensor,
    tgt_out: torch.Tensor,
    aux: Mapping[str, torch.Tensor] | None = None,
) -> torch.Tensor:
    """log p(y_t | y_<t, x) [B, T] for padded targets ``tgt_out`` (tokens + </s>); 0 at padding."""
    tgt_in = torch.cat([torch.full_like(tgt_out[:, :1], BOS_ID), tgt_out[:, :-1]], dim=1)
    tgt_in = tgt_in.masked_fill(tgt_in.eq(EOS_ID) & tgt_out.eq(PAD_ID), PAD_ID)
    logits = model(src, tgt_in, aux=aux).float()
    logp = torch.log_softmax(logits, dim=-1).gather(-1, tgt_out.unsqueeze(-1)).squeeze(-1)
    return logp.masked_fill(tgt_out.eq(PAD_ID), 0.0)


def score_pairs(
    model: Transformer,
    pairs: Iterable[tuple[Sequence[int], Sequence[int]]],
    batch_size: int = 64,
    device: str | torch.device = "cpu",
) -> list[PairScore]:
    """Score (source ids + </s>, candidate ids + </s>) pairs; results in input order.

    Pairs are sorted by length into batches of ``batch_size`` so that padding stays small.
    """
    pairs = list(pairs)
    was_training = model.training
    model.eval()
    results: list[PairScore | None] = [None] * len(pairs)
    order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i][1]), len(pairs[i][0])))
    try:
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            src = pad_batch([pairs[i][0] for i in chunk]).to(device)
            tgt = pad_batch([pairs[i][1] for i in chunk]).to(device)
            logp = token_log_probs(model, src, tgt).cpu().tolist()
            for row, index in enumerate(chunk):
                results[index] = PairScore(logp[row][: len(pairs[index][1])])
    finally:
        model.train(was_training)
    return results  # type: ignore[return-value]
