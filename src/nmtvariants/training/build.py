"""The parts of a training run, each built by a plain function from the run config.

Why functions and not the trainer's constructor: each part can then be built, inspected and tested
on its own (a benchmark wants only the model, a test only the data), and the constructor reads as
the order in which the parts are made. None of them touches process-wide state (threads, allocator,
process group: :mod:`nmtvariants.training.process`); seeding stays with the trainer, which decides
when the generators are drawn from.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from nmtvariants.data.dataset import ParallelData, binarize, check_ids
from nmtvariants.data.extra_inputs import ExtraInputFiles, model_feature_channels
from nmtvariants.data.vocab import Vocabulary
from nmtvariants.errors import ConfigError
from nmtvariants.models import ModelConfig, model_config
from nmtvariants.models import build_model as build_transformer
from nmtvariants.models.variants import declared_inputs, stream_kind
from nmtvariants.training.distributed import DistInfo
from nmtvariants.training.objective import LossModule
from nmtvariants.training.schedule import Cooldown, NoamSchedule, scale_for_peak
from nmtvariants.training.train_config import RunConfig, TrainSettings


# ---------------------------------------------------------------------- model
def run_model_config(config: RunConfig) -> ModelConfig:
    """The model config a run config names: ``model.preset`` with the other ``model`` keys and the
    ``variant`` switches on top."""
    return model_config(
        config.model.get("preset", "base"),
        overrides={k: v for k, v in config.model.items() if k != "preset"},
        variant=config.variant,
    )


def build_model(config: RunConfig, vocab_size: int, device: torch.device) -> tuple[ModelConfig, nn.Module]:
    """The run's model config and its freshly initialised model on ``device``; the initial weights
    come from the generators' current state (the trainer seeds them first)."""
    model_cfg = run_model_config(config)
    return model_cfg, build_transformer(model_cfg, vocab_size=vocab_size).to(device)


# ---------------------------------------------------------------------- data
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


def check_declared_inputs(config: RunConfig) -> None:
    """Every stream the variant's plug-ins declare is named for each text split, with the declared
    label count: a run config written by hand without ``data.train_aux`` then stops before any data
    is read, not inside the first training step. Binarised splits (``*_bin``) carry their own streams."""
    data = config.data
    parts = [part for part in ("train", "valid") if getattr(data, f"{part}_src")]
    for plugin, streams in declared_inputs(config.variant).items():
        for name in streams.aux:
            for part in parts:
                if name not in getattr(data, f"{part}_aux"):
                    raise ConfigError(
                        f"data.{part}_aux: variant {plugin} reads the stream {name}, which the run config "
                        f"does not name; give data.train_aux and data.valid_aux {{{name}: FILE}} "
                        f"(written by {streams.made_by})"
                    )
            count = streams.labels.get(name)
            given = data.aux_labels.get(name)
            if parts and given != count:
                raise ConfigError(
                    f"data.aux_labels: variant {plugin} reads the stream {name} as {stream_kind(count)}, "
                    f"the run config gives {stream_kind(given)}; make data.aux_labels agree"
                )


def load_data(
    config: RunConfig, vocab: Vocabulary, max_positions: int, feature_channels: int | None = None
) -> tuple[ParallelData, ParallelData | None]:
    """Binarise (or load) the training and validation pairs with their extra inputs, all checked
    here, before training starts; drop pairs the model cannot embed."""
    check_declared_inputs(config)
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


def build_data(
    config: RunConfig, vocab: Vocabulary, model_cfg: ModelConfig, model: nn.Module
) -> tuple[ParallelData, ParallelData | None]:
    """The training and validation data for ``model``: pairs longer than its positions dropped,
    feature grids checked against its feature encoder, and every encoder fed."""
    train_data, valid_data = load_data(config, vocab, model_cfg.max_positions, model_feature_channels(model))
    check_model_inputs(model, train_data, "train")
    if valid_data is not None:
        check_model_inputs(model, valid_data, "valid")
    return train_data, valid_data


# ---------------------------------------------------------------------- optimisation
def build_optimizer(model: nn.Module, train: TrainSettings, device: torch.device) -> torch.optim.Adam:
    """Adam (0.9, 0.98, 1e-9 by default), fused kernels where torch has them for the device; the
    learning rate is the schedule's to set before every step."""
    return torch.optim.Adam(
        model.parameters(),
        lr=0.0,
        betas=tuple(train.adam_betas),
        eps=train.adam_eps,
        weight_decay=train.weight_decay,
        fused=device.type in ("cpu", "cuda"),
    )


def build_schedule(train: TrainSettings, d_model: int) -> NoamSchedule:
    """Noam with ``train.warmup``, scaled to peak at ``train.lr_peak`` if set, else by ``lr_scale``,
    cooled down as ``train.lr_cooldown`` says (shares of ``max_updates``), if given."""
    peak = train.lr_peak
    scale = scale_for_peak(peak, d_model, train.warmup) if peak else train.lr_scale
    shares = train.lr_cooldown
    cooldown = Cooldown.from_shares(shares, train.max_updates) if shares else None
    return NoamSchedule(d_model, train.warmup, scale, cooldown)


def build_scaler(train: TrainSettings, device: torch.device) -> torch.amp.GradScaler:
    """A loss scaler, enabled only for fp16 (bf16 and fp32 need none; disabled it is a no-op)."""
    return torch.amp.GradScaler(device.type, enabled=train.amp == "fp16")


def build_loss_module(model: nn.Module, train: TrainSettings, info: DistInfo) -> nn.Module:
    """:class:`LossModule` around ``model``, compiled if ``train.compile``, wrapped in DDP when
    there are several ranks (built after resuming: DDP broadcasts rank 0's weights)."""
    loss_module: nn.Module = LossModule(model, train.label_smoothing)
    if train.compile:
        loss_module = torch.compile(loss_module, dynamic=True)
    if info.distributed:
        device_ids = [info.device.index] if info.device.type == "cuda" else None
        loss_module = DistributedDataParallel(loss_module, device_ids=device_ids)
    return loss_module
