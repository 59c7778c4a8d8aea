"""models/beam_attention.py: one step's self-attention over the beam cache, ancestors' keys only.

Checked against a float64 loop over rows, heads and positions that reads each ancestor's key and
value through the slot table (tests/test_decoder_cache.py checks the cache with and without the kernel
against physically reordered keys).
"""

from __future__ import annotations

import math

import torch
from native_fixtures import NO_COMPILER, library_without_compiler

from nmtvariants import native
from nmtvariants.models import beam_attention
from nmtvariants.models.beam_attention import attend_ancestors


def cache_state(sentences: int, group: int, heads: int, d_head: int, length: int, capacity: int, seed: int):
    """Queries, a key/value cache [S, H, capacity * g, d] and a slot table [S, g, capacity] whose
    first ``length`` positions are filled (the rest is garbage the kernel must not read)."""
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(sentences * group, heads, 1, d_head, generator=generator)
    k = torch.randn(sentences, heads, capacity * group, d_head, generator=generator)
    v = torch.randn(sentences, heads, capacity * group, d_head, generator=generator)
    k[:, :, length * group :] = float("nan")
    v[:, :, length * group :] = float("nan")
    slots = torch.randint(0, group, (sentences, group, capacity), generator=generator)
    return q, k, v, slots


def float64_loop(q, k, v, slots, length):
    rows, heads, _, d_head = q.shape
    group = slots.size(1)
    out = torch.zeros(rows, heads, 1, d_head, dtype=torch.float64)
    for row in range(rows):
        s, r = divmod(row, group)
        for h in range(heads):
            at = [p * group + int(slots[s, r, p]) for p in range(length)]
            keys, values = k[s, h, at].double(), v[s, h, at].double()
            weights = torch.softmax(keys @ q[row, h, 0].double() / math.sqrt(d_head), dim=0)
            out[row, h, 0] = weights @ values
    return out


def test_the_kernel_is_the_float64_attention_over_each_rows_ancestors():
    if beam_attention.LIBRARY.functions() is None:  # no compiler: the next test covers that machine
        assert beam_attention.LIBRARY.status.startswith("PyTorch ops")
        return
    for sentences, group, heads, d_head, length, capacity in [
        (3, 5, 2, 64, 7, 9),
        (2, 1, 3, 10, 1, 1),
        (4, 4, 4, 33, 20, 20),
    ]:
        q, k, v, slots = cache_state(sentences, group, heads, d_head, length, capacity, seed=length)
        got = attend_ancestors(q, k, v, slots, length)
        assert got is not None and got.shape == q.shape
        torch.testing.assert_close(got.double(), float64_loop(q, k, v, slots, length), rtol=1e-5, atol=1e-5)


def test_the_kernel_declines_what_it_does_not_handle():
    q, k, v, slots = cache_state(2, 3, 2, 8, 4, 6, seed=1)
    assert attend_ancestors(torch.cat([q, q], 2), k, v, slots, 4) is None  # two new positions
    assert attend_ancestors(q.bfloat16(), k.bfloat16(), v.bfloat16(), slots, 4) is None
    assert attend_ancestors(q, k[:, :, ::2], v[:, :, ::2], slots, 2) is None  # not contiguous
    threads = torch.get_num_threads()
    torch.set_num_threads(native.NATIVE_MAX_THREADS + 1)  # PyTorch's parallel path beyond that
    try:
        assert attend_ancestors(q, k, v, slots, 4) is None
    finally:
        torch.set_num_threads(threads)


def test_without_a_compiler_the_cache_keeps_its_pytorch_path(tmp_path, monkeypatch):
    fresh = library_without_compiler(beam_attention, tmp_path, monkeypatch)
    q, k, v, slots = cache_state(2, 3, 2, 8, 4, 6, seed=2)
    assert attend_ancestors(q, k, v, slots, 4) is None
    assert fresh.status == NO_COMPILER
