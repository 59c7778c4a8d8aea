"""The training run configuration (``nmtvariants train --config RUN.yaml``), validated up front.

A typo in a key or a string where a number belongs must stop the run before hours of training,
with the key's path (``train.warmpu: unknown key``), so every section is a dataclass and unknown
keys and wrong types are rejected here rather than discovered deep inside the loop.

Shape::

    data:    {train_src, train_tgt, valid_src, valid_tgt, vocab}   (or train_bin / valid_bin .npz)
             extra inputs (data/extra_inputs.py): train_aux / valid_aux {NAME: FILE} integer streams,
             aux_labels {NAME: label count} (the streams that hold labels, not positions),
             train_sources / valid_sources [FILE, ...] further sources, train_features /
             valid_features FILE.npy with optional train_feature_index / valid_feature_index
    model:   {preset: tiny|small|base|big, ...ModelConfig overrides}
    variant: {...study switches...; optional warmup: N overrides train.warmup for this variant}
    train:   {max_updates, batch_tokens, update_freq | effective_batch_tokens, lr_scale | lr_peak,
              warmup, lr_cooldown, label_smoothing, clip_norm, save_every, keep_last, valid_every,
              patience, seed, amp: none|bf16|fp16, max_epochs, threads, ...}
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nmtvariants.errors import ConfigError

AMP_MODES = ("none", "bf16", "fp16")
EARLY_STOP_METRICS = ("valid_nll", "valid_loss")
# Validation BLEU needs decoding and scoring of the validation set inside training. The Trainer has a
# Python seam for it (``validation_hook``), but neither `nmtvariants train` nor the workflow wires
# one, so a config asking for it is rejected at start-up instead of failing at the first validation.
UNWIRED_EARLY_STOP_METRICS = ("bleu",)


@dataclass
class DataSettings:
    vocab: str
    train_src: str | None = None
    train_tgt: str | None = None
    valid_src: str | None = None
    valid_tgt: str | None = None
    train_bin: str | None = None
    valid_bin: str | None = None
    train_aux: dict[str, str] = field(default_factory=dict)
    valid_aux: dict[str, str] = field(default_factory=dict)
    aux_labels: dict[str, int] = field(default_factory=dict)
    train_sources: list[str] = field(default_factory=list)
    valid_sources: list[str] = field(default_factory=list)
    train_features: str | None = None
    valid_features: str | None = None
    train_feature_index: str | None = None
    valid_feature_index: str | None = None


@dataclass
class TrainSettings:
    max_updates: int = 100_000
    batch_tokens: int = 4096
    update_freq: int = 1
    effective_batch_tokens: int | None = None
    lr_scale: float = 1.0
    lr_peak: float | None = None
    lr_cooldown: dict[str, float] | None = None  # {start, end, floor}: training/schedule.py
    warmup: int = 4000
    adam_betas: list[float] = field(default_factory=lambda: [0.9, 0.98])
    adam_eps: float = 1e-9
    weight_decay: float = 0.0
    label_smoothing: float = 0.1
    clip_norm: float = 0.0
    save_every: int = 1000
    keep_last: int = 5
    valid_every: int = 1000
    valid_batch_tokens: int | None = None
    patience: int = 0
    early_stop_metric: str = "valid_nll"
    seed: int = 1
    amp: str = "none"
    max_epochs: int | None = None
    max_minutes: float | None = None  # wall-clock budget of the training loop (validation included)
    threads: int | None = None
    device: str = "auto"
    maxi_batch: int = 40
    max_len: int | None = None
    log_every: int = 100
    progress: bool = True
    tensorboard: bool = True
    compile: bool = False


@dataclass
class RunConfig:
    data: DataSettings
    train: TrainSettings
    model: dict[str, Any]
    variant: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _type_ok(value: Any, annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, arm) for arm in typing.get_args(annotation))
    if annotation is type(None):
        return value is None
    if annotation is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is list:
        (inner,) = typing.get_args(annotation)
        return isinstance(value, list) and all(_type_ok(item, inner) for item in value)
    if origin is dict:
        key_type, value_type = typing.get_args(annotation)
        return isinstance(value, dict) and all(
            _type_ok(k, key_type) and _type_ok(v, value_type) for k, v in value.items()
        )
    return isinstance(value, annotation)


def _type_name(annotation: Any) -> str:
    if annotation is type(None):
        return "null"
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    return str(annotation).replace("typing.", "").replace("NoneType", "null")


def _build(cls: type, values: Any, section: str):
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise ConfigError(f"{section}: must be a mapping, got {type(values).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ConfigError(
            f"{', '.join(f'{section}.{key}' for key in unknown)}: unknown key; "
            f"known keys: {', '.join(fields)}"
        )
    for name, f in fields.items():
        if name not in values:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{section}.{name}: required key missing")
            continue
        if not _type_ok(values[name], hints[name]):
            wanted = _type_name(hints[name])
            raise ConfigError(f"{section}.{name}: expected {wanted}, got {values[name]!r}")
    settings = cls(**values)
    if cls is TrainSettings and isinstance(settings.adam_betas, list):
        settings.adam_betas = [float(beta) for beta in settings.adam_betas]
    return settings


def _check_train(train: TrainSettings) -> None:
    positive = (
        "max_updates",
        "batch_tokens",
        "update_freq",
        "warmup",
        "save_every",
        "valid_every",
        "log_every",
    )
    for key in positive:
        if getattr(train, key) < 1:
            raise ConfigError(f"train.{key}: must be >= 1, got {getattr(train, key)}")
    for key in ("effective_batch_tokens", "max_epochs", "threads", "valid_batch_tokens", "max_len"):
        value = getattr(train, key)
        if value is not None and value < 1:
            raise ConfigError(f"train.{key}: must be >= 1 or null, got {value}")
    if train.amp not in AMP_MODES:
        raise ConfigError(f"train.amp: must be one of {', '.join(AMP_MODES)}, got {train.amp!r}")
    if train.early_stop_metric in UNWIRED_EARLY_STOP_METRICS:
        raise ConfigError(
            f"train.early_stop_metric: {train.early_stop_metric!r} is not available: no validation BLEU "
            f"hook is wired into `nmtvariants train` or the workflow; use one of "
            f"{', '.join(EARLY_STOP_METRICS)}"
        )
    if train.early_stop_metric not in EARLY_STOP_METRICS:
        raise ConfigError(
            f"train.early_stop_metric: must be one of {', '.join(EARLY_STOP_METRICS)}, "
            f"got {train.early_stop_metric!r}"
        )
    if not 0.0 <= train.label_smoothing < 1.0:
        raise ConfigError(f"train.label_smoothing: must be in [0, 1), got {train.label_smoothing}")
    if len(train.adam_betas) != 2 or not all(0.0 <= beta < 1.0 for beta in train.adam_betas):
        raise ConfigError(f"train.adam_betas: must be two numbers in [0, 1), got {train.adam_betas}")
    if train.effective_batch_tokens is not None and train.update_freq != 1:
        raise ConfigError("train.update_freq: give either update_freq or effective_batch_tokens, not both")
    if train.keep_last < 0 or train.patience < 0 or train.clip_norm < 0 or train.maxi_batch < 0:
        raise ConfigError("train.keep_last, patience, clip_norm and maxi_batch must be >= 0")
    if train.lr_peak is not None and train.lr_peak <= 0:
        raise ConfigError(f"train.lr_peak: must be > 0, got {train.lr_peak}")
    if train.lr_cooldown is not None:
        _check_cooldown(train.lr_cooldown)


def _check_cooldown(shares: dict[str, float]) -> None:
    unknown = sorted(set(shares) - {"start", "end", "floor"})
    if unknown or "start" not in shares:
        raise ConfigError(
            f"train.lr_cooldown: give {{start, end, floor}}, shares of max_updates (start required), "
            f"got {shares}"
        )
    start, end, floor = shares["start"], shares.get("end", 1.0), shares.get("floor", 0.0)
    if not (0.0 <= start < end <= 1.0 and 0.0 <= floor <= 1.0):
        raise ConfigError(
            f"train.lr_cooldown: needs 0 <= start < end <= 1 and a floor in [0, 1], got {shares}"
        )


def _check_data(data: DataSettings) -> None:
    if data.train_bin is None and (data.train_src is None or data.train_tgt is None):
        raise ConfigError("data.train_src, data.train_tgt: required (or data.train_bin)")
    if (data.valid_src is None) != (data.valid_tgt is None):
        raise ConfigError("data.valid_src, data.valid_tgt: give both or neither")
    for split in ("train", "valid"):
        extra_text = getattr(data, f"{split}_aux") or getattr(data, f"{split}_sources")
        if getattr(data, f"{split}_bin") and extra_text:
            raise ConfigError(
                f"data.{split}_aux, data.{split}_sources: a binarised {split} file holds its streams and "
                "sources already; give them to `nmtvariants binarize` instead"
            )
        if getattr(data, f"{split}_feature_index") and not getattr(data, f"{split}_features"):
            raise ConfigError(f"data.{split}_feature_index: needs data.{split}_features")


# Settings a resumed run may change without invalidating its checkpoints: how long to train, how
# often to log, save and validate, and where. Any other change (model, variant, data, optimiser,
# batching, seed) means the checkpoints belong to another experiment.
RESUMABLE_CHANGES = frozenset(
    {
        "max_updates",
        "max_epochs",
        "max_minutes",
        "patience",
        "save_every",
        "keep_last",
        "valid_every",
        "valid_batch_tokens",
        "log_every",
        "progress",
        "tensorboard",
        "threads",
        "device",
        "compile",
    }
)


_UNSET = (None, {}, [])


def resume_conflicts(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Key paths whose values differ between a checkpoint's run config and this run's, beyond the
    settings in :data:`RESUMABLE_CHANGES`."""
    conflicts = []
    for section in ("data", "model", "variant", "train"):
        old, new = saved.get(section) or {}, current.get(section) or {}
        for key in sorted(set(old) | set(new)):
            if section == "train" and key in RESUMABLE_CHANGES:
                continue
            if old.get(key) in _UNSET and new.get(key) in _UNSET:  # a key added since, left at its default
                continue
            if old.get(key) != new.get(key):
                conflicts.append(f"{section}.{key}: {old.get(key)!r} -> {new.get(key)!r}")
    return conflicts


