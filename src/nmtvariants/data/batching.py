"""Token-bucketed batches, grouped into updates, with a data position that survives a restart.

Batching follows Nematus/Marian (the lexical-shortcuts code): each epoch the corpus is shuffled
with a generator seeded by ``(seed, epoch)``, cut into *maxi-batches* of about ``maxi_batch``
mini-batches' worth of tokens, each maxi-batch is sorted by length and cut greedily into
mini-batches whose padded size ``sentences x max(longest source, longest target)`` stays within
``max_tokens``; the mini-batches of the epoch are then shuffled again. ``maxi_batch=0`` sorts the
whole corpus at once (fairseq's behaviour: least padding, least randomness).

Because an epoch's batches are a pure function of ``(seed, epoch)``, the whole data state of a
run is the :class:`DataPosition` ``(epoch, next batch)``: resuming re-derives the epoch and skips
ahead, no iterator pickling needed. Updates are consecutive groups of batches from that single
stream (``update_freq`` batches, or enough to reach ``effective_batch_tokens`` target tokens);
with data-parallel training the group is dealt round-robin to the ranks, so 2 processes x 1 batch
see exactly the batches that 1 process x 2 delayed batches sees.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from nmtvariants.data.dataset import ParallelData
from nmtvariants.data.vocab import BOS_ID, PAD_ID
from nmtvariants.models.interfaces import AUX_PAD, SourceInputs

DEFAULT_MAXI_BATCH = 40

WIDTH_MULTIPLE = 8
"""Where it pays, batch widths (source and target time steps) are rounded up to a multiple of this.

