"""Extracting captured representations of a trained model over a test set, token by token.

The model runs in eval mode (no dropout) under teacher forcing, without gradients, and is left in
the mode it came in: encoder states see the source, decoder states the reference target prefix
(``<s> + tokens``), exactly as the authors probe them (seed brief §1.7, §3.2). Padding never reaches
the output: row ``i`` of a batch contributes its first ``len_i`` positions only.

Probes at toy scale must be cheap, so :func:`cap_pairs` keeps the first pairs of the test set in
file order within ``max_sentences`` and ``max_tokens`` (the sum over pairs of the longer side,
``</s>`` included, so no representation has more than ``max_tokens`` rows).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

import numpy as np
import torch

from nmtvariants.analysis.states import SIDES, SideIndex, side_of
from nmtvariants.data.batching import collate
from nmtvariants.data.dataset import ParallelData
from nmtvariants.data.vocab import BOS_ID
from nmtvariants.errors import ConfigError
from nmtvariants.models.hooks import capture


def cap_pairs(
    data: ParallelData, max_sentences: int | None = None, max_tokens: int | None = None
) -> ParallelData:
    """The first pairs of ``data`` within both caps (None: no cap); at least one pair is kept."""
    cost = np.maximum(data.src_lengths, data.tgt_lengths)
    keep = len(data)
    if max_sentences is not None:
        keep = min(keep, max_sentences)
    if max_tokens is not None:
        keep = min(keep, max(1, int(np.searchsorted(np.cumsum(cost), max_tokens, side="right"))))
    if keep < 1:
        raise ConfigError(f"max_sentences must be positive, got {max_sentences}")
    pairs = [(data.source(i).tolist(), data.target(i).tolist()) for i in range(keep)]
    return ParallelData.from_sequences(pairs, data.line_numbers[:keep], data.source_name)


def side_index(data: ParallelData, side: str) -> SideIndex:
    """Per-token index arrays of ``side`` for every pair of ``data``, in (sentence, position) order."""
    if side == "encoder":
        lengths, tokens = data.src_lengths, data.src_tokens.astype(np.int64)
    else:
        lengths = data.tgt_lengths
        # decoder input: <s> followed by the target without its </s>
        tokens = np.concatenate(
            [np.concatenate([[BOS_ID], data.target(i)[:-1]]) for i in range(len(data))]
        ).astype(np.int64)
    sentence = np.repeat(np.arange(len(data), dtype=np.int64), lengths)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    position = np.arange(int(lengths.sum()), dtype=np.int64) - starts
    last = np.repeat(lengths, lengths) - 1
    # encoder: BPE token k sits at position k, </s> (the last position) has none;
    # decoder: <s> at position 0 has none, BPE token k sits at position k + 1
    token_index = np.where(position == last, -1, position) if side == "encoder" else position - 1
    return SideIndex(tokens, sentence, position, token_index)


def _matching(names: Sequence[str], patterns: Sequence[str]) -> list[str]:
    chosen = [name for name in names if any(fnmatch.fnmatchcase(name, p) for p in patterns)]
    for pattern in patterns:
        if not any(fnmatch.fnmatchcase(name, pattern) for name in names):
            raise ConfigError(
                f"--names: {pattern!r} matches no captured state; this model records {', '.join(names)}"
            )
    return chosen


@torch.no_grad()
def extract_states(
    model: torch.nn.Module,
    data: ParallelData,
    patterns: Sequence[str],
    batch_size: int = 32,
    device: str | torch.device = "cpu",
    dtype: np.dtype | type = np.float32,
) -> tuple[dict[str, SideIndex], dict[str, np.ndarray]]:
    """States of every capture name matching ``patterns`` (globs) for all pairs of ``data``.

    Returns the per-side index arrays and, per name, a ``[tokens, d]`` array whose rows follow the
    index of the name's side. Only 3-d states ``[B, T, d]`` over the side's positions qualify
    (attention maps are not recorded here).
    """
    if not patterns:
        raise ConfigError("name at least one state pattern to extract (e.g. 'encoder.layers.*')")
    if batch_size < 1:
        raise ConfigError(f"batch_size must be positive, got {batch_size}")
    was_training = model.training
    model.eval()
    pieces: dict[str, list[np.ndarray]] = {}
    chosen: list[str] | None = None
    try:
        for start in range(0, len(data), batch_size):
            rows = np.arange(start, min(start + batch_size, len(data)))
            batch = collate(data, rows).to(device)
            # the first batch records everything, to check the patterns against the names that exist
            with capture(model, include=chosen) as recorder:
                memories = model.encode_inputs(batch.inputs)
                if chosen is None or any(side_of(name) == "decoder" for name in chosen):
                    model.decode_states(batch.tgt_in, memories, aux=batch.inputs.aux)
            if chosen is None:
                chosen = _matching(recorder.keys(), patterns)
            lengths = {"encoder": data.src_lengths[rows], "decoder": data.tgt_lengths[rows]}
            widths = {"encoder": batch.src.size(1), "decoder": batch.tgt_in.size(1)}
            for name in chosen:
                side = side_of(name)
                records = recorder[name]
                shape = tuple(records[0].shape)
                if len(records) != 1 or len(shape) != 3 or shape[:2] != (len(rows), widths[side]):
                    raise ConfigError(
                        f"{name}: recorded {len(records)} tensor(s) of shape {shape}; only states "
                        f"[batch, positions, d] over the {side} positions can be extracted"
                    )
                values = records[0].float().cpu().numpy()
                for row, length in enumerate(lengths[side]):
                    pieces.setdefault(name, []).append(values[row, :length].astype(dtype))
    finally:
        model.train(was_training)
    states = {name: np.concatenate(parts) for name, parts in pieces.items()}
    used = {side_of(name) for name in states}
    return {side: side_index(data, side) for side in SIDES if side in used}, states
