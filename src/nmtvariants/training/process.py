"""Process-wide set-up for a training run, in one place that the ``train`` command calls once.

Why a separate step: torch's thread count, glibc's ``mallopt`` settings, the CPU kernel caches'
bounds and the process group belong to the process, not to one :class:`~nmtvariants.training.
trainer.Trainer`. Setting them inside the trainer's constructor meant that merely building a
trainer (in a test, a benchmark, an analysis) changed the caller's process behind its back. Here
they are set explicitly, by the command (or by :func:`nmtvariants.training.trainer.train`, the
Python equivalent), before the trainer is built; the trainer only reads the resulting
:class:`DistInfo`.
"""

from __future__ import annotations

import os

import torch

from nmtvariants.allocator import keep_freed_memory
from nmtvariants.kernel_caches import bound_kernel_caches, no_attention_plans_per_shape
from nmtvariants.training.distributed import DistInfo, init_distributed, shutdown
from nmtvariants.training.train_config import TrainSettings

__all__ = ["resolve_threads", "setup_process", "shutdown"]


def resolve_threads(requested: int | None) -> int | None:
    """``--threads``/``train.threads`` first, then ``OMP_NUM_THREADS``; None leaves torch's default."""
    if requested is None and os.environ.get("OMP_NUM_THREADS", "").isdigit():
        requested = int(os.environ["OMP_NUM_THREADS"])
    if requested:
        torch.set_num_threads(requested)
    return requested


def setup_process(train: TrainSettings) -> DistInfo:
    """Prepare this process for training with ``train``'s settings; return its rank and device.

    In this order: bound the CPU kernel caches (a user's variables win; before the first matmul,
    see :mod:`nmtvariants.kernel_caches`) and keep attention off kernels planned per shape, set
    torch's threads (:func:`resolve_threads`), keep freed memory in the process
    (:mod:`nmtvariants.allocator`), and join torchrun's process group
    if there is one (:func:`~nmtvariants.training.distributed.init_distributed`, which also makes
    this rank's CUDA device current). Pair it with :func:`shutdown` when training ends.
    """
    bound_kernel_caches()
    no_attention_plans_per_shape()
    resolve_threads(train.threads)
    keep_freed_memory()
    return init_distributed(train.device)
