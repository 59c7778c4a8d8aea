"""Translating BPE'd lines with a trained model: batching, empty lines, n-best output.

Sentences may carry extra inputs (integer streams, further sources, a feature grid; see
inference/examples.py); each batch reaches beam search as one :class:`SourceInputs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from nmtvariants.data.batching import source_inputs
from nmtvariants.data.dataset import ParallelData
from nmtvariants.data.extra_inputs import ExtraInputFiles
from nmtvariants.data.vocab import Vocabulary
from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike
from nmtvariants.inference.beam_search import Hypothesis, beam_search
from nmtvariants.inference.examples import batches_by_length, nonempty, read_examples
from nmtvariants.models.transformer import Transformer


def translate_data(
    model: Transformer,
    data: ParallelData,
    batch_size: int = 64,
    device: str | torch.device = "cpu",
    **search: object,
) -> list[list[Hypothesis]]:
    """Beam-search every example's source side (with its extra inputs); batches of ``batch_size``
    sentences sorted by length. A source with no tokens (only </s>) is not decoded and gets no
    hypotheses."""
    results: list[list[Hypothesis]] = [[] for _ in range(len(data))]
    for chunk in batches_by_length(data, nonempty(data), batch_size):
        inputs = source_inputs(data, chunk).to(device)
        for index, hyps in zip(chunk, beam_search(model, inputs, **search), strict=True):
            results[int(index)] = hyps
    return results


def check_vocabulary(model: Transformer, vocab: Vocabulary, vocab_path: str | Path) -> None:
    if len(vocab) != model.vocab_size:
        raise InputError(
            f"{vocab_path}: {len(vocab)} types, but the checkpoint's model has {model.vocab_size}; "
            "pass the vocabulary the model was trained with"
        )


def translate_lines(
    model: Transformer,
    vocab: Vocabulary,
    lines: Sequence[str],
    nbest: int = 1,
    extras: ExtraInputFiles | None = None,
    source_path: PathLike = "<input>",
    **kwargs: object,
) -> list[str]:
    """BPE'd source lines to output lines; with ``nbest > 1`` Moses n-best lines ``i ||| hyp ||| score``.

    ``extras``: the lines' extra inputs (checked against ``lines``, read from ``source_path``).
    """
    data = read_examples(vocab, source_path, lines, extras=extras)
    hyps = translate_data(model, data, nbest=nbest, **kwargs)
    if nbest == 1:
        return [vocab.decode(h[0].tokens) if h else "" for h in hyps]
    out = []
    for index, sentence in enumerate(hyps):
        if not sentence:
            out.append(f"{index} |||  ||| 0")
        for h in sentence:
            out.append(f"{index} ||| {vocab.decode(h.tokens)} ||| {h.score:.6f}")
    return out
