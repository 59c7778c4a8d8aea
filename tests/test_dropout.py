"""The CPU dropout mask (models/dropout.py) against the Bernoulli it stands in for."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from nmtvariants.allocator import keep_freed_memory
from nmtvariants.models.dropout import (
    _CHUNK_FIELDS,
    Dropout,
    add_dropout,
    dropout,
    keep_mask,
    quantised_probability,
)


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5, 0.9])
def test_keep_rate_matches_one_minus_p_within_binomial_error(p: float) -> None:
    torch.manual_seed(0)
    n = 3_000_001  # not a multiple of 4: the last 64-bit word is used in part
    mask = keep_mask((n,), p)
    expected = 1.0 - quantised_probability(p)
    sd = math.sqrt(expected * (1 - expected) / n)
    assert mask.dtype == torch.bool and mask.shape == (n,)
    assert abs(mask.float().mean().item() - expected) < 5 * sd


def test_mask_fields_are_independent_of_their_position_in_the_word() -> None:
    """Each of the four 16-bit fields of a word keeps at the same rate, and neighbours are not
    correlated (a field-packing bug would show up as a biased field or a correlation)."""
    torch.manual_seed(1)
    mask = keep_mask((4 * 400_000,), 0.5).view(-1, 4).float()
    for field in range(4):
        assert abs(mask[:, field].mean().item() - 0.5) < 5 * math.sqrt(0.25 / 400_000)
    centred = mask - mask.mean(0)
    for left, right in ((0, 1), (1, 2), (2, 3), (3, 0)):
        correlation = (centred[:, left] * centred[:, right]).mean() / (
            centred[:, left].std() * centred[:, right].std()
        )
        assert abs(correlation.item()) < 5 / math.sqrt(400_000)


def test_mask_depends_on_the_seed_not_on_the_thread_count() -> None:
    """Several generator streams (and a part-used last word and stream), filled by one thread or by
    several: the same mask for the same seed, and no stream repeats another."""
    shape = (3, 2 * _CHUNK_FIELDS + 4_321)
    threads = torch.get_num_threads()
    try:
        masks = []
        for count in (1, 2, 3):
            torch.set_num_threads(count)
            torch.manual_seed(5)
            masks.append(keep_mask(shape, 0.3))
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(masks[0], masks[1]) and torch.equal(masks[0], masks[2])
    streams = masks[0].view(-1)[: 6 * _CHUNK_FIELDS].view(6, _CHUNK_FIELDS)
    for first in range(6):
        for second in range(first + 1, 6):
            assert not torch.equal(streams[first], streams[second])


def test_quantisation_is_at_most_half_a_level() -> None:
    for p in (0.1, 0.2, 0.3, 1 / 3):
        assert abs(quantised_probability(p) - p) <= 0.5 / 65536


def test_expectation_is_preserved_and_dropped_entries_are_zero() -> None:
    torch.manual_seed(2)
    x = torch.rand(1000, 1000) + 1.0
    y = dropout(x, 0.1, training=True)
    kept = y != 0
    scale = 1.0 / (1.0 - quantised_probability(0.1))
    torch.testing.assert_close(y[kept], x[kept] * scale)
    assert abs(y.mean().item() / x.mean().item() - 1.0) < 0.005


def test_gradient_is_the_mask_times_the_scale_and_only_the_mask_is_kept() -> None:
    torch.manual_seed(3)
    x = torch.randn(64, 33, requires_grad=True)
    saved: list[torch.Tensor] = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        y = dropout(x, 0.25, training=True)
    upstream = torch.randn_like(y)
    y.backward(upstream)
    kept = (y != 0).float()
    scale = 1.0 / (1.0 - quantised_probability(0.25))
    torch.testing.assert_close(x.grad, upstream * kept * scale)
    assert len(saved) == 1  # the mask, not the input as well
    torch.testing.assert_close(saved[0], kept * scale)


def test_residual_add_is_the_residual_plus_the_dropped_input() -> None:
    """The fused residual site against ``residual + dropout(x)`` with the same generator state, for
    the value and both gradients; and the plain sum where no mask applies."""
    residual = torch.randn(40, 50, requires_grad=True)
    x = torch.randn(40, 50, requires_grad=True)
    torch.manual_seed(6)
    fused = add_dropout(residual, x, 0.1, training=True)
    upstream = torch.randn_like(fused)
    fused.backward(upstream)
    fused_grads = residual.grad.clone(), x.grad.clone()
    residual.grad = x.grad = None
    torch.manual_seed(6)
    plain = residual + dropout(x, 0.1, training=True)
    plain.backward(upstream)
    torch.testing.assert_close(fused, plain)
    torch.testing.assert_close(fused_grads[0], residual.grad)
    torch.testing.assert_close(fused_grads[1], x.grad)
    assert torch.equal(add_dropout(residual, x, 0.1, training=False), residual + x)
    assert torch.equal(Dropout(0.0).add(residual, x), residual + x)


def test_same_seed_same_mask_and_the_default_generator_advances() -> None:
    torch.manual_seed(4)
    first = keep_mask((10, 10), 0.1)
    second = keep_mask((10, 10), 0.1)
    torch.manual_seed(4)
    assert torch.equal(keep_mask((10, 10), 0.1), first)
    assert not torch.equal(first, second)


def test_identity_in_eval_and_at_zero_and_stock_behaviour_at_one() -> None:
    x = torch.randn(5, 7)
    module = Dropout(0.3).eval()
    assert module(x) is x
    assert dropout(x, 0.0, training=True) is x
    assert torch.equal(dropout(x, 1.0, training=True), F.dropout(x, 1.0, True))
    with pytest.raises(ValueError, match="dropout probability"):
        Dropout(1.5)


_FREE_A_LARGE_BLOCK = """
import ctypes, ctypes.util, os, sys
from nmtvariants.allocator import keep_freed_memory
if sys.argv[1] == "tuned":
    assert keep_freed_memory() and keep_freed_memory()  # a second call keeps the setting
libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes, libc.memset.argtypes = [ctypes.c_void_p], [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
def resident():
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
before, size = resident(), 64 << 20
block = libc.malloc(size)
libc.memset(block, 1, size)
libc.free(block)
print((resident() - before) >> 20)
"""


def test_allocator_tuning_keeps_a_freed_large_block_resident() -> None:
    """What the tuning is for, observed from outside: a freed 64 MB block stays mapped for reuse
    (instead of being unmapped and page-faulted back in on the next step), in a fresh process.
    Linux with glibc, as the module says; elsewhere the tuning is a no-op and this test says so."""

    def kept_mib(mode: str) -> int:
        result = subprocess.run(
            [sys.executable, "-c", _FREE_A_LARGE_BLOCK, mode],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        return int(result.stdout)

    assert kept_mib("plain") < 16  # glibc's default: mmap-backed, returned on free
    assert kept_mib("tuned") > 48
    assert keep_freed_memory() is True  # and in this process too (Linux, glibc)
