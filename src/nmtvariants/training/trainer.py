"""The training loop: delayed updates, AMP, DDP, validation, early stopping and exact resume.

One update = a group of token-bucketed batches from :class:`UpdateStream` (all ranks' batches).
The summed label-smoothed loss of each batch, plus the weighted auxiliary loss terms that plug-ins
add (``model.aux_losses``, also sums over the batch), is scaled by ``world_size / total target
tokens of the group`` before ``backward``; DDP then averages over ranks, so the gradient is
exactly the token-normalised gradient of the whole group, whatever the split into delayed batches
and processes (tested against a single process to float tolerance). Each auxiliary term is logged
on its own (``aux_<name>``, per target token, weight included), in training and validation.

The encoders read a batch's :class:`SourceInputs` (several sources, integer streams such as parent
positions, a feature grid), named in the run config's ``data`` section and checked before training.

Resuming restores the model, Adam, the GradScaler, the update counter (the Noam schedule is a
function of it), every rank's RNG states (Python, NumPy, torch CPU and CUDA: dropout continues
with the same masks) and the data position, so a run killed with SIGKILL and restarted ends with
bit-identical parameters (tested with ``torch.equal``).

The parts live in their own modules: process set-up (threads, allocator, kernel caches, process
group) in :mod:`.process`, which the ``train`` command runs once before a :class:`Trainer` exists;
the builders of model, data, optimiser, schedule and loss module in :mod:`.build`; checkpoints
(save, keep_last, resume, averaging inputs) in :mod:`.checkpoint_manager`; validation in
:mod:`.validation`. This module wires them and runs the loop.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel

from nmtvariants.data.batching import Batch, BatchStream, UpdateStream, collate, width_multiple
from nmtvariants.data.vocab import Vocabulary
from nmtvariants.errors import ConfigError
from nmtvariants.training.build import (
    build_data,
    build_loss_module,
    build_model,
    build_optimizer,
    build_scaler,
    build_schedule,
)
from nmtvariants.training.checkpoint_manager import CHECKPOINT_FORMAT, CheckpointManager
from nmtvariants.training.data_digest import data_digest
from nmtvariants.training.distributed import DistInfo, all_reduce_sum, process_info, shutdown
from nmtvariants.training.logging_utils import TrainLogger, perplexity
from nmtvariants.training.objective import LossModule, autocast_context
from nmtvariants.training.process import resolve_threads, setup_process
from nmtvariants.training.run_state import TrainerState, seed_everything
from nmtvariants.training.train_config import RunConfig
from nmtvariants.training.validation import ValidationHook, add_terms, evaluate, reduce_terms

# names that callers import from here (the trainer's public surface before it was split up)
__all__ = [
    "CHECKPOINT_FORMAT",
    "LossModule",
    "TrainResult",
    "Trainer",
    "TrainerState",
    "ValidationHook",
    "evaluate",
    "resolve_threads",
    "train",
]

log = logging.getLogger(__name__)


@dataclass
class TrainResult:
    update: int
    stop_reason: str
    final_path: Path | None
    best: float | None
    last_valid: dict[str, float]


@dataclass
class LogWindow:
    """This rank's training sums since the last ``train`` row of the log."""

    loss: torch.Tensor
    nll: torch.Tensor
    aux: dict[str, torch.Tensor] = field(default_factory=dict)
    tokens: int = 0
    start: float = field(default_factory=time.perf_counter)

    @classmethod
    def on(cls, device: torch.device) -> LogWindow:
        return cls(torch.zeros((), device=device), torch.zeros((), device=device))

    def add(self, loss: torch.Tensor, nll: torch.Tensor, tokens: int, aux: dict[str, torch.Tensor]) -> None:
        self.loss += loss
        self.nll += nll
        add_terms(self.aux, aux)
        self.tokens += tokens

    def reset(self) -> None:
        self.loss.zero_()
        self.nll.zero_()
        self.aux = {}
        self.tokens, self.start = 0, time.perf_counter()


