"""Translating text files with a trained checkpoint: batching, empty lines, n-best output."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from nmtvariants.data.vocab import EOS_ID, Vocabulary
from nmtvariants.errors import InputError
from nmtvariants.fileio import atomic_write, read_lines
from nmtvariants.inference.beam_search import Hypothesis, beam_search
from nmtvariants.inference.scorer import pad_batch
from nmtvariants.models.transformer import Transformer


def translate_ids(
    model: Transformer,
    sources: Sequence[Sequence[int]],
    batch_size: int = 64,
    device: str | torch.device = "cpu",
    **search: object,
) -> list[list[Hypothesis]]:
    """Beam-search every source (ids + </s>); batches of ``batch_size`` sentences sorted by length.

    A source with no tokens (only </s>) is not decoded and gets no hypotheses.
    """
    results: list[list[Hypothesis]] = [[] for _ in sources]
    todo = [i for i, s in enumerate(sources) if len(s) > 1 or (s and s[0] != EOS_ID)]
    todo.sort(key=lambda i: len(sources[i]))
    for start in range(0, len(todo), batch_size):
        chunk = todo[start : start + batch_size]
        src = pad_batch([sources[i] for i in chunk]).to(device)
        for index, hyps in zip(chunk, beam_search(model, src, **search), strict=True):
            results[index] = hyps
    return results


def check_vocabulary(model: Transformer, vocab: Vocabulary, vocab_path: str | Path) -> None:
    if len(vocab) != model.vocab_size:
        raise InputError(
            f"{vocab_path}: {len(vocab)} types, but the checkpoint's model has {model.vocab_size}; "
            "pass the vocabulary the model was trained with"
        )


def translate_lines(
    model: Transformer, vocab: Vocabulary, lines: Sequence[str], nbest: int = 1, **kwargs: object
) -> list[str]:
    """BPE'd source lines to output lines; with ``nbest > 1`` Moses n-best lines ``i ||| hyp ||| score``."""
    sources = [vocab.encode(line) for line in lines]
    hyps = translate_ids(model, sources, nbest=nbest, **kwargs)
    if nbest == 1:
        return [vocab.decode(h[0].tokens) if h else "" for h in hyps]
    out = []
    for index, sentence in enumerate(hyps):
        if not sentence:
            out.append(f"{index} |||  ||| 0")
        for h in sentence:
            out.append(f"{index} ||| {vocab.decode(h.tokens)} ||| {h.score:.6f}")
    return out


def translate_file(
    model: Transformer, vocab: Vocabulary, input_path: str | Path, output_path: str | Path, **kwargs: object
) -> int:
    lines = list(read_lines(input_path))
    outputs = translate_lines(model, vocab, lines, **kwargs)
    with atomic_write(output_path) as out:
        for line in outputs:
            out.write(line + "\n")
    return len(lines)
