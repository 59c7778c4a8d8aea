"""A run's checkpoints as one unit: saving (rank 0 writes, every rank's RNG inside), pruning to
``keep_last``, the best and final model files, resuming, and the inputs of averaging.

Why a class of its own: the policy (which file, when, which ranks take part, when old checkpoints
belong to another experiment) was spread over the trainer's constructor and loop. Here it lives
beside the directory it governs; the file format itself (atomic writes, sha256 sidecars) stays in
:mod:`nmtvariants.training.checkpoints`. The manager never builds a checkpoint's contents: callers
pass a function that does, called on rank 0 only (as before, the other ranks build nothing).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from nmtvariants.training import checkpoints as ckpt
from nmtvariants.training.data_digest import digest_conflicts
from nmtvariants.training.distributed import DistInfo, barrier
from nmtvariants.training.run_state import TrainerState, rng_state, seed_everything, set_rng_state
from nmtvariants.training.train_config import resume_conflicts

log = logging.getLogger(__name__)

CHECKPOINT_FORMAT = 1

StateFactory = Callable[[], dict[str, Any]]


class CheckpointManager:
    """``outdir/checkpoints/checkpoint_<update>.pt`` (+ ``checkpoint_best.pt``) and ``outdir/final.pt``.

    ``config``, ``data_digest`` and ``vocab`` identify the experiment: checkpoints written under
    another one are set aside instead of resumed (see :meth:`_set_aside_if_foreign`).
    """

    def __init__(
        self,
        outdir: str | Path,
        info: DistInfo,
        keep_last: int,
        config: dict[str, Any],
        data_digest: dict[str, str],
        vocab: list[str],
    ):
        self.outdir = Path(outdir)
        self.directory = self.outdir / "checkpoints"
        self.info = info
        self.keep_last = keep_last
        self.config = config
        self.data_digest = data_digest
        self.vocab = vocab

    # ------------------------------------------------------------------ writing
    def save(self, update: int, make_state: StateFactory) -> Path | None:
        """Checkpoint ``update`` (rank 0 writes; all ranks contribute RNG states) and prune."""
        rngs = self._gather_rng()
        path = None
        if self.info.is_main:
            state = make_state()
            state["rng"] = rngs
            path = ckpt.save_checkpoint(state, ckpt.checkpoint_path(self.directory, update))
            ckpt.prune_checkpoints(self.directory, self.keep_last)
        barrier(self.info)
        return path

    def save_best(self, make_state: StateFactory) -> Path | None:
        """The model file of the best validation so far (rank 0 only; no collective call)."""
        if not self.info.is_main:
            return None
        return ckpt.save_checkpoint(ckpt.model_file(make_state()), self.directory / "checkpoint_best.pt")

    def write_final(self, make_state: StateFactory) -> Path | None:
        """``final.pt``, the model file a finished run declares (rank 0 only)."""
        if not self.info.is_main:
            return None
        return ckpt.save_checkpoint(ckpt.model_file(make_state()), self.outdir / "final.pt")

    def _gather_rng(self) -> list[dict[str, Any]]:
        mine = rng_state()
        if not self.info.distributed:
            return [mine]
        everyone: list[Any] = [None] * self.info.world_size
        dist.all_gather_object(everyone, mine)
        return everyone

    # ------------------------------------------------------------------ reading
    def last(self, k: int) -> list[Path]:
        """The inputs of averaging: the newest ``k`` checkpoints that verify, oldest first."""
        return ckpt.last_checkpoints(self.directory, k)

    def resume(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        scaler: torch.amp.GradScaler,
        seed: int,
    ) -> tuple[Path, TrainerState] | None:
        """Load the newest valid checkpoint of this experiment into ``model``, ``optimizer`` and
        ``scaler`` and restore this rank's RNG streams; return it with the trainer's progress, or
        None (nothing to resume, or only another experiment's checkpoints, now set aside).

        ``seed`` (train.seed) reseeds the streams when the checkpoint holds another number of
        ranks' states than this run has.
        """
        found = ckpt.latest_valid_checkpoint(self.directory)
        if found is None:
            return None
        path, state = found
        if self._set_aside_if_foreign(state):
            return None
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        if state.get("scaler"):
            scaler.load_state_dict(state["scaler"])
        progress = TrainerState.from_dict(state["trainer"])
        if progress.stop_reason in ("max_updates", "max_epochs", "max_minutes"):
            progress.stop_reason = None  # re-checked against this run's (maybe larger) limits
        self._restore_rng(path, state.get("rng") or [], seed + progress.update)
        log.info(
            "resumed from %s (update %d, epoch %d, batch %d)",
            path,
            progress.update,
            progress.position.epoch,
            progress.position.batch,
        )
        return path, progress

    def _restore_rng(self, path: Path, rngs: list[dict[str, Any]], seed: int) -> None:
        if len(rngs) == self.info.world_size:
            set_rng_state(rngs[self.info.rank])
            return
        log.warning(
            "%s was written by %d processes, this run has %d: RNG streams restart from the seed",
            path,
            len(rngs),
            self.info.world_size,
        )
        seed_everything(seed + 7919 * self.info.rank)

    def _set_aside_if_foreign(self, state: dict[str, Any]) -> bool:
        """Move checkpoints written under another configuration, or on other data, out of the way;
        True if moved.

        Snakemake re-runs a training job when its parameters or its input files change; resuming
        from the old run's checkpoints would silently mix two experiments, so they are kept (renamed)
        but not used.
        """
        conflicts = resume_conflicts(state.get("train_config") or {}, self.config)
        conflicts += digest_conflicts(state.get("data_digest"), self.data_digest)
        if state.get("vocab") not in (None, self.vocab):  # checkpoints from before digests
            conflicts.append(f"vocabulary: {len(state['vocab'])} -> {len(self.vocab)} entries or their order")
        if not conflicts:
            return False
        barrier(self.info)
        if self.info.is_main:
            stale = self.directory.with_name(f"checkpoints.stale-{time.strftime('%Y%m%d-%H%M%S')}")
            self.directory.rename(stale)
            log.warning(
                "%s were written with another configuration (%s); moved to %s, training from scratch",
                self.directory,
                "; ".join(conflicts[:5]),
                stale,
            )
        barrier(self.info)
        return True
