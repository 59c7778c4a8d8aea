"""Test sentences with their extra inputs, in batches of :class:`SourceInputs` for search and scoring.

``translate`` and ``score`` read the same extra-input files as ``binarize`` (data/extra_inputs.py:
``--aux NAME=FILE``, further sources, ``--features``), checked the same way, and batch them with the
training collate, so a sentence reaches the encoders in the same form in training and at test time.
Nothing is dropped: every input line gets an output line.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch

from nmtvariants.data.batching import collate
from nmtvariants.data.dataset import ParallelData
from nmtvariants.data.extra_inputs import ExtraInputFiles, read_extra_inputs
from nmtvariants.data.vocab import EOS_ID, Vocabulary
from nmtvariants.fileio import PathLike


def read_examples(
    vocab: Vocabulary,
    src_path: PathLike,
    src_lines: Sequence[str],
    tgt_lines: Sequence[str] | None = None,
    extras: ExtraInputFiles | None = None,
) -> ParallelData:
    """Every line as an example (targets ``</s>`` only when ``tgt_lines`` is None), extras attached."""
    targets = tgt_lines if tgt_lines is not None else [""] * len(src_lines)
    data = ParallelData.from_sequences(
        ((vocab.encode(s), vocab.encode(t)) for s, t in zip(src_lines, targets, strict=True)),
        source_name=str(src_path),
    )
    if extras:
        data.attach(read_extra_inputs(extras, src_path, src_lines), vocab)
    return data


def batches_by_length(
    data: ParallelData, indices: Sequence[int], batch_size: int, with_target: bool = False
) -> Iterator[np.ndarray]:
    """``indices`` sorted by length (target first when scoring), in runs of ``batch_size``."""
    src, tgt = data.src_lengths, data.tgt_lengths
    key = (lambda i: (tgt[i], src[i])) if with_target else (lambda i: src[i])
    order = sorted(indices, key=key)
    for start in range(0, len(order), batch_size):
        yield np.asarray(order[start : start + batch_size], dtype=np.int64)


def nonempty(data: ParallelData) -> list[int]:
    """Examples with at least one source token (an empty source is not translated)."""
    return [i for i in range(len(data)) if data.src_lengths[i] > 1 or data.source(i)[0] != EOS_ID]


def score_examples(
    model: torch.nn.Module, data: ParallelData, batch_size: int = 64, device: str | torch.device = "cpu"
) -> list[list[float]]:
    """Per-token log-probabilities (target tokens, then </s>) of every example, in input order."""
    from nmtvariants.inference.scorer import token_log_probs

    results: list[list[float]] = [[] for _ in range(len(data))]
    was_training = model.training
    model.eval()
    try:
        for chunk in batches_by_length(data, range(len(data)), batch_size, with_target=True):
            batch = collate(data, chunk)
            inputs = batch.inputs.to(device)
            logp = token_log_probs(model, inputs, batch.tgt_out.to(device)).cpu().tolist()
            for row, index in enumerate(chunk):
                results[index] = logp[row][: int(data.tgt_lengths[index])]
    finally:
        model.train(was_training)
    return results
