"""Batched beam search with incremental decoding.

The algorithm is fairseq's, stated exactly so that a naive per-sentence implementation can reproduce it
(tests/test_beam_search.py does):

1. Every sentence starts with one live hypothesis ``<s>`` (score 0). At step t (t tokens generated so far)
   each live hypothesis is extended by every token except <pad> and <s>; </s> is banned while
   ``t < min_len`` and is the only choice once ``t == max_len`` (``max_len = int(a * src_len + b)``,
   ``src_len`` without </s>). A candidate's score is the sum of token log-probabilities.
2. Take the 2K best candidates of the sentence (K = beam size), best first, dropping -inf ones. Walking
   them in order, a </s> candidate among the first K is *finished* (with its length-normalised score)
   as long as the sentence has fewer than K finished hypotheses; the first K non-</s> candidates become
   the live hypotheses of the next step.
3. A sentence is done when it has K finished hypotheses or after its forced </s> step. Its n best
   finished hypotheses by normalised score (ties: first finished first) are returned.

Length normalisation of a hypothesis with L tokens (including </s>) and log-probability s:
``gnmt``: s / ((5 + L) / 6) ** alpha (Wu et al. 2016); ``average``: s / L; ``none``: s.

Inputs: a bare source [B, S] or a :class:`SourceInputs` (several sources, per-token streams, a feature
grid); the length cap counts the first source. Every encoder runs once per batch and yields one memory;
the per-token streams reach the decoder with one row per hypothesis (the K beams of a sentence share
its rows), and memories, streams and search state drop finished sentences together.

Speed: the encoder runs once per batch; the memories and their cross-attention keys/values stay at one
row per sentence (the K beams are folded into the query axis); self-attention keys/values are cached
per layer and never moved (beam selection reorders an ancestry table, models/decoder_cache.py);
of each beam's logits only its 2K best tokens and its log-normaliser are taken, in one pass that
writes no [rows, V] log-softmax (inference/vocab_topk.py); finished-hypothesis bookkeeping is
tensor arithmetic, with one host synchronisation per step (to stop and to drop finished sentences
from the batch).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from nmtvariants.data.vocab import BOS_ID, EOS_ID, PAD_ID
from nmtvariants.errors import ConfigError
from nmtvariants.inference.defaults import BEAM_SIZE, MAX_LEN_A, MAX_LEN_B
from nmtvariants.inference.vocab_topk import top_log_probs
from nmtvariants.models.interfaces import SourceInputs
from nmtvariants.models.transformer import Transformer

LENGTH_NORMS = ("gnmt", "average", "none")


@dataclass
class Hypothesis:
    """One finished translation: token ids without </s>, its normalised score and raw log-probability."""

    tokens: list[int]
    score: float
    log_prob: float


def length_penalty(length: torch.Tensor | float, kind: str, alpha: float) -> torch.Tensor | float:
    """The divisor of a hypothesis' log-probability; ``length`` counts tokens including </s>."""
    if kind == "gnmt":
        return ((5.0 + length) / 6.0) ** alpha
    if kind == "average":
        return length
    if kind == "none":
        return 1.0 if not isinstance(length, torch.Tensor) else torch.ones_like(length)
    raise ConfigError(f"length normalisation must be one of {', '.join(LENGTH_NORMS)}, got {kind!r}")


def max_lengths(src: torch.Tensor, a: float, b: float) -> torch.Tensor:
    """Per-sentence cap on output tokens (without </s>): ``int(a * src_len + b)``, src_len without </s>."""
    src_len = src.ne(PAD_ID).sum(1) - 1
    return (src_len.double() * a + b).floor().clamp(min=0).long()


