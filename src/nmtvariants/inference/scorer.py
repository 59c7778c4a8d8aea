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
from nmtvariants.models.interfaces import AUX_PAD, SourceInputs
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
    src: torch.Tensor | SourceInputs,
    tgt_out: torch.Tensor,
    aux: Mapping[str, torch.Tensor] | None = None,
) -> torch.Tensor:
    """log p(y_t | y_<t, x) [B, T] for padded targets ``tgt_out`` (tokens + </s>); 0 at padding.

    ``src``: a bare source [B, S] (with its ``aux`` streams) or a :class:`SourceInputs`; every
    encoder runs once and the decoder attends to all memories.
    """
    tgt_in = torch.cat([torch.full_like(tgt_out[:, :1], BOS_ID), tgt_out[:, :-1]], dim=1)
    tgt_in = tgt_in.masked_fill(tgt_in.eq(EOS_ID) & tgt_out.eq(PAD_ID), PAD_ID)
    inputs = SourceInputs.of(src, aux)
    logits = model.decode(tgt_in, model.encode_inputs(inputs), aux=inputs.aux).float()
    logp = torch.log_softmax(logits, dim=-1).gather(-1, tgt_out.unsqueeze(-1)).squeeze(-1)
    return logp.masked_fill(tgt_out.eq(PAD_ID), 0.0)


Source = Sequence[int] | SourceInputs


def stack_sources(sources: Sequence[Source]) -> SourceInputs:
    """One padded batch from single sentences: id lists, or one-row :class:`SourceInputs` (sources
    [1, S_k], streams [1, S_0], features [1, R, C], unpadded); sources with PAD_ID, streams with AUX_PAD."""
    rows = [
        SourceInputs.of(torch.as_tensor([list(s)], dtype=torch.long))
        if not isinstance(s, SourceInputs)
        else s
        for s in sources
    ]
    first = rows[0]
    for row in rows:
        if row.batch_size != 1 or len(row.sources) != len(first.sources) or set(row.aux) != set(first.aux):
            raise ValueError(
                "stack_sources: every item must be one sentence with the same sources and streams"
            )
        if (row.features is None) != (first.features is None):
            raise ValueError("stack_sources: either every sentence has a feature grid or none has")

    def pad(tensors: list[torch.Tensor], value: int) -> torch.Tensor:
        width = max(t.size(1) for t in tensors)
        out = torch.full((len(tensors), width), value, dtype=torch.long, device=tensors[0].device)
        for i, t in enumerate(tensors):
            out[i, : t.size(1)] = t[0]
        return out

    return SourceInputs(
        sources=[pad([r.sources[k] for r in rows], PAD_ID) for k in range(len(first.sources))],
        aux={name: pad([r.aux[name] for r in rows], AUX_PAD) for name in first.aux},
        features=None if first.features is None else torch.cat([r.features for r in rows]),
    )


def score_pairs(
    model: Transformer,
    pairs: Iterable[tuple[Source, Sequence[int]]],
    batch_size: int = 64,
    device: str | torch.device = "cpu",
) -> list[PairScore]:
    """Score (source, candidate ids + </s>) pairs; results in input order.

    A source is its ids + </s>, or a one-sentence :class:`SourceInputs` (several sources, streams,
    features) for models with more inputs. Pairs are sorted by length into batches of ``batch_size``
    so that padding stays small.
    """
    pairs = list(pairs)
    was_training = model.training
    model.eval()
    results: list[PairScore | None] = [None] * len(pairs)

    def source_length(source: Source) -> int:
        return source.src.size(1) if isinstance(source, SourceInputs) else len(source)

    order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i][1]), source_length(pairs[i][0])))
    try:
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            src = stack_sources([pairs[i][0] for i in chunk]).to(device)
            tgt = pad_batch([pairs[i][1] for i in chunk]).to(device)
            logp = token_log_probs(model, src, tgt).cpu().tolist()
            for row, index in enumerate(chunk):
                results[index] = PairScore(logp[row][: len(pairs[index][1])])
    finally:
        model.train(was_training)
    return results  # type: ignore[return-value]
