"""The ancestry-indexed cache (models/decoder_cache.py) against physically reordered keys and values."""

from __future__ import annotations

import math

import pytest
import torch

from nmtvariants.models import beam_attention, decoder_cache
from nmtvariants.models.decoder_cache import DecoderCache


def naive_attention(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Per row and head, a loop over positions: softmax(q k / sqrt(d)) v, the last T queries causal."""
    rows, heads, new, d_head = q.shape
    total = keys.size(2)
    out = torch.zeros(rows, heads, new, d_head, dtype=torch.float64)
    for r in range(rows):
        for h in range(heads):
            for t in range(new):
                visible = total - new + t + 1
                scores = torch.tensor(
                    [
                        float(q[r, h, t].double() @ keys[r, h, p].double()) / math.sqrt(d_head)
                        for p in range(visible)
                    ]
                )
                weights = torch.softmax(scores, dim=0)
                out[r, h, t] = (weights[:, None] * values[r, h, :visible].double()).sum(0)
    return out


@pytest.fixture(params=["native", "pytorch"])
def attention_path(request, monkeypatch) -> list[int]:
    """Each test below runs twice: single new positions through the native kernel
    (models/beam_attention.py), and everything through the PyTorch path. Yields the count of
    steps the kernel answered."""
    answered = []

    def counted(*args):
        out = beam_attention.attend_ancestors(*args) if request.param == "native" else None
        answered.extend([1] if out is not None else [])
        return out

    monkeypatch.setattr(decoder_cache, "attend_ancestors", counted)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the kernel's condition, whatever the machine's core count
    try:
        yield answered
    finally:
        torch.set_num_threads(threads)
    kernel_exists = beam_attention.LIBRARY.functions() is not None
    assert bool(answered) == (request.param == "native" and kernel_exists)


@pytest.mark.parametrize("group", [1, 3, 5])
def test_attention_over_ancestors_equals_attention_over_reordered_keys(
    group: int, attention_path: list[int]
) -> None:
    """Append keys step by step, reorder rows within sentences as beam search does, and drop a
    sentence; the reference keeps every row's own key list and moves it physically."""
    generator = torch.Generator().manual_seed(0)
    sentences, heads, d_head = 4, 2, 8
    rows = sentences * group
    cache = DecoderCache.for_layers(1, group=group)
    layer = cache.layers[0]
    own_keys = torch.empty(rows, heads, 0, d_head)
    own_values = torch.empty(rows, heads, 0, d_head)
    for step, new in enumerate([2, 1, 1, 1, 1]):  # a two-position prompt, then single steps
        k = torch.randn(rows, heads, new, d_head, generator=generator)
        v = torch.randn(rows, heads, new, d_head, generator=generator)
        q = torch.randn(rows, heads, new, d_head, generator=generator)
        cache.advance(rows, new, q.device)
        layer.append(k, v)
        own_keys, own_values = torch.cat([own_keys, k], 2), torch.cat([own_values, v], 2)
        out = layer.attend(q)
        expected = naive_attention(q, own_keys, own_values)
        torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-5)
        keys, values = layer.row_keys_values()
        torch.testing.assert_close(keys, own_keys)
        torch.testing.assert_close(values, own_values)
        if step == 2:  # drop sentence 1 (all its rows)
            keep = torch.tensor([0, 2, 3])
            cache.select_memory(keep)
            row_keep = (keep[:, None] * group + torch.arange(group)).view(-1)
            own_keys, own_values = own_keys[row_keep], own_values[row_keep]
            sentences, rows = 3, 3 * group
        # beam reordering: each new row continues a random row of its own sentence
        parent = torch.randint(0, group, (sentences, group), generator=generator)
        index = (torch.arange(sentences)[:, None] * group + parent).view(-1)
        cache.reorder(index)
        own_keys, own_values = own_keys[index], own_values[index]


def test_cache_grows_past_its_first_capacity() -> None:
    generator = torch.Generator().manual_seed(1)
    cache = DecoderCache.for_layers(1, group=2)
    layer = cache.layers[0]
    keys = []
    for _ in range(40):  # initial capacity is 16 positions
        k = torch.randn(4, 1, 1, 4, generator=generator)
        cache.advance(4, 1, k.device)
        layer.append(k, k)
        keys.append(k)
    torch.testing.assert_close(layer.row_keys_values()[0], torch.cat(keys, 2))


def test_a_known_length_is_allocated_once():
    """Beam search knows its longest decode: the keys and values are allocated at that size once, not
    grown by doubling (which held up to twice the positions, and both copies while growing)."""
    for positions, expected in ((331, 331), (0, 512)):
        cache = DecoderCache.for_layers(1, group=2, positions=positions)
        layer = cache.layers[0]
        allocations = []
        for _ in range(331):
            cache.advance(4, 1, torch.device("cpu"))
            layer.append(torch.zeros(4, 2, 1, 3), torch.zeros(4, 2, 1, 3))
            if not allocations or allocations[-1] != layer.k.size(2) // 2:
                allocations.append(layer.k.size(2) // 2)
        assert allocations[-1] == expected
        assert len(allocations) == (1 if positions else 6)  # 16, 32, ..., 512
