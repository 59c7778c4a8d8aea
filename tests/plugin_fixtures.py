"""The test plug-ins of tests/plugins (loaded through NMTV_PLUGINS) and parent streams for a corpus."""

from __future__ import annotations

import os
from pathlib import Path

from nmtvariants.fileio import read_lines, write_lines
from nmtvariants.models.variants import PLUGIN_PATH_VARIABLE, load_plugins

PLUGIN_DIR = Path(__file__).resolve().parent / "plugins"
PARENT_BIAS = PLUGIN_DIR / "parent_bias.py"
AUX_LOSS = PLUGIN_DIR / "aux_loss.py"


def use_plugins(monkeypatch, *paths: Path) -> None:
    """Name the plug-in files in NMTV_PLUGINS (for this process and its subprocesses) and load them."""
    monkeypatch.setenv(PLUGIN_PATH_VARIABLE, os.pathsep.join(str(p) for p in paths))
    load_plugins()


def parents_of(tokens: int) -> list[int]:
    """A fixed tree over the BPE positions: position i hangs from i // 2 (the root, 0, from itself)."""
    return [i // 2 for i in range(tokens)]


def write_parents(text: str | Path, out: Path) -> Path:
    write_lines(out, [" ".join(map(str, parents_of(len(line.split())))) for line in read_lines(text)])
    return out


def with_parents(corpus: dict[str, str], root: Path) -> dict[str, object]:
    """The ``data:`` section of ``corpus`` plus ``parents`` streams for training and validation."""
    data: dict[str, object] = dict(corpus)
    data["train_aux"] = {"parents": str(write_parents(corpus["train_src"], root / "train.parents"))}
    data["valid_aux"] = {"parents": str(write_parents(corpus["valid_src"], root / "valid.parents"))}
    return data
