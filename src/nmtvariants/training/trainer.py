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
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from nmtvariants.data.batching import (
    Batch,
    BatchStream,
    DataPosition,
    UpdateStream,
    collate,
    epoch_batches,
)
from nmtvariants.data.dataset import ParallelData, binarize, check_ids
from nmtvariants.data.extra_inputs import ExtraInputFiles, model_feature_channels
from nmtvariants.data.vocab import PAD_ID, Vocabulary
from nmtvariants.errors import ConfigError
from nmtvariants.models import build_model, model_config
from nmtvariants.models.interfaces import SourceInputs
from nmtvariants.training import checkpoints as ckpt
from nmtvariants.training.data_digest import data_digest, digest_conflicts
from nmtvariants.training.distributed import DistInfo, all_reduce_sum, barrier, process_info, shutdown
from nmtvariants.training.logging_utils import TrainLogger, perplexity
from nmtvariants.training.loss import projected_label_smoothed_nll
from nmtvariants.training.process import resolve_threads, setup_process
from nmtvariants.training.schedule import NoamSchedule, scale_for_peak
from nmtvariants.training.train_config import RunConfig, TrainSettings, resume_conflicts

# re-exported: callers import it from here
__all__ = [
    "LossModule",
    "TrainResult",
    "Trainer",
    "TrainerState",
    "ValidationHook",
    "resolve_threads",
    "train",
]

log = logging.getLogger(__name__)

CHECKPOINT_FORMAT = 1

# A hook the lead can wire for validation BLEU: (model in eval mode, update) -> {"bleu": 27.3, ...}.
# Called on rank 0 only; its numbers are logged and "bleu" can drive early stopping.
ValidationHook = Callable[[nn.Module, int], dict[str, float]]


class LossModule(nn.Module):
    """Model + loss in one ``forward`` so that DDP sees every parameter used inside its forward.

    The output projection (the costliest matmul for small models) runs only on the non-pad target
    positions, fused with the loss (``projected_label_smoothed_nll``): no ``[tokens, V]`` logits
    are kept for the backward. Plug-ins' auxiliary terms are collected during the same forward.

    Returns ``(objective, loss, nll, aux)``: the summed objective to back-propagate (the smoothed
    loss plus every ``weight * term``), the smoothed loss alone, the NLL (both detached), and the
    weighted auxiliary terms by name (detached), all sums over the batch.
    """

    def __init__(self, model: nn.Module, epsilon: float):
        super().__init__()
        self.model = model
        self.epsilon = epsilon

    def forward(
        self, inputs: SourceInputs | torch.Tensor, tgt_in: torch.Tensor, tgt_out: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        inputs = SourceInputs.of(inputs)
        recorder = self.model.aux_losses
        recorder.take()  # nothing left over from an interrupted forward
        recorder.active = True
        try:
            memories = self.model.encode_inputs(inputs)
            states = self.model.decode_states(tgt_in, memories, aux=inputs.aux)
            keep = tgt_out.ne(PAD_ID)
            loss, nll = projected_label_smoothed_nll(
                states[keep], self.model.output_weight, tgt_out[keep], self.epsilon
            )
        finally:
            recorder.active = False
        objective = loss
        aux: dict[str, torch.Tensor] = {}
        for name, (total, weight) in sorted(recorder.take().items()):
            term = weight * total.float()
            objective = objective + term
            aux[name] = term.detach()
        return objective, loss.detach(), nll, aux


@dataclass
class TrainerState:
    """Everything besides tensors that a resumed run needs to continue exactly."""

    update: int = 0
    position: DataPosition = field(default_factory=DataPosition)
    best: float | None = None
    bad_validations: int = 0
    stop_reason: str | None = None
    tokens_seen: int = 0
    elapsed_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "update": self.update,
            "position": self.position.as_dict(),
            "best": self.best,
            "bad_validations": self.bad_validations,
            "stop_reason": self.stop_reason,
            "tokens_seen": self.tokens_seen,
            "elapsed_s": self.elapsed_s,
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> TrainerState:
        return cls(
            update=int(state["update"]),
            position=DataPosition.from_dict(state["position"]),
            best=state.get("best"),
            bad_validations=int(state.get("bad_validations", 0)),
            stop_reason=state.get("stop_reason"),
            tokens_seen=int(state.get("tokens_seen", 0)),
            elapsed_s=float(state.get("elapsed_s", 0.0)),
        )


@dataclass
class TrainResult:
    update: int
    stop_reason: str
    final_path: Path | None
    best: float | None
    last_valid: dict[str, float]


# ---------------------------------------------------------------------- RNG state
def rng_state() -> dict[str, Any]:
    """This process's generators in a weights_only-loadable form (tensors, ints, lists)."""
    np_state = np.random.get_state(legacy=True)
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": [np_state[0], torch.from_numpy(np_state[1].astype(np.int64)), *np_state[2:]],
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(_as_tuple(state["python"]))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), int(pos), int(has_gauss), float(cached)))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _as_tuple(value: Any) -> Any:
    return tuple(_as_tuple(v) for v in value) if isinstance(value, list | tuple) else value


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


