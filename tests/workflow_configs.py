"""Configs for tests that run the real workflow: the embedded default with a few keys changed.

A config named with --configfile replaces config.yaml (it is not merged into it), so tests write a
complete config: config.yaml deep-merged with their overrides.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]


def deep_merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def default_config_with(overrides: dict[str, Any]) -> dict[str, Any]:
    default = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    return deep_merge(default, overrides)


def write_config(path: Path, overrides: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(default_config_with(overrides), sort_keys=False), encoding="utf-8")
    return path
