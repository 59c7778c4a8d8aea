"""Translating BPE'd lines with a trained model: batching, empty lines, n-best output.

Sentences may carry extra inputs (integer streams, further sources, a feature grid; see
inference/examples.py); each batch reaches beam search as one :class:`SourceInputs`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nmtvariants.data.batching import source_inputs, width_multiple
from nmtvariants.data.dataset import ParallelData
from nmtvariants.data.extra_inputs import ExtraInputFiles
from nmtvariants.data.vocab import Vocabulary
from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike
from nmtvariants.inference.beam_search import Hypothesis, beam_search
from nmtvariants.inference.defaults import BEAM_SIZE, DECODER_CACHE_MB, MAX_LEN_A, MAX_LEN_B
from nmtvariants.inference.examples import nonempty, read_examples
from nmtvariants.models.transformer import Transformer


def cache_bytes_per_position(model: Transformer) -> int:
    """Bytes of decoder self-attention keys and values that one hypothesis holds per output position."""
    element = next(model.parameters()).element_size()
    return 2 * model.cfg.d_model * model.cfg.decoder_layers * element


def decoding_batches(
    source_lengths: Sequence[int],
    indices: Sequence[int],
    batch_size: int,
    beam_size: int,
    max_len_a: float,
    max_len_b: float,
    position_bytes: int,
    cache_mb: float,
) -> Iterator[np.ndarray]:
    """``indices`` sorted by source length, in batches of at most ``batch_size`` sentences whose
    decoder cache (sentences x beam x output positions x ``position_bytes``) stays within
    ``cache_mb`` (a longer sentence alone still makes a batch).

    Why: the cache grows with beam x length limit x batch. The paper configs' BASE model with beam
    16 and WMT's long sentences took 9.5 GB in batches of 64 (benchmarks/results/scale_data_path.md),
    more than a cluster job's request; with the budget, memory is the model plus ``cache_mb``
    whatever the beam, the model or the test set. ``source_lengths`` count </s>, as ``ParallelData``'s."""
    budget = cache_mb * 2**20
    batch: list[int] = []
    for index in sorted(indices, key=lambda i: source_lengths[i]):
        positions = int((source_lengths[index] - 1) * max_len_a + max_len_b) + 1  # the longest so far
        if batch and (
            len(batch) == batch_size or (len(batch) + 1) * beam_size * positions * position_bytes > budget
        ):
            yield np.asarray(batch, dtype=np.int64)
            batch = []
        batch.append(index)
    if batch:
        yield np.asarray(batch, dtype=np.int64)


def translate_data(
    model: Transformer,
    data: ParallelData,
    batch_size: int = 64,
    device: str | torch.device = "cpu",
    cache_mb: float = DECODER_CACHE_MB,
    **search: Any,
) -> list[list[Hypothesis]]:
    """Beam-search every example's source side (with its extra inputs), sorted by length, in batches
    of at most ``batch_size`` sentences and ``cache_mb`` of decoder cache (:func:`decoding_batches`).
    A source with no tokens (only </s>) is not decoded and gets no hypotheses."""
    results: list[list[Hypothesis]] = [[] for _ in range(len(data))]
    batches = decoding_batches(
        data.src_lengths, nonempty(data), batch_size, search.get("beam_size", BEAM_SIZE),
        search.get("max_len_a", MAX_LEN_A), search.get("max_len_b", MAX_LEN_B),
        cache_bytes_per_position(model), cache_mb,
    )  # fmt: skip
    multiple = width_multiple(device, next(model.parameters()).dtype != torch.float32)
    for chunk in batches:
        inputs = source_inputs(data, chunk, multiple).to(device)
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
