"""One beam-search step's self-attention, each hypothesis scored against its own ancestors' keys only.

The beam cache (:mod:`nmtvariants.models.decoder_cache`) never copies keys when beams are reordered;
its PyTorch path therefore scores a hypothesis against the keys of *every* beam slot at each position
(g times the products it keeps), picks its ancestor's score with a gather and spreads the softmax
weights back with a scatter. On the decode benchmark (64 sentences x 5 beams, 4 heads of 64, 15
positions, one Intel Xeon core) that step took ~1.5 ms a layer, of which the two batched products of
5-row matrices ran at ~21 GFLOP/s: a fifth of an int8 beam search (benchmarks/README.md, issue 23).

The native kernel (``beam_attention.c``) follows the ancestry table instead: for each hypothesis and
head it reads the ancestor's key and value at each position where they lie (one pass, no gather copy),
with the softmax in between, so it does a g-th of the products and none of the gather and scatter.
It handles the common case, one new position per row in float32 on the CPU with at most
``native.NATIVE_MAX_THREADS`` PyTorch threads (it is single-threaded); everything else takes the
PyTorch path. The two agree to float32 rounding (sums in another order): tests/test_beam_attention.py.
"""

from __future__ import annotations

import ctypes
import math
from pathlib import Path

import torch

from nmtvariants import native

SOURCE_FILE = Path(__file__).with_name("beam_attention.c")
FLAGS = ("-O3", "-march=native", "-fopenmp-simd")
PROFILER_LABEL = "nmtvariants::beam_attention"

_pointer, _size = ctypes.c_void_p, ctypes.c_int64
LIBRARY = native.NativeLibrary(
    "beam_attention",
    SOURCE_FILE,
    FLAGS,
    {"beam_attend": [_pointer] * 4 + [_size] * 7 + [ctypes.c_float, _pointer, _pointer]},
    libraries=("-lm",),
)


def attend_ancestors(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, slots: torch.Tensor, length: int
) -> torch.Tensor | None:
    """Attention of one new query per row over its ancestors' keys, or None where the kernel does not
    apply (the caller then takes its PyTorch path).

    ``q`` [rows, H, 1, d]; ``k``, ``v`` [sentences, H, >= length * g, d] (position-major, slot-minor);
    ``slots`` [sentences, g, >= length] long: the slot of each row's ancestor at each position.
    Returns [rows, H, 1, d].
    """
    rows, heads, new, d_head = q.shape
    sentences, group = slots.shape[0], slots.shape[1]
    if (
        new != 1
        or q.device.type != "cpu"
        or not (q.dtype == k.dtype == v.dtype == torch.float32)
        or torch.get_num_threads() > native.NATIVE_MAX_THREADS
        or not (k.is_contiguous() and v.is_contiguous() and slots.is_contiguous())
        or rows != sentences * group
    ):
        return None
    functions = LIBRARY.functions()
    if functions is None:
        return None
    q = q.contiguous()
    out = torch.empty_like(q)
    scratch = torch.empty(length + d_head)
    with torch.profiler.record_function(PROFILER_LABEL):
        functions["beam_attend"](
            q.data_ptr(), k.data_ptr(), v.data_ptr(), slots.data_ptr(),
            sentences, group, heads, d_head, length, k.size(2), slots.size(2),
            1.0 / math.sqrt(d_head), out.data_ptr(), scratch.data_ptr(),
        )  # fmt: skip
    return out