def parse_run_config(raw: Any, source: str = "config") -> RunConfig:
    """Validate a parsed YAML/JSON mapping into a :class:`RunConfig` (errors name the key path)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the top level must be a mapping with data, model, variant, train")
    unknown = sorted(set(raw) - {"data", "model", "variant", "train"})
    if unknown:
        raise ConfigError(
            f"{', '.join(unknown)}: unknown top-level key in {source}; "
            "known keys: data, model, variant, train"
        )
    if "data" not in raw:
        raise ConfigError(f"data: required section missing in {source}")
    data = _build(DataSettings, raw["data"], "data")
    _check_data(data)
    model = raw.get("model") or {}
    if not isinstance(model, dict):
        raise ConfigError("model: must be a mapping with preset and overrides")
    variant = dict(raw.get("variant") or {})
    train_values = dict(raw.get("train") or {})
    if "warmup" in variant:  # per-variant warm-up (Emelin et al.: 4000 / 6000 / 8000)
        train_values["warmup"] = variant.pop("warmup")
    train = _build(TrainSettings, train_values, "train")
    _check_train(train)
    return RunConfig(data=data, train=train, model=dict(model), variant=variant)


def load_run_config(path: str | Path | None = None, json_text: str | None = None) -> RunConfig:
    """Read ``--config RUN.yaml`` or ``--config-json '{...}'`` (exactly one)."""
    if (path is None) == (json_text is None):
        raise ConfigError("give exactly one of --config and --config-json")
    if path is not None:
        path = Path(path)
        if not path.exists():
            raise ConfigError(f"{path}: config file not found")
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as error:
            raise ConfigError(f"{path}: not valid YAML: {error}") from None
        return parse_run_config(raw, str(path))
    try:
        raw = json.loads(json_text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"--config-json: not valid JSON: {error}") from None
    return parse_run_config(raw, "--config-json")