@torch.inference_mode()
def beam_search(
    model: Transformer,
    src: torch.Tensor | SourceInputs,
    beam_size: int = BEAM_SIZE,
    length_norm: str = "gnmt",
    alpha: float = 0.6,
    max_len_a: float = MAX_LEN_A,
    max_len_b: float = MAX_LEN_B,
    nbest: int = 1,
    min_len: int = 0,
    aux: Mapping[str, torch.Tensor] | None = None,
) -> list[list[Hypothesis]]:
    """Translate a padded batch ``src`` [B, S] (``aux``: its streams) or a :class:`SourceInputs`;
    returns ``nbest`` hypotheses per sentence, best first."""
    if beam_size < 1 or not 1 <= nbest <= beam_size:
        raise ConfigError(f"need beam >= 1 and 1 <= nbest <= beam (got beam {beam_size}, nbest {nbest})")
    length_penalty(1.0, length_norm, alpha)  # validates the kind
    was_training = model.training
    model.eval()
    try:
        inputs = SourceInputs.of(src, aux)
        return _search(model, inputs, beam_size, length_norm, alpha, max_len_a, max_len_b, nbest, min_len)
    finally:
        model.train(was_training)


def _search(
    model: Transformer,
    inputs: SourceInputs,
    k: int,
    length_norm: str,
    alpha: float,
    max_len_a: float,
    max_len_b: float,
    nbest: int,
    min_len: int,
) -> list[list[Hypothesis]]:
    src = inputs.src
    device = src.device
    batch = src.size(0)
    vocab = model.vocab_size
    results: list[list[Hypothesis]] = [[] for _ in range(batch)]
    if batch == 0:
        return results
    memories = model.encode_inputs(inputs)
    # the decoder's streams: one row per hypothesis, the k beams of sentence i at rows i*k .. i*k+k-1
    aux = {name: stream.repeat_interleave(k, 0) for name, stream in inputs.aux.items()}
    limit = max_lengths(src, max_len_a, max_len_b)  # [B]
    steps = int(limit.max()) + 1
    cache = model.new_cache(group=k, positions=steps)
    alive = torch.arange(batch, device=device)  # original index of each live sentence

    tokens = torch.full((batch * k, steps + 1), PAD_ID, dtype=torch.long, device=device)
    tokens[:, 0] = BOS_ID
    scores = torch.full((batch, k), float("-inf"), device=device)
    scores[:, 0] = 0.0
    # finished hypotheses per live sentence; slot k is a sink for candidates that are not taken
    fin_tokens = torch.full((batch, k + 1, steps + 1), PAD_ID, dtype=torch.long, device=device)
    fin_norm = torch.full((batch, k + 1), float("-inf"), device=device)
    fin_logp = torch.full((batch, k + 1), float("-inf"), device=device)
    fin_count = torch.zeros(batch, dtype=torch.long, device=device)

    n_cand = min(2 * k, k * vocab)
    per_beam = min(n_cand, vocab)  # a sentence's n_cand best are among each of its beams' per_beam best
    rank = torch.arange(n_cand, device=device)
    beam_offsets = torch.arange(batch, device=device)[:, None] * k
    neg_inf = torch.tensor(float("-inf"), device=device)
    min_limit = int(limit.min())  # before this step no sentence is forced to end (host-side schedule)

    for t in range(steps):
        live = alive.numel()
        logits = model.decode(tokens[:, t : t + 1], memories, cache, aux)[:, 0].float()
        # each beam's best continuations, as log-probabilities (vocab_topk: one pass, no [rows, V] copy)
        banned = (PAD_ID, BOS_ID, EOS_ID) if t < min_len else (PAD_ID, BOS_ID)
        best, best_token, normaliser = top_log_probs(logits, per_beam, banned)
        cand = best.view(live, k, per_beam).add_(scores[:, :, None])
        best_token = best_token.view(live, k, per_beam)
        forced = None
        if t >= min_limit:
            forced = limit <= t  # [live]: these sentences end here, with </s> (even before min_len)
            eos = (logits[:, EOS_ID] - normaliser).view(live, k) + scores
            cand.masked_fill_(forced[:, None, None], float("-inf"))
            cand[:, :, 0] = torch.where(forced[:, None], eos, cand[:, :, 0])
            best_token[:, :, 0].masked_fill_(forced[:, None], EOS_ID)
        top_scores, top_index = cand.view(live, k * per_beam).topk(n_cand, dim=1)
        top_beam = top_index // per_beam
        top_token = best_token.view(live, k * per_beam).gather(1, top_index)
        is_eos = top_token == EOS_ID
        finite = top_scores > float("-inf")

        # finish </s> candidates among the first k, up to k finished per sentence
        take = is_eos & finite & (rank < k)
        slot = fin_count[:, None] + take.long().cumsum(1) - 1
        take = take & (slot < k)
        slot = torch.where(take, slot, k)
        length = t + 1
        norm = top_scores / length_penalty(float(length), length_norm, alpha)
        fin_norm.scatter_(1, slot, torch.where(take, norm, neg_inf))
        fin_logp.scatter_(1, slot, top_scores)
        history = tokens.index_select(0, (beam_offsets + top_beam).view(-1))[:, : length + 1]
        history = history.view(live, n_cand, length + 1).clone()
        history[:, :, length] = EOS_ID
        fin_tokens[:, :, : length + 1].scatter_(1, slot[:, :, None].expand(-1, -1, length + 1), history)
        fin_count = fin_count + take.long().sum(1)

        # the first k non-</s> candidates live on (there are always k: at most k candidates are </s>)
        order = (is_eos.long() * n_cand + rank).argsort(dim=1)[:, :k]
        scores = top_scores.gather(1, order)
        rows = (beam_offsets + top_beam.gather(1, order)).view(-1)
        next_token = top_token.gather(1, order).view(-1)

        done = (fin_count >= k) | (scores[:, 0] == float("-inf"))
        if forced is not None:
            done |= forced
        n_done = int(done.sum())
        if n_done == live:
            _collect(
                results,
                alive,
                torch.arange(live, device=device),
                fin_tokens,
                fin_norm,
                fin_logp,
                fin_count,
                nbest,
            )
            break
        if n_done:
            finished = done.nonzero().squeeze(1)
            _collect(results, alive, finished, fin_tokens, fin_norm, fin_logp, fin_count, nbest)
            keep = (~done).nonzero().squeeze(1)
            # renumber the surviving rows: sentence j of the kept ones owns rows j*k .. j*k+k-1
            beam_offsets = beam_offsets[: keep.numel()]
            rows = (beam_offsets + rows.view(live, k).index_select(0, keep) % k).view(-1)
            tokens = tokens.view(live, k, -1).index_select(0, keep).view(keep.numel() * k, -1)
            next_token = next_token.view(live, k).index_select(0, keep).view(-1)
            scores = scores.index_select(0, keep)
            memories = [memory.index_select(keep) for memory in memories]
            kept_rows = (keep[:, None] * k + torch.arange(k, device=device)).view(-1)
            aux = {name: stream.index_select(0, kept_rows) for name, stream in aux.items()}
            cache.select_memory(keep)
            limit, alive = limit.index_select(0, keep), alive.index_select(0, keep)
            fin_tokens, fin_norm = fin_tokens.index_select(0, keep), fin_norm.index_select(0, keep)
            fin_logp, fin_count = fin_logp.index_select(0, keep), fin_count.index_select(0, keep)
            min_limit = int(limit.min())
        tokens = tokens.index_select(0, rows)
        tokens[:, t + 1] = next_token
        cache.reorder(rows)
    return results


