"""Translation batches bounded by the decoder cache's memory: same translations, bounded batches."""

from __future__ import annotations

import random

import torch
from model_fixtures import REVERSE_VOCAB, reverse_batch, trained_reverse_model

from nmtvariants.data.vocab import SPECIALS, Vocabulary
from nmtvariants.inference.translate import cache_bytes_per_position, decoding_batches, translate_lines


def test_batches_keep_the_length_order_and_stay_within_the_budget():
    rng = random.Random(0)
    lengths = [rng.randint(1, 120) for _ in range(500)]
    indices = [i for i in range(500) if i % 7]  # not every example
    beam, a, b, position_bytes, cache_mb = 16, 2.0, 10, 24_576, 64
    batches = [
        batch.tolist()
        for batch in decoding_batches(lengths, indices, 64, beam, a, b, position_bytes, cache_mb)
    ]
    assert [i for batch in batches for i in batch] == sorted(indices, key=lambda i: lengths[i])

    def cache_bytes(batch: list[int]) -> int:  # sentences x beam x the longest one's positions (with </s>)
        return len(batch) * beam * max(int((lengths[i] - 1) * a + b) + 1 for i in batch) * position_bytes

    for batch, following in zip(batches, [*batches[1:], []], strict=True):
        assert len(batch) <= 64
        assert len(batch) == 1 or cache_bytes(batch) <= cache_mb * 2**20
        if following and len(batch) < 64:  # a batch closes only when the next sentence would not fit
            assert cache_bytes(batch + following[:1]) > cache_mb * 2**20
    assert len(batches) > len(indices) / 64 + 1, "the budget split some batches"


def test_a_position_holds_keys_and_values_of_every_decoder_layer():
    """2 (keys, values) x d 512 x 6 decoder layers x 4 bytes for the paper configs' BASE model."""
    model = torch.nn.Linear(1, 1)
    model.cfg = type("Config", (), {"d_model": 512, "decoder_layers": 6})()
    assert cache_bytes_per_position(model) == 24_576
    assert cache_bytes_per_position(model.to(torch.bfloat16)) == 12_288


def test_a_small_budget_changes_the_batches_not_the_translations():
    model = trained_reverse_model()
    vocab = Vocabulary([*SPECIALS, *(f"w{i}" for i in range(REVERSE_VOCAB - 4))])
    *_, sources = reverse_batch(torch.Generator().manual_seed(3), 40, max_len=12)
    lines = [vocab.decode(source[:-1]) for source in sources]
    settings = dict(beam_size=4, max_len_a=1.5, max_len_b=10, batch_size=64)
    one_batch = translate_lines(model, vocab, lines, **settings)
    position_bytes = cache_bytes_per_position(model)
    tiny = 3 * 4 * 30 * position_bytes / 2**20  # about three sentences a batch
    assert (
        len(
            list(decoding_batches([len(s) for s in sources], range(40), 64, 4, 1.5, 10, position_bytes, tiny))
        )
        > 10
    )
    assert translate_lines(model, vocab, lines, cache_mb=tiny, **settings) == one_batch