Why: oneDNN compiles and caches one primitive per matmul shape, and CPU bf16 (autocast in training,
bf16 weights in translation) goes through it, so every new batch width cost memory that the cache
kept (issue 14: RSS grew for the whole run); rounding widths cuts the number of distinct shapes about
eightfold. On CUDA, half-precision tensor cores want multiples of 8 as well. fp32 on CPU goes through
MKL, which builds nothing per shape: there the rounding only adds compute, and at short sentences a
lot of it (the toy world's ~12 tokens: 29% of the source and 23% of the target positions of a
training batch were padding, 12% and 2% without it; 14% of an update's time: ``batch_width.md``), so
:func:`width_multiple` is 1 there. The extra positions are PAD (AUX_PAD in the integer streams): the
encoders mask them and the loss ignores them, so the loss and the gradients are the same sums either
way, up to the order of floating-point additions.
"""


def width_multiple(device: torch.device | str, reduced_precision: bool) -> int:
    """The multiple batch widths are rounded to on ``device`` (see :data:`WIDTH_MULTIPLE`):
    ``reduced_precision`` when the products run in bf16 or fp16 (autocast, or such weights)."""
    return WIDTH_MULTIPLE if reduced_precision or torch.device(device).type == "cuda" else 1


def padded_width(longest: int, multiple: int) -> int:
    """``longest`` rounded up to a multiple of ``multiple``."""
    return -(-longest // multiple) * multiple


@dataclass(frozen=True)
class DataPosition:
    """Where the batch stream resumes: batch ``batch`` of epoch ``epoch`` (both 0-based)."""

    epoch: int = 0
    batch: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "batch": self.batch}

    @classmethod
    def from_dict(cls, state: dict[str, int]) -> DataPosition:
        return cls(epoch=int(state["epoch"]), batch=int(state["batch"]))


def cut_batches(
    order: np.ndarray, src_lengths: np.ndarray, tgt_lengths: np.ndarray, max_tokens: int
) -> list[np.ndarray]:
    """Cut ``order`` greedily into runs whose padded size stays within ``max_tokens``.

    A single pair longer than ``max_tokens`` becomes a batch of its own rather than being lost.
    """
    cost = np.maximum(src_lengths[order], tgt_lengths[order]).tolist()
    batches: list[np.ndarray] = []
    start, longest = 0, 0
    for position, length in enumerate(cost):
        widest = max(longest, length)
        if position > start and widest * (position - start + 1) > max_tokens:
            batches.append(order[start:position])
            start, widest = position, length
        longest = widest
    if start < len(cost):
        batches.append(order[start:])
    return batches


def epoch_batches(
    src_lengths: np.ndarray,
    tgt_lengths: np.ndarray,
    max_tokens: int,
    seed: int,
    epoch: int,
    maxi_batch: int = DEFAULT_MAXI_BATCH,
    shuffle: bool = True,
) -> list[np.ndarray]:
    """The mini-batches (arrays of pair indices) of one epoch; deterministic in ``(seed, epoch)``."""
    count = len(src_lengths)
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(count) if shuffle else np.arange(count)
    if maxi_batch <= 0:
        chunks = [order]
    else:
        cost = np.maximum(src_lengths[order], tgt_lengths[order])
        cumulative = np.cumsum(cost)
        span = maxi_batch * max_tokens
        bounds = np.searchsorted(cumulative, np.arange(span, int(cumulative[-1]) + span, span), "right")
        chunks = [chunk for chunk in np.split(order, bounds) if len(chunk)]
    batches: list[np.ndarray] = []
    for chunk in chunks:
        # lexsort: last key is primary -> sort by target length, then source length, stable
        ranked = chunk[np.lexsort((src_lengths[chunk], tgt_lengths[chunk]), axis=0)]
        batches.extend(cut_batches(ranked, src_lengths, tgt_lengths, max_tokens))
    if shuffle:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


@dataclass
class Batch:
    """Padded tensors of one mini-batch; ``num_tokens`` counts real target tokens (incl. ``</s>``).

    ``inputs`` is everything the encoders read (sources, integer streams, features); ``src`` is its
    first source, for single-source callers.
    """

    inputs: SourceInputs
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    num_tokens: int
    indices: np.ndarray

    @property
    def src(self) -> torch.Tensor:
        return self.inputs.src

    def to(self, device: torch.device | str, non_blocking: bool = False) -> Batch:
        return Batch(
            self.inputs.to(device, non_blocking=non_blocking),
            self.tgt_in.to(device, non_blocking=non_blocking),
            self.tgt_out.to(device, non_blocking=non_blocking),
            self.num_tokens,
            self.indices,
        )

    @property
    def num_sentences(self) -> int:
        return len(self.indices)


def _scatter(
    tokens: np.ndarray, offsets: np.ndarray, indices: np.ndarray, shift: int, width: int, fill: int = PAD_ID
):
    """Copy the selected sequences into a ``fill`` (padding) matrix starting at column ``shift``."""
    lengths = offsets[indices + 1] - offsets[indices]
    out = np.full((len(indices), width), fill, dtype=np.int64)
    rows = np.repeat(np.arange(len(indices)), lengths)
    starts = np.cumsum(lengths) - lengths
    cols = np.arange(int(lengths.sum())) - np.repeat(starts, lengths)
    out[rows, cols + shift] = tokens[np.repeat(offsets[indices], lengths) + cols]
    return out, lengths


def source_inputs(data: ParallelData, indices: np.ndarray, multiple: int = 1) -> SourceInputs:
    """The encoder side of pairs ``indices``: sources padded with PAD_ID, streams with AUX_PAD
    (aligned with the first source), the feature rows gathered as float32. Widths are rounded up
    to a multiple of ``multiple`` (:func:`width_multiple`)."""
    sources, src_width = [], 0
    for tokens, offsets in [(data.src_tokens, data.src_offsets), *data.sources]:
        width = padded_width(int((offsets[indices + 1] - offsets[indices]).max()), multiple)
        src_width = src_width or width
        sources.append(torch.from_numpy(_scatter(tokens, offsets, indices, 0, width)[0]))
    aux = {
        name: torch.from_numpy(_scatter(stream, data.src_offsets, indices, 0, src_width, AUX_PAD)[0])
        for name, stream in data.aux.items()
    }
    features = None
    if data.feature_rows is not None:
        if data.features is None:
            raise ValueError("the data has feature rows but no feature grid (see ParallelData.use_features)")
        grid = np.asarray(data.features[data.feature_rows[indices]], dtype=np.float32)
        features = torch.from_numpy(grid)
    return SourceInputs(sources=sources, aux=aux, features=features)


def collate(data: ParallelData, indices: np.ndarray, multiple: int = 1) -> Batch:
    """Source ``tokens </s>``; decoder input ``<s> tokens``; decoder output ``tokens </s>``; every
    width rounded up to a multiple of ``multiple`` (:func:`width_multiple`) with padding."""
    indices = np.asarray(indices, dtype=np.int64)
    tgt_lengths = data.tgt_offsets[indices + 1] - data.tgt_offsets[indices]
    width = padded_width(int(tgt_lengths.max()), multiple)
    shifted, _ = _scatter(data.tgt_tokens, data.tgt_offsets, indices, 1, width + 1)
    shifted[:, 0] = BOS_ID
    tgt_out = shifted[:, 1:]
    tgt_in = shifted[:, :-1].copy()
    # the </s> of a shorter row would land in tgt_in at column len; it must be padding there
    short = tgt_lengths < width
    tgt_in[np.nonzero(short)[0], tgt_lengths[short]] = PAD_ID
    return Batch(
        inputs=source_inputs(data, indices, multiple),
        tgt_in=torch.from_numpy(tgt_in),
        tgt_out=torch.from_numpy(np.ascontiguousarray(tgt_out)),
        num_tokens=int(tgt_lengths.sum()),
        indices=indices,
    )


class BatchStream:
    """Endless (or ``max_epochs``-long) stream of ``(position_after, batch indices)``."""

    def __init__(
        self,
        data: ParallelData,
        max_tokens: int,
        seed: int,
        maxi_batch: int = DEFAULT_MAXI_BATCH,
        max_epochs: int | None = None,
        start: DataPosition | None = None,
        shuffle: bool = True,
    ):
        self.data = data
        self.max_tokens = max_tokens
        self.seed = seed
        self.maxi_batch = maxi_batch
        self.max_epochs = max_epochs
        self.shuffle = shuffle
        self.position = start or DataPosition()
        self._src_lengths = data.src_lengths
        self._tgt_lengths = data.tgt_lengths
        self._epoch: int | None = None
        self._batches: list[np.ndarray] = []

    def batches_of(self, epoch: int) -> list[np.ndarray]:
        if self._epoch != epoch:
            self._batches = epoch_batches(
                self._src_lengths,
                self._tgt_lengths,
                self.max_tokens,
                self.seed,
                epoch,
                self.maxi_batch,
                self.shuffle,
            )
            self._epoch = epoch
        return self._batches

    def exhausted(self) -> bool:
        return self.max_epochs is not None and self.position.epoch >= self.max_epochs

    def next(self) -> np.ndarray | None:
        """The next batch's indices (advancing the position), or None when ``max_epochs`` is done."""
        while not self.exhausted():
            batches = self.batches_of(self.position.epoch)
            if self.position.batch < len(batches):
                batch = batches[self.position.batch]
                self.position = DataPosition(self.position.epoch, self.position.batch + 1)
                return batch
            self.position = DataPosition(self.position.epoch + 1, 0)
        return None


class UpdateStream:
    """Groups the batch stream into updates: ``update_freq`` x ``world_size`` batches, or enough
    batches to reach ``effective_batch_tokens`` real target tokens (rounded up to a multiple of
    ``world_size`` so that every rank does the same number of backward passes).

    Every rank runs the same stream and keeps only its share (``group[rank::world_size]``), so
    the group's total token count, which normalises the gradient, is known without communication.
    """

    def __init__(
        self,
        stream: BatchStream,
        update_freq: int = 1,
        effective_batch_tokens: int | None = None,
        world_size: int = 1,
    ):
        self.stream = stream
        self.update_freq = update_freq
        self.effective_batch_tokens = effective_batch_tokens
        self.world_size = world_size
        self._tgt_lengths = stream.data.tgt_lengths

    @property
    def position(self) -> DataPosition:
        return self.stream.position

    def next_update(self) -> list[np.ndarray] | None:
        """All batches of the next update (every rank's), or None when the data is exhausted.

        An incomplete final group (fewer batches than ``world_size``) is dropped.
        """
        group: list[np.ndarray] = []
        tokens = 0
        while True:
            enough = (
                tokens >= self.effective_batch_tokens
                if self.effective_batch_tokens
                else len(group) >= self.update_freq * self.world_size
            )
            if group and enough and len(group) % self.world_size == 0:
                return group
            batch = self.stream.next()
            if batch is None:
                usable = len(group) - len(group) % self.world_size
                return group[:usable] or None
            group.append(batch)
            tokens += int(self._tgt_lengths[batch].sum())

    def __iter__(self) -> Iterator[list[np.ndarray]]:
        while (group := self.next_update()) is not None:
            yield group