def _collect(
    results: list[list[Hypothesis]],
    alive: torch.Tensor,
    which: torch.Tensor,
    fin_tokens: torch.Tensor,
    fin_norm: torch.Tensor,
    fin_logp: torch.Tensor,
    fin_count: torch.Tensor,
    nbest: int,
) -> None:
    """Move the n best finished hypotheses of sentences ``which`` (live rows) into ``results``."""
    original = alive.index_select(0, which).tolist()
    counts = fin_count.index_select(0, which).tolist()
    norms = fin_norm.index_select(0, which).tolist()
    logps = fin_logp.index_select(0, which).tolist()
    toks = fin_tokens.index_select(0, which).tolist()
    for i, sentence in enumerate(original):
        slots = sorted(range(counts[i]), key=lambda s: (-norms[i][s], s))[:nbest]
        hyps = []
        for s in slots:
            seq = toks[i][s]
            end = seq.index(EOS_ID, 1)
            hyps.append(Hypothesis(tokens=seq[1:end], score=norms[i][s], log_prob=logps[i][s]))
        results[sentence] = hyps


def greedy_search(model: Transformer, src: torch.Tensor | SourceInputs, **kwargs: object) -> list[list[int]]:
    """Greedy decoding is beam search with beam 1."""
    return [h[0].tokens if h else [] for h in beam_search(model, src, beam_size=1, nbest=1, **kwargs)]
