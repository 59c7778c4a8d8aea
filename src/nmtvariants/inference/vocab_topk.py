"""Beam search's pass over the vocabulary: each row's best next tokens as log-probabilities.

A beam-search step needs, of every hypothesis' logits row, only its ``2K`` best tokens and the row's
log-normaliser (log-softmax is monotone within a row, so the sentence's ``2K`` best continuations
are among its beams' ``2K`` best each). PyTorch does that in passes that each walk the whole
``[rows, V]`` matrix: log-softmax writes a second matrix, the beam scores are added to it, and top-k
sorts (value, index) pairs of every row. On the CPU those passes cost as much as a tenth of a
beam-search step (``benchmarks/results/decode_ct2_profile_zen4.md``: 0.6 s of a 5.6 s pass).

The native kernel (``vocab_topk.c``, built by :mod:`nmtvariants.native` for the host's instruction
set) reads each row in place twice: once for its best entries (one vector comparison against the
current r-th best per 16 logits), once for the sum of exponentials (glibc's vector ``expf``). On the
decode benchmark's shape, 320 rows of 8,004 logits on one Zen 4 core, it takes 1.9 ms against
6.1 ms for log-softmax and top-k as beam search did them (``benchmarks/vocab_topk.py``: 2.1-2.8x
over 3,000 to 37,000 types). It runs single-threaded, so it is used while PyTorch has at most
``native.NATIVE_MAX_THREADS`` threads: at two, PyTorch's passes on both cores are still 1.35-2.6x slower
than the kernel on one (``results/vocab_topk_2threads.md``). Sharing the rows among Python threads
(the ctypes call releases the GIL) did not pay: PyTorch's OpenMP workers spin on the cores after
each operator. On a GPU, with more threads, or without a compiler PyTorch's operators run, per row
(1.05-1.3x the time of the former top-k per sentence on one CPU thread, the price of one code path).

Both paths give the same tokens (up to the order of equal logits; the kernel puts the lower id first)
and log-probabilities equal to rounding (the normaliser's sum runs in another order):
tests/test_vocab_topk.py checks them against each other and against a float64 computation.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from pathlib import Path

import torch

from nmtvariants import native

SOURCE_FILE = Path(__file__).with_name("vocab_topk.c")
FLAGS = ("-O3", "-march=native", "-fopenmp-simd")
LIBRARY_NAME = "vocab_topk"
PROFILER_LABEL = "nmtvariants::vocab_topk"

_pointer, _size = ctypes.c_void_p, ctypes.c_int64
LIBRARY = native.NativeLibrary(
    LIBRARY_NAME,
    SOURCE_FILE,
    FLAGS,
    {"top_log_probs": [_pointer, _size, _size, _size, _pointer, _size, _pointer, _pointer, _pointer]},
    libraries=("-lm",),
)


def status() -> str:
    """Which path the CPU pass takes in this process (loads the kernel if it was not yet)."""
    return LIBRARY.status


def top_log_probs(
    logits: torch.Tensor, count: int, banned: Sequence[int] = ()
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Of each row of ``logits`` [N, V]: the ``count`` best tokens outside ``banned`` (ids), best
    first, as (log-probabilities [N, count], token ids [N, count], log-normaliser [N]).

    The log-normaliser (log-sum-exp) runs over every token, banned ones included, as log-softmax
    does; a row with fewer than ``count`` allowed tokens is filled with -inf (token 0).
    ``logits`` is not modified.
    """
    rows, vocab = logits.shape
    if not 1 <= count <= vocab:
        raise ValueError(f"count must be in 1..{vocab}, got {count}")
    functions = (
        LIBRARY.functions()
        if logits.device.type == "cpu"
        and logits.dtype == torch.float32
        and torch.get_num_threads() <= native.NATIVE_MAX_THREADS
        else None
    )
    if functions is None:
        return _torch_top_log_probs(logits, count, banned)
    logits = logits.contiguous()
    values = torch.empty(rows, count)
    tokens = torch.empty(rows, count, dtype=torch.long)
    normaliser = torch.empty(rows)
    banned_ids = torch.tensor(list(banned), dtype=torch.long)
    with torch.profiler.record_function(PROFILER_LABEL):  # else torch.profiler cannot see the call
        functions["top_log_probs"](
            logits.data_ptr(), rows, vocab, count, banned_ids.data_ptr(), banned_ids.numel(),
            values.data_ptr(), tokens.data_ptr(), normaliser.data_ptr(),
        )  # fmt: skip
    return values.sub_(normaliser[:, None]), tokens, normaliser


def _torch_top_log_probs(
    logits: torch.Tensor, count: int, banned: Sequence[int]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The same with PyTorch's own operators (GPU, many threads, no compiler): log-softmax, banned
    tokens masked in place, top-k per row; the normaliser is read off the best token (logit minus
    log-probability), which costs no further pass over the row."""
    logits = logits.float()
    log_probs = torch.log_softmax(logits, dim=-1)
    if banned:
        log_probs[:, list(banned)] = float("-inf")
    values, tokens = log_probs.topk(count, dim=1)
    normaliser = (logits.gather(1, tokens[:, :1]) - values[:, :1]).squeeze(1)
    return values, tokens.masked_fill(values == float("-inf"), 0), normaliser
