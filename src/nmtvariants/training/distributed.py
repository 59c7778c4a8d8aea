"""Data-parallel set-up from torchrun's environment: gloo on CPU, NCCL on CUDA.

``torchrun --nproc_per_node N -m nmtvariants train ...`` sets ``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``; a plain ``nmtvariants train`` sets none of
them and runs as a single process with no process group at all, so the single-process path pays
nothing for DDP support.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from nmtvariants.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    backend: str | None = None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def choose_device(requested: str, local_rank: int = 0) -> torch.device:
    """``auto`` -> this rank's CUDA device when there is one, else the CPU."""
    if requested == "auto":
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError("train.device: 'cuda' requested but torch sees no CUDA device")
        return torch.device("cuda", local_rank)
    if requested == "cpu":
        return torch.device("cpu")
    raise ConfigError(f"train.device: must be auto, cpu or cuda, got {requested!r}")


def init_distributed(device: str = "auto") -> DistInfo:
    """Join the process group described by torchrun's variables (if any) and pick the device."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    chosen = choose_device(device, local_rank)
    if chosen.type == "cuda":
        torch.cuda.set_device(chosen)
    if world_size == 1:
        return DistInfo(device=chosen)
    backend = "nccl" if chosen.type == "cuda" else "gloo"
    if not dist.is_initialized():
        dist.init_process_group(backend=backend, rank=rank, world_size=world_size)
    log.info("rank %d/%d on %s (%s)", rank, world_size, chosen, backend)
    return DistInfo(rank, world_size, local_rank, chosen, backend)


def process_info(device: str = "auto") -> DistInfo:
    """This process's :class:`DistInfo` without changing anything: the rank of a process group that
    :func:`init_distributed` already joined, else a single process on ``device``.

    For code handed no ``DistInfo`` (a :class:`~nmtvariants.training.trainer.Trainer` built in a
    test or a benchmark), which must not join a process group or switch the CUDA device itself.
    """
    if not dist.is_initialized():
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            raise ConfigError(
                "WORLD_SIZE > 1 but no process group: call training.process.setup_process first"
            )
        return DistInfo(device=choose_device(device))
    rank, world_size = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    chosen = choose_device(device, local_rank)
    return DistInfo(rank, world_size, local_rank, chosen, dist.get_backend())


def barrier(info: DistInfo) -> None:
    if info.distributed:
        dist.barrier()


def all_reduce_sum(values: torch.Tensor, info: DistInfo) -> torch.Tensor:
    """Sum a small tensor over ranks (validation statistics); identity on one process."""
    if info.distributed:
        values = values.clone()
        dist.all_reduce(values, op=dist.ReduceOp.SUM)
    return values


def shutdown(info: DistInfo) -> None:
    if info.distributed and dist.is_initialized():
        dist.destroy_process_group()