# ---------------------------------------------------------------------- set-up helpers
def extra_input_files(config: RunConfig, split: str, feature_channels: int | None = None) -> ExtraInputFiles:
    """The extra inputs the run config names for ``split`` (train or valid)."""
    data = config.data
    return ExtraInputFiles(
        aux=getattr(data, f"{split}_aux"),
        aux_labels=data.aux_labels,
        sources=getattr(data, f"{split}_sources"),
        features=getattr(data, f"{split}_features"),
        feature_index=getattr(data, f"{split}_feature_index"),
        feature_channels=feature_channels,
    )


def _load_split(
    config: RunConfig, split: str, vocab: Vocabulary, max_len: int, feature_channels: int | None
) -> ParallelData:
    data = config.data
    binarised = getattr(data, f"{split}_bin")
    extras = extra_input_files(config, split, feature_channels)
    if binarised:
        loaded = ParallelData.load(binarised)
        check_ids(loaded, len(vocab), binarised)
        if extras.features is not None:
            loaded.use_features(extras.features, feature_channels)
        elif loaded.feature_rows is not None:
            raise ConfigError(f"data.{split}_features: {binarised} has feature rows; name the feature file")
        return loaded
    src, tgt = getattr(data, f"{split}_src"), getattr(data, f"{split}_tgt")
    return binarize(src, tgt, vocab, max_len=max_len, extras=extras)


def load_data(
    config: RunConfig, vocab: Vocabulary, max_positions: int, feature_channels: int | None = None
) -> tuple[ParallelData, ParallelData | None]:
    """Binarise (or load) the training and validation pairs with their extra inputs, all checked
    here, before training starts; drop pairs the model cannot embed."""
    data, train = config.data, config.train
    limit = max_positions - 1  # </s> takes one position
    max_len = min(train.max_len, limit) if train.max_len else limit
    train_data = _load_split(config, "train", vocab, max_len, feature_channels)
    valid_data = None
    if data.valid_bin or data.valid_src:
        valid_data = _load_split(config, "valid", vocab, limit, feature_channels)
        if sorted(valid_data.aux) != sorted(train_data.aux) or len(valid_data.sources) != len(
            train_data.sources
        ):
            raise ConfigError(
                f"data: the validation data has streams {sorted(valid_data.aux)} and "
                f"{1 + len(valid_data.sources)} source(s), the training data {sorted(train_data.aux)} and "
                f"{1 + len(train_data.sources)}; give both the same extra inputs"
            )
    return train_data, valid_data


def check_model_inputs(model: nn.Module, data: ParallelData, split: str) -> None:
    """The data must feed every encoder of the model: as many sources, and features iff it reads them."""
    spec = getattr(model, "multi_source", None)  # the parsed variant.multi_source of a multi-encoder model
    if spec is None:
        return
    sources = 1 + len(data.sources)
    if sources != spec.sources:
        raise ConfigError(
            f"data.{split}_sources: the {split} data has {sources} source(s), but the model has "
            f"{spec.sources} text encoder(s) (variant.multi_source.sources); name one file per further source"
        )
    if (data.feature_rows is not None) != (spec.feature_channels is not None):
        needed = "needs" if spec.feature_channels is not None else "has no encoder for"
        raise ConfigError(
            f"data.{split}_features: the model {needed} a feature grid (variant.multi_source.features)"
        )


def make_optimizer(model: nn.Module, train: TrainSettings, device: torch.device) -> torch.optim.Adam:
    """Adam (0.9, 0.98, 1e-9 by default), fused kernels where torch has them for the device."""
    return torch.optim.Adam(
        model.parameters(),
        lr=0.0,
        betas=tuple(train.adam_betas),
        eps=train.adam_eps,
        weight_decay=train.weight_decay,
        fused=device.type in ("cpu", "cuda"),
    )


def autocast_context(amp: str, device: torch.device):
    if amp == "none":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if amp == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


