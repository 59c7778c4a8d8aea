"""Binarised data and token-bucket batching, checked against naive list-based re-computations."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
import torch

from nmtvariants.data.batching import (
    BatchStream,
    DataPosition,
    UpdateStream,
    collate,
    cut_batches,
    epoch_batches,
)
from nmtvariants.data.dataset import ParallelData, binarize
from nmtvariants.data.vocab import BOS_ID, EOS_ID, PAD_ID, Vocabulary
from nmtvariants.errors import InputError
from nmtvariants.fileio import write_lines


def random_data(count: int = 500, seed: int = 0, vocab: int = 50) -> ParallelData:
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(count):
        src = [*rng.integers(4, vocab, size=int(rng.integers(1, 30))).tolist(), EOS_ID]
        tgt = [*rng.integers(4, vocab, size=int(rng.integers(1, 30))).tolist(), EOS_ID]
        pairs.append((src, tgt))
    return ParallelData.from_sequences(pairs)


def naive_cut(order, src_len, tgt_len, max_tokens):
    batches, current = [], []
    for index in order:
        trial = [*current, index]
        width = max(max(src_len[i], tgt_len[i]) for i in trial)
        if current and width * len(trial) > max_tokens:
            batches.append(current)
            current = [index]
        else:
            current = trial
    if current:
        batches.append(current)
    return batches


def test_cut_batches_matches_naive_greedy_loop():
    data = random_data()
    order = np.random.default_rng(1).permutation(len(data))
    ours = cut_batches(order, data.src_lengths, data.tgt_lengths, 120)
    expected = naive_cut(order.tolist(), data.src_lengths.tolist(), data.tgt_lengths.tolist(), 120)
    assert [b.tolist() for b in ours] == expected


def test_single_overlong_pair_gets_its_own_batch():
    data = ParallelData.from_sequences([([5] * 50 + [2], [6, 2]), ([5, 2], [6, 2])])
    batches = cut_batches(np.arange(2), data.src_lengths, data.tgt_lengths, 10)
    assert [b.tolist() for b in batches] == [[0], [1]]


@pytest.mark.parametrize("maxi_batch", [0, 3, 40])
def test_epoch_covers_every_pair_once_within_budget(maxi_batch):
    data = random_data()
    batches = epoch_batches(data.src_lengths, data.tgt_lengths, 150, seed=3, epoch=2, maxi_batch=maxi_batch)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(len(data)))
    for batch in batches:
        width = max(data.src_lengths[batch].max(), data.tgt_lengths[batch].max())
        assert width * len(batch) <= 150 or len(batch) == 1


def test_epochs_are_deterministic_and_differ():
    data = random_data()
    args = (data.src_lengths, data.tgt_lengths, 150)
    first = epoch_batches(*args, seed=3, epoch=0)
    again = epoch_batches(*args, seed=3, epoch=0)
    other = epoch_batches(*args, seed=3, epoch=1)
    assert [b.tolist() for b in first] == [b.tolist() for b in again]
    assert [b.tolist() for b in first] != [b.tolist() for b in other]


def test_unshuffled_whole_corpus_sort_is_length_ordered():
    data = random_data()
    batches = epoch_batches(data.src_lengths, data.tgt_lengths, 150, 0, 0, maxi_batch=0, shuffle=False)
    flat = np.concatenate(batches)
    keys = list(zip(data.tgt_lengths[flat].tolist(), data.src_lengths[flat].tolist(), strict=True))
    assert keys == sorted(keys)


def test_maxi_batches_reduce_padding_against_random_batches():
    data = random_data(2000)
    bucketed = epoch_batches(data.src_lengths, data.tgt_lengths, 300, 0, 0, maxi_batch=10)
    order = np.random.default_rng(0).permutation(len(data))
    unsorted = cut_batches(order, data.src_lengths, data.tgt_lengths, 300)

    def padding(batches):
        real = sum(int(data.tgt_lengths[b].sum()) for b in batches)
        padded = sum(int(data.tgt_lengths[b].max()) * len(b) for b in batches)
        return 1 - real / padded

    assert padding(bucketed) < 0.5 * padding(unsorted)


@pytest.mark.parametrize("multiple", [1, 8])
def test_collate_matches_naive_padding(multiple):
    data = random_data(40)
    indices = np.array([3, 17, 5, 22])
    batch = collate(data, indices, multiple)
    src = [data.source(i).tolist() for i in indices]
    tgt = [data.target(i).tolist() for i in indices]
    # widths are rounded up to a multiple of `multiple` (batching.width_multiple)
    width_s, width_t = (multiple * math.ceil(max(map(len, side)) / multiple) for side in (src, tgt))
    exp_src = [s + [PAD_ID] * (width_s - len(s)) for s in src]
    exp_in = [([BOS_ID] + t[:-1]) + [PAD_ID] * (width_t - len(t)) for t in tgt]
    exp_out = [t + [PAD_ID] * (width_t - len(t)) for t in tgt]
    assert batch.src.tolist() == exp_src
    assert batch.tgt_in.tolist() == exp_in
    assert batch.tgt_out.tolist() == exp_out
    assert batch.num_tokens == sum(map(len, tgt))
    assert batch.src.dtype == torch.int64


def test_stream_resumes_from_a_position():
    data = random_data(300)
    stream = BatchStream(data, 100, seed=5, max_epochs=3)
    for _ in range(17):
        stream.next()
    saved = DataPosition.from_dict(stream.position.as_dict())
    rest = []
    while (batch := stream.next()) is not None:
        rest.append(batch.tolist())
    resumed = BatchStream(data, 100, seed=5, max_epochs=3, start=saved)
    again = []
    while (batch := resumed.next()) is not None:
        again.append(batch.tolist())
    assert rest == again and len(rest) > 0
    one_epoch = len(epoch_batches(data.src_lengths, data.tgt_lengths, 100, 5, 0))
    assert len(rest) + 17 == sum(
        len(epoch_batches(data.src_lengths, data.tgt_lengths, 100, 5, e)) for e in range(3)
    )
    assert one_epoch < 17 + len(rest)


def test_update_groups_by_frequency_and_by_tokens():
    data = random_data(400)
    by_freq = UpdateStream(BatchStream(data, 100, seed=1, max_epochs=1), update_freq=3)
    groups = list(by_freq)
    assert all(len(g) == 3 for g in groups[:-1]) and 1 <= len(groups[-1]) <= 3  # the epoch's remainder
    assert sum(map(len, groups)) == len(epoch_batches(data.src_lengths, data.tgt_lengths, 100, 1, 0))
    target = 500
    by_tokens = UpdateStream(
        BatchStream(data, 100, seed=1, max_epochs=1), effective_batch_tokens=target, world_size=2
    )
    for group in by_tokens:
        tokens = [int(data.tgt_lengths[b].sum()) for b in group]
        assert len(group) % 2 == 0
        assert sum(tokens) >= target or by_tokens.stream.exhausted()
        # minimal: without the last pair of batches it would not have been enough
        assert sum(tokens[:-2]) < target


def test_binarize_reports_and_drops_bad_lines(tmp_path, caplog):
    write_lines(tmp_path / "a.src", ["a b", "", "a a a a a a", "b"])
    write_lines(tmp_path / "a.tgt", ["c", "d", "c", "d c"])
    vocab = Vocabulary.build(["a b c d"])
    with caplog.at_level(logging.WARNING):
        data = binarize(tmp_path / "a.src", tmp_path / "a.tgt", vocab, max_len=4)
    assert data.line_numbers.tolist() == [1, 4]
    assert f"{tmp_path / 'a.src'}:2" in caplog.text  # the empty line, named
    assert f"{tmp_path / 'a.src'}:3" in caplog.text  # the long line, named
    assert vocab.decode(data.source(1).tolist()) == "b"
    with pytest.raises(InputError, match=r"a\.src:2: empty line"):
        binarize(tmp_path / "a.src", tmp_path / "a.tgt", vocab, drop_empty=False)


def test_binarize_rejects_unequal_line_counts(tmp_path):
    write_lines(tmp_path / "b.src", ["a", "b", "a"])
    write_lines(tmp_path / "b.tgt", ["c", "d"])
    with pytest.raises(InputError, match=r"b\.tgt: ends after 2 lines"):
        binarize(tmp_path / "b.src", tmp_path / "b.tgt", Vocabulary.build(["a b c d"]))


def test_npz_round_trip_and_bad_file(tmp_path):
    data = random_data(30)
    data.save(tmp_path / "d.npz")
    back = ParallelData.load(tmp_path / "d.npz")
    for name in ("src_tokens", "src_offsets", "tgt_tokens", "tgt_offsets", "line_numbers"):
        assert np.array_equal(getattr(back, name), getattr(data, name))
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(InputError, match=r"bad\.npz"):
        ParallelData.load(tmp_path / "bad.npz")
