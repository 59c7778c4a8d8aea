"""Kernel choices for the commands that run on batches of varying shape: bounded CPU kernel caches,
and no GPU attention kernel that is planned per shape."""

from __future__ import annotations

import os

KERNEL_CACHE_CAPACITY = {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "64", "LRU_CACHE_CAPACITY": "64"}
"""Entries of the two CPU kernel caches behind bf16 matmuls, unless the user sets the variables.

Why: on CPU, bf16 matmuls (under autocast in training, bf16 weights in translation) go through ideep
and oneDNN, and each keeps what it built for every input shape: oneDNN its compiled primitives
(ONEDNN_PRIMITIVE_CACHE_CAPACITY, default 1024), ideep its matmul computations with their buffers
(LRU_CACHE_CAPACITY, default 1024). With batch shapes that vary as real data's, both filled for the
whole run and resident memory grew with them (issue 14). Measured with benchmarks/train_memory.py
(small model, bf16, Multi30k-like lengths, 150 updates, 1 thread): bounding oneDNN alone left RSS
growing from 2.2 to 3.0 GB; bounding ideep too holds it at ~1.9 GB, at the same speed. One update
of the small model runs ~205 oneDNN matmuls of ~43 distinct primitives (ONEDNN_VERBOSE=1 over 6
updates), so 64 entries hold a step's working set while each cache stays bounded. Both libraries
read their variable when they first build a kernel (checked: a value set after `import torch` is
honoured), so `train` and `translate` (whose beam search sees new shapes at every step) set them
before their first matmul.
"""


def bound_kernel_caches() -> None:
    """Bound the CPU kernel caches (see :data:`KERNEL_CACHE_CAPACITY`); a user's values win."""
    for name, capacity in KERNEL_CACHE_CAPACITY.items():
        os.environ.setdefault(name, capacity)


def no_attention_plans_per_shape() -> None:
    """Keep ``F.scaled_dot_product_attention`` off cuDNN's attention on CUDA (flash, memory-efficient
    and math remain): cuDNN builds and caches an execution plan for every new input shape, and with the
    batch shapes of real data (125 distinct in 150 length-bucketed batches) that planning dominated.

    Measured on an H200 (``benchmarks/results/gpu_amp_shapes_h200.md``, 2026-11-27): the small model's
    bf16-autocast training step ran 29k target tokens/s with cuDNN allowed against 263k without it
    (fp32, which cuDNN's attention does not take, 301k); ``nmtvariants train`` on Multi30k, 150
    updates: 46k against 195k tokens/s, identical losses to three decimals. With one fixed shape the
    cost vanishes, so it is per shape, not per call. A process-wide switch of torch's, set by the
    commands before their first attention call; harmless without CUDA.
    """
    import torch

    torch.backends.cuda.enable_cudnn_sdp(False)