# ---------------------------------------------------------------------- validation
@torch.no_grad()
def evaluate(
    model: nn.Module,
    data: ParallelData,
    batch_tokens: int,
    epsilon: float,
    info: DistInfo,
    amp: str = "none",
) -> dict[str, float]:
    """Per-token NLL (no smoothing), label-smoothed loss and auxiliary terms on ``data``, sharded
    over ranks."""
    loss_module = LossModule(model, epsilon)
    was_training = model.training
    model.eval()
    batches = epoch_batches(
        data.src_lengths, data.tgt_lengths, batch_tokens, 0, 0, maxi_batch=0, shuffle=False
    )
    totals = torch.zeros(3, dtype=torch.float64, device=info.device)
    aux_sums: dict[str, torch.Tensor] = {}
    for indices in batches[info.rank :: info.world_size]:
        batch = collate(data, indices).to(info.device)
        with autocast_context(amp, info.device):
            _, loss, nll, aux = loss_module(batch.inputs, batch.tgt_in, batch.tgt_out)
        add_terms(aux_sums, aux)
        totals += torch.stack(
            [
                loss.double(),
                nll.double(),
                torch.tensor(batch.num_tokens, device=info.device, dtype=torch.float64),
            ]
        )
    totals = all_reduce_sum(totals, info).tolist()
    terms = reduce_terms(aux_sums, info)
    model.train(was_training)
    tokens = max(totals[2], 1.0)
    metrics = {
        "valid_loss": totals[0] / tokens,
        "valid_nll": totals[1] / tokens,
        "valid_ppl": perplexity(totals[1] / tokens),
        "valid_tokens": int(totals[2]),
    }
    metrics.update({f"valid_aux_{name}": total / tokens for name, total in terms.items()})
    return metrics


def add_terms(sums: dict[str, torch.Tensor], terms: dict[str, torch.Tensor]) -> None:
    """Accumulate auxiliary terms by name (in float64)."""
    for name, value in terms.items():
        sums[name] = sums[name] + value.double() if name in sums else value.double()


def reduce_terms(sums: dict[str, torch.Tensor], info: DistInfo) -> dict[str, float]:
    """Sum auxiliary terms over ranks; a term some rank never saw counts 0 there (the names are
    gathered first, so that every rank reduces a tensor of the same size)."""
    names = sorted(sums)
    if info.distributed:
        everyone: list[Any] = [None] * info.world_size
        dist.all_gather_object(everyone, names)
        names = sorted(set().union(*everyone))
    if not names:
        return {}
    stacked = torch.stack(
        [sums.get(name, torch.zeros((), dtype=torch.float64, device=info.device)) for name in names]
    )
    return dict(zip(names, all_reduce_sum(stacked, info).tolist(), strict=True))


