"""Configuration validation with messages that name the offending key's path.

Snakemake's own ``validate`` reports a schema violation without saying *where* it is; for a nested
research config that is the most useful part, so we check first with jsonschema and report
``experiments.baseline.train.max_updates: 'x' is not of type 'integer'``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import yaml

from nmtvariants.errors import ConfigError


def key_path(error: jsonschema.ValidationError) -> str:
    """Dotted path of the config key an error is about (list items as ``[i]``)."""
    parts: list[str] = []
    for part in error.absolute_path:
        parts.append(f"[{part}]" if isinstance(part, int) else f".{part}")
    path = "".join(parts).lstrip(".")
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        unknown = ", ".join(f"{path + '.' if path else ''}{name}" for name in extra)
        return unknown or path or "<top level>"
    return path or "<top level>"


def load_schema(schema_path: str | Path) -> dict[str, Any]:
    with open(schema_path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def check_config(config: dict[str, Any], schema_path: str | Path, source: str = "config") -> None:
    """Raise :class:`ConfigError` listing every violation with the key's path."""
    schema = load_schema(schema_path)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if not errors:
        return
    lines = []
    for error in errors:
        message = error.message
        if error.validator == "additionalProperties":
            message = "unknown key (check the spelling against config.yaml and the schema)"
        lines.append(f"  {key_path(error)}: {message}")
    raise ConfigError(f"invalid {source} ({schema_path}):\n" + "\n".join(lines))


def _relocate(message: str, experiment: str, variant: str) -> str:
    """Rewrite the library's section paths (train.x, model.x, variant.x) as config key paths."""
    prefixes = [
        ("model.variant.", f"experiments.{experiment}.variants.{variant}."),
        ("model.variant:", f"experiments.{experiment}.variants.{variant}:"),
        ("variant.", f"experiments.{experiment}.variants.{variant}."),
        ("model.", f"experiments.{experiment}.model."),
        ("model:", f"experiments.{experiment}.model:"),
        ("train.", f"experiments.{experiment}.train."),
    ]
    for old, new in prefixes:
        message = message.replace(old, new)
    return message


def check_experiments(experiments: dict[str, Any]) -> None:
    """Build every experiment's run config and model config once, so that a wrong model, variant or
    trainer key stops the workflow at start-up (with its path) instead of hours later in a job."""
    from nmtvariants.models import model_config
    from nmtvariants.models.variants import check_variant
    from nmtvariants.training.train_config import parse_run_config

    placeholder_data = {"train_src": "-", "train_tgt": "-", "vocab": "-"}
    for name, experiment in experiments.items():
        for variant_name, variant in experiment["variants"].items():
            raw = {
                "data": placeholder_data,
                "model": experiment["model"],
                "variant": dict(variant or {}),
                "train": experiment["train"],
            }
            try:
                run = parse_run_config(raw)
                overrides = {key: value for key, value in run.model.items() if key != "preset"}
                model_config(run.model.get("preset", "base"), overrides, run.variant)
                check_variant(run.variant)
            except ConfigError as error:
                raise ConfigError(f"invalid config: {_relocate(str(error), name, variant_name)}") from None