class Trainer:
    """Builds a run's parts from a :class:`RunConfig` and trains into ``outdir``.

    ``info`` comes from :func:`~nmtvariants.training.process.setup_process`; without it the trainer
    reads the process as it is (:func:`~nmtvariants.training.distributed.process_info`) and changes
    nothing process-wide besides seeding the generators, which the run's results depend on.
    """

    def __init__(
        self,
        config: RunConfig,
        outdir: str | Path,
        validation_hook: ValidationHook | None = None,
        info: DistInfo | None = None,
    ):
        self.config = config
        self.train_cfg = cfg = config.train
        self.outdir = Path(outdir)
        self.validation_hook = validation_hook
        self.info = info or process_info(cfg.device)
        if cfg.amp == "fp16" and self.info.device.type != "cuda":
            log.warning(
                "train.amp fp16 on %s: no speed-up expected; bf16 is the CPU choice", self.info.device
            )

        self.vocab = Vocabulary.load(config.data.vocab)
        seed_everything(cfg.seed)
        self.model_cfg, self.model = build_model(config, len(self.vocab), self.info.device)
        if self.info.distributed:  # same initial weights everywhere, different dropout masks per rank
            torch.manual_seed(cfg.seed + 7919 * self.info.rank)
        self.train_data, self.valid_data = build_data(config, self.vocab, self.model_cfg, self.model)
        self.optimizer = build_optimizer(self.model, cfg, self.info.device)
        self.schedule = build_schedule(cfg, self.model_cfg.d_model)
        self.scaler = build_scaler(cfg, self.info.device)
        self.data_digest = data_digest(config.data)
        self.checkpoints = CheckpointManager(
            self.outdir, self.info, cfg.keep_last, config.to_dict(), self.data_digest, list(self.vocab.itos)
        )
        self.ckpt_dir = self.checkpoints.directory
        self.state = TrainerState()
        self.resumed_from: Path | None = None
        resumed = self.checkpoints.resume(self.model, self.optimizer, self.scaler, cfg.seed)
        if resumed is not None:
            self.resumed_from, self.state = resumed
        self.loss_module = build_loss_module(self.model, cfg, self.info)
        self.width_multiple = width_multiple(self.info.device, cfg.amp != "none")
        self._last_lr = 0.0

    # ------------------------------------------------------------------ checkpoints
    def checkpoint_state(self) -> dict[str, Any]:
        """A training checkpoint's contents (the manager adds every rank's RNG states)."""
        return {
            "format_version": CHECKPOINT_FORMAT,
            "model_config": self.model_cfg.to_dict(),
            "vocab_size": len(self.vocab),
            "vocab": list(self.vocab.itos),
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict() if self.scaler.is_enabled() else None,
            "update": self.state.update,
            "trainer": self.state.as_dict(),
            "train_config": self.config.to_dict(),
            "data_digest": self.data_digest,
        }

    def save(self) -> Path | None:
        """Checkpoint the current update (rank 0 writes; all ranks contribute RNG states)."""
        return self.checkpoints.save(self.state.update, self.checkpoint_state)

    def write_final(self) -> Path | None:
        return self.checkpoints.write_final(self.checkpoint_state)

    # ------------------------------------------------------------------ one update
    def _train_update(
        self, group: list[np.ndarray]
    ) -> tuple[torch.Tensor, torch.Tensor, int, dict[str, torch.Tensor]]:
        """One optimiser step over ``group`` (this rank takes every world_size-th batch); returns
        this rank's summed loss and NLL, the group's target tokens and this rank's aux sums."""
        info, cfg = self.info, self.train_cfg
        tgt_lengths = self.train_data.tgt_lengths
        total_tokens = int(sum(int(tgt_lengths[b].sum()) for b in group))
        mine = group[info.rank :: info.world_size]
        lr = self.schedule.apply(self.optimizer, self.state.update + 1)
        scale = info.world_size / total_tokens
        loss_sum = torch.zeros((), dtype=torch.float32, device=info.device)
        nll_sum = torch.zeros((), dtype=torch.float32, device=info.device)
        aux_sums: dict[str, torch.Tensor] = {}
        for index, indices in enumerate(mine):
            batch: Batch = collate(self.train_data, indices, self.width_multiple).to(
                info.device, non_blocking=True
            )
            last = index == len(mine) - 1
            sync = (
                self.loss_module.no_sync()
                if isinstance(self.loss_module, DistributedDataParallel) and not last
                else contextlib.nullcontext()
            )
            with sync:
                with autocast_context(cfg.amp, info.device):
                    objective, loss, nll, aux = self.loss_module(batch.inputs, batch.tgt_in, batch.tgt_out)
                self.scaler.scale(objective * scale).backward()
            loss_sum += loss
            nll_sum += nll
            add_terms(aux_sums, aux)
        if cfg.clip_norm > 0:
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        self.state.update += 1
        self.state.tokens_seen += total_tokens
        self._last_lr = lr
        return loss_sum, nll_sum, total_tokens, aux_sums

    # ------------------------------------------------------------------ validation + early stop
    def validate(self) -> dict[str, float]:
        cfg = self.train_cfg
        metrics: dict[str, float] = {}
        if self.valid_data is not None:
            metrics = evaluate(
                self.model,
                self.valid_data,
                cfg.valid_batch_tokens or cfg.batch_tokens,
                cfg.label_smoothing,
                self.info,
                cfg.amp,
            )
        if self.validation_hook is not None:
            extra = torch.zeros(1, dtype=torch.float64, device=self.info.device)
            hooked: dict[str, float] = {}
            if self.info.is_main:
                was_training = self.model.training
                self.model.eval()
                hooked = dict(self.validation_hook(self.model, self.state.update))
                self.model.train(was_training)
                extra[0] = float(hooked.get("bleu", 0.0))
            metrics.update(hooked)
            if self.info.distributed:  # every rank must take the same early-stopping decision
                metrics["bleu"] = float(all_reduce_sum(extra, self.info)[0])
        return metrics

    def _early_stop(self, metrics: dict[str, float]) -> bool:
        """Track the best metric; True when ``patience`` validations in a row did not improve it."""
        key = self.train_cfg.early_stop_metric
        if key not in metrics:
            if self.train_cfg.patience:
                raise ConfigError(
                    f"train.early_stop_metric: {key!r} is not produced by this run's validation "
                    "(no valid data, or no BLEU hook)"
                )
            return False
        value = metrics[key]
        higher_better = key == "bleu"
        improved = self.state.best is None or (
            value > self.state.best if higher_better else value < self.state.best
        )
        if improved:
            self.state.best = value
            self.state.bad_validations = 0
            self.checkpoints.save_best(self.checkpoint_state)
        else:
            self.state.bad_validations += 1
        return bool(self.train_cfg.patience) and self.state.bad_validations >= self.train_cfg.patience

    # ------------------------------------------------------------------ the loop
    def _out_of_time(self, max_minutes: float) -> bool:
        """Whether the wall-clock budget is spent; every DDP rank takes the same decision."""
        over = torch.tensor(float(self.state.elapsed_s >= 60.0 * max_minutes), device=self.info.device)
        return bool(all_reduce_sum(over, self.info).item() > 0)

    def train(self) -> TrainResult:
        """Train until max_updates, max_epochs, early stopping or max_minutes; write final.pt."""
        cfg = self.train_cfg
        self.outdir.mkdir(parents=True, exist_ok=True)
        logger = TrainLogger(
            self.outdir,
            enabled=self.info.is_main,
            resume_update=self.state.update,
            tensorboard=cfg.tensorboard,
            progress=cfg.progress,
            total_updates=cfg.max_updates,
        )
        stream = BatchStream(
            self.train_data,
            cfg.batch_tokens,
            cfg.seed,
            cfg.maxi_batch,
            cfg.max_epochs,
            start=self.state.position,
        )
        updates = UpdateStream(stream, cfg.update_freq, cfg.effective_batch_tokens, self.info.world_size)
        self.loss_module.train()
        self._last_lr = 0.0
        if self.state.update == 0:
            self._log_start()
        try:
            last_valid = self._run(updates, logger)
            final = self.write_final() if self.state.update > 0 else None
        finally:
            logger.close()
        log.info("stopped at update %d (%s)", self.state.update, self.state.stop_reason)
        return TrainResult(
            self.state.update, self.state.stop_reason or "", final, self.state.best, last_valid
        )

    def _log_start(self) -> None:
        log.info(
            "training %s (%d parameters) on %d pairs, %d target tokens; %d process(es) on %s",
            self.model_cfg.variant or "baseline",
            sum(p.numel() for p in self.model.parameters()),
            len(self.train_data),
            self.train_data.target_token_count(),
            self.info.world_size,
            self.info.device,
        )

    def _run(self, updates: UpdateStream, logger: TrainLogger) -> dict[str, float]:
        """Update, log, validate and checkpoint until a stop reason is set; save the last update if
        it has no checkpoint yet. Returns the last validation's metrics."""
        cfg, state = self.train_cfg, self.state
        window = LogWindow.on(self.info.device)
        run_start = time.perf_counter() - state.elapsed_s
        last_valid: dict[str, float] = {}
        saved_at = state.update if self.resumed_from else -1
        while state.stop_reason is None:
            if state.update >= cfg.max_updates:
                state.stop_reason = "max_updates"
                break
            group = updates.next_update()
            if group is None:
                state.stop_reason = "max_epochs"
                break
            loss_sum, nll_sum, tokens, aux_sums = self._train_update(group)
            state.position = updates.position
            window.add(loss_sum, nll_sum, tokens, aux_sums)
            update = state.update
            self._log_train(window, logger, run_start)
            if update % cfg.valid_every == 0 and (self.valid_data is not None or self.validation_hook):
                last_valid = self._validate_and_check(logger, run_start)
            state.elapsed_s = time.perf_counter() - run_start
            if cfg.max_minutes is not None and self._out_of_time(cfg.max_minutes):
                state.stop_reason = "max_minutes"
            if update % cfg.save_every == 0 or state.stop_reason:
                self.save()
                saved_at = update
        state.elapsed_s = time.perf_counter() - run_start
        if saved_at != state.update and state.update > 0:
            self.save()
        return last_valid

    def _log_train(self, window: LogWindow, logger: TrainLogger, run_start: float) -> None:
        """A ``train`` row every ``log_every`` updates (and at the last), sums over all ranks."""
        cfg, info, update = self.train_cfg, self.info, self.state.update
        if not (update % cfg.log_every == 0 or update == cfg.max_updates):
            if logger.bar is not None:
                logger.progress(update)
            return
        sums = all_reduce_sum(torch.stack([window.loss, window.nll]).double(), info).tolist()
        now = time.perf_counter()
        row = {
            "update": update,
            "epoch": self.state.position.epoch,
            "split": "train",
            "loss": sums[0] / window.tokens,
            "nll": sums[1] / window.tokens,
            "ppl": perplexity(sums[1] / window.tokens),
            "lr": self._last_lr,
            "tokens": window.tokens,
            "tok_per_s": window.tokens / max(now - window.start, 1e-9),
            "elapsed_s": now - run_start,
        }
        aux_row = {
            f"aux_{name}": total / window.tokens for name, total in reduce_terms(window.aux, info).items()
        }
        row.update(aux_row)
        logger.record(row)
        logger.progress(update, loss=row["loss"], lr=row["lr"], tok_s=row["tok_per_s"], **aux_row)
        window.reset()

    def _validate_and_check(self, logger: TrainLogger, run_start: float) -> dict[str, float]:
        """Validate, log a ``valid`` row, and set the stop reason if early stopping says so."""
        update = self.state.update
        metrics = self.validate()
        stop = self._early_stop(metrics)
        logger.record(
            {
                "update": update,
                "epoch": self.state.position.epoch,
                "split": "valid",
                **metrics,
                "elapsed_s": time.perf_counter() - run_start,
            }
        )
        log.info("update %d: %s", update, ", ".join(f"{k} {v:.4g}" for k, v in metrics.items()))
        if stop:
            self.state.stop_reason = "early_stop"
            log.info(
                "early stop: %s did not improve for %d validations",
                self.train_cfg.early_stop_metric,
                self.train_cfg.patience,
            )
        return metrics


def train(
    config: RunConfig,
    outdir: str | Path,
    validation_hook: ValidationHook | None = None,
) -> TrainResult:
    """Train (or resume training) as configured; returns when max_updates/max_epochs/patience ends it.

    The whole run as the ``train`` command runs it: :func:`setup_process` once (threads, allocator,
    kernel caches, process group), the :class:`Trainer`, then leaving the process group.
    """
    info = setup_process(config.train)
    try:
        return Trainer(config, outdir, validation_hook, info).train()
    finally:
        shutdown(info)