# ---------------------------------------------------------------------- the trainer
class Trainer:
    """Builds everything from a :class:`RunConfig` and trains into ``outdir``.

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
        self.train_cfg = config.train
        self.outdir = Path(outdir)
        self.ckpt_dir = self.outdir / "checkpoints"
        self.validation_hook = validation_hook
        self.info = info or process_info(self.train_cfg.device)
        if self.train_cfg.amp == "fp16" and self.info.device.type != "cuda":
            log.warning(
                "train.amp fp16 on %s: no speed-up expected; bf16 is the CPU choice", self.info.device
            )

        self.vocab = Vocabulary.load(config.data.vocab)
        seed_everything(self.train_cfg.seed)
        self.model_cfg = model_config(
            config.model.get("preset", "base"),
            overrides={k: v for k, v in config.model.items() if k != "preset"},
            variant=config.variant,
        )
        self.model = build_model(self.model_cfg, vocab_size=len(self.vocab)).to(self.info.device)
        if self.info.distributed:  # same initial weights everywhere, different dropout masks per rank
            torch.manual_seed(self.train_cfg.seed + 7919 * self.info.rank)
        self.train_data, self.valid_data = load_data(
            config, self.vocab, self.model_cfg.max_positions, model_feature_channels(self.model)
        )
        check_model_inputs(self.model, self.train_data, "train")
        if self.valid_data is not None:
            check_model_inputs(self.model, self.valid_data, "valid")
        self.optimizer = make_optimizer(self.model, self.train_cfg, self.info.device)
        peak = self.train_cfg.lr_peak
        scale = (
            scale_for_peak(peak, self.model_cfg.d_model, self.train_cfg.warmup)
            if peak
            else self.train_cfg.lr_scale
        )
        self.schedule = NoamSchedule(self.model_cfg.d_model, self.train_cfg.warmup, scale)
        self.scaler = torch.amp.GradScaler(self.info.device.type, enabled=self.train_cfg.amp == "fp16")
        self.state = TrainerState()
        self.resumed_from: Path | None = None
        self.data_digest = data_digest(config.data)
        self._resume()
        loss_module: nn.Module = LossModule(self.model, self.train_cfg.label_smoothing)
        if self.train_cfg.compile:
            loss_module = torch.compile(loss_module, dynamic=True)
        if self.info.distributed:
            device_ids = [self.info.device.index] if self.info.device.type == "cuda" else None
            loss_module = DistributedDataParallel(loss_module, device_ids=device_ids)
        self.loss_module = loss_module

    # ------------------------------------------------------------------ checkpoints
    def _set_aside_foreign_checkpoints(self, state: dict[str, Any]) -> bool:
        """Move checkpoints written under another configuration, or on other data, out of the way;
        True if moved.

        Snakemake re-runs a training job when its parameters or its input files change; resuming
        from the old run's checkpoints would silently mix two experiments, so they are kept (renamed)
        but not used.
        """
        conflicts = resume_conflicts(state.get("train_config") or {}, self.config.to_dict())
        conflicts += digest_conflicts(state.get("data_digest"), self.data_digest)
        if state.get("vocab") not in (None, list(self.vocab.itos)):  # checkpoints from before digests
            conflicts.append(f"vocabulary: {len(state['vocab'])} -> {len(self.vocab)} entries or their order")
        if not conflicts:
            return False
        barrier(self.info)
        if self.info.is_main:
            stale = self.ckpt_dir.with_name(f"checkpoints.stale-{time.strftime('%Y%m%d-%H%M%S')}")
            self.ckpt_dir.rename(stale)
            log.warning(
                "%s were written with another configuration (%s); moved to %s, training from scratch",
                self.ckpt_dir,
                "; ".join(conflicts[:5]),
                stale,
            )
        barrier(self.info)
        return True

    def _resume(self) -> None:
        found = ckpt.latest_valid_checkpoint(self.ckpt_dir)
        if found is None:
            return
        path, state = found
        if self._set_aside_foreign_checkpoints(state):
            return
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        if state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])
        self.state = TrainerState.from_dict(state["trainer"])
        if self.state.stop_reason in ("max_updates", "max_epochs", "max_minutes"):
            self.state.stop_reason = None  # re-checked against this run's (maybe larger) limits
        rngs = state.get("rng") or []
        if len(rngs) == self.info.world_size:
            set_rng_state(rngs[self.info.rank])
        else:
            log.warning(
                "%s was written by %d processes, this run has %d: RNG streams restart from the seed",
                path,
                len(rngs),
                self.info.world_size,
            )
            seed_everything(self.train_cfg.seed + self.state.update + 7919 * self.info.rank)
        self.resumed_from = path
        log.info(
            "resumed from %s (update %d, epoch %d, batch %d)",
            path,
            self.state.update,
            self.state.position.epoch,
            self.state.position.batch,
        )

    def _gather_rng(self) -> list[dict[str, Any]]:
        mine = rng_state()
        if not self.info.distributed:
            return [mine]
        everyone: list[Any] = [None] * self.info.world_size
        dist.all_gather_object(everyone, mine)
        return everyone

    def checkpoint_state(self) -> dict[str, Any]:
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
        rngs = self._gather_rng()
        path = None
        if self.info.is_main:
            state = self.checkpoint_state()
            state["rng"] = rngs
            path = ckpt.save_checkpoint(state, ckpt.checkpoint_path(self.ckpt_dir, self.state.update))
            ckpt.prune_checkpoints(self.ckpt_dir, self.train_cfg.keep_last)
        barrier(self.info)
        return path

    def write_final(self) -> Path | None:
        if not self.info.is_main:
            return None
        state = ckpt.model_file(self.checkpoint_state())
        return ckpt.save_checkpoint(state, self.outdir / "final.pt")

    # ------------------------------------------------------------------ one update
    def _train_update(
        self, group: list[np.ndarray]
    ) -> tuple[torch.Tensor, torch.Tensor, int, dict[str, torch.Tensor]]:
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
            batch: Batch = collate(self.train_data, indices).to(info.device, non_blocking=True)
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
            if self.info.is_main:
                ckpt.save_checkpoint(
                    ckpt.model_file(self.checkpoint_state()), self.ckpt_dir / "checkpoint_best.pt"
                )
        else:
            self.state.bad_validations += 1
        return bool(self.train_cfg.patience) and self.state.bad_validations >= self.train_cfg.patience

    # ------------------------------------------------------------------ the loop
    def _out_of_time(self, max_minutes: float) -> bool:
        """Whether the wall-clock budget is spent; every DDP rank takes the same decision."""
        over = torch.tensor(float(self.state.elapsed_s >= 60.0 * max_minutes), device=self.info.device)
        return bool(all_reduce_sum(over, self.info).item() > 0)

    def train(self) -> TrainResult:
        cfg, info = self.train_cfg, self.info
        self.outdir.mkdir(parents=True, exist_ok=True)
        logger = TrainLogger(
            self.outdir,
            enabled=info.is_main,
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
        updates = UpdateStream(stream, cfg.update_freq, cfg.effective_batch_tokens, info.world_size)
        self.loss_module.train()
        last_valid: dict[str, float] = {}
        saved_at = self.state.update if self.resumed_from else -1
        window_loss = torch.zeros((), device=info.device)
        window_nll = torch.zeros((), device=info.device)
        window_aux: dict[str, torch.Tensor] = {}
        window_tokens, window_start = 0, time.perf_counter()
        run_start = time.perf_counter() - self.state.elapsed_s
        self._last_lr = 0.0
        if self.state.update == 0:
            log.info(
                "training %s (%d parameters) on %d pairs, %d target tokens; %d process(es) on %s",
                self.model_cfg.variant or "baseline",
                sum(p.numel() for p in self.model.parameters()),
                len(self.train_data),
                self.train_data.target_token_count(),
                info.world_size,
                info.device,
            )
        try:
            while self.state.stop_reason is None:
                if self.state.update >= cfg.max_updates:
                    self.state.stop_reason = "max_updates"
                    break
                group = updates.next_update()
                if group is None:
                    self.state.stop_reason = "max_epochs"
                    break
                loss_sum, nll_sum, tokens, aux_sums = self._train_update(group)
                self.state.position = updates.position
                window_loss += loss_sum
                window_nll += nll_sum
                add_terms(window_aux, aux_sums)
                window_tokens += tokens
                update = self.state.update
                if update % cfg.log_every == 0 or update == cfg.max_updates:
                    sums = all_reduce_sum(torch.stack([window_loss, window_nll]).double(), info).tolist()
                    now = time.perf_counter()
                    row = {
                        "update": update,
                        "epoch": self.state.position.epoch,
                        "split": "train",
                        "loss": sums[0] / window_tokens,
                        "nll": sums[1] / window_tokens,
                        "ppl": perplexity(sums[1] / window_tokens),
                        "lr": self._last_lr,
                        "tokens": window_tokens,
                        "tok_per_s": window_tokens / max(now - window_start, 1e-9),
                        "elapsed_s": now - run_start,
                    }
                    aux_row = {
                        f"aux_{name}": total / window_tokens
                        for name, total in reduce_terms(window_aux, info).items()
                    }
                    row.update(aux_row)
                    logger.record(row)
                    logger.progress(update, loss=row["loss"], lr=row["lr"], tok_s=row["tok_per_s"], **aux_row)
                    window_loss.zero_()
                    window_nll.zero_()
                    window_aux = {}
                    window_tokens, window_start = 0, time.perf_counter()
                elif logger.bar is not None:
                    logger.progress(update)
                if update % cfg.valid_every == 0 and (self.valid_data is not None or self.validation_hook):
                    last_valid = self.validate()
                    stop = self._early_stop(last_valid)
                    logger.record(
                        {
                            "update": update,
                            "epoch": self.state.position.epoch,
                            "split": "valid",
                            **last_valid,
                            "elapsed_s": time.perf_counter() - run_start,
                        }
                    )
                    log.info(
                        "update %d: %s", update, ", ".join(f"{k} {v:.4g}" for k, v in last_valid.items())
                    )
                    if stop:
                        self.state.stop_reason = "early_stop"
                        log.info(
                            "early stop: %s did not improve for %d validations",
                            cfg.early_stop_metric,
                            cfg.patience,
                        )
                self.state.elapsed_s = time.perf_counter() - run_start
                if cfg.max_minutes is not None and self._out_of_time(cfg.max_minutes):
                    self.state.stop_reason = "max_minutes"
                if update % cfg.save_every == 0 or self.state.stop_reason:
                    self.save()
                    saved_at = update
            self.state.elapsed_s = time.perf_counter() - run_start
            if saved_at != self.state.update and self.state.update > 0:
                self.save()
            final = self.write_final() if self.state.update > 0 else None
        finally:
            logger.close()
        log.info("stopped at update %d (%s)", self.state.update, self.state.stop_reason)
        return TrainResult(
            self.state.update, self.state.stop_reason or "", final, self.state.best, last_valid
        )


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
