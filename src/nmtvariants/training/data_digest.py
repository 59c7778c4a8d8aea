"""The contents of a run's data files, as digests stored in every checkpoint.

Snakemake re-runs a training job when an input file changes (a fixed preprocessing stage, a new BPE),
but the run's config names the same paths, so comparing configs alone would resume the new run from
checkpoints trained on the old text. The trainer compares these digests too, and sets such
checkpoints aside. sha256 reads about a gigabyte a second, once per training start.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from nmtvariants.training.train_config import DataSettings


def file_digest(path: Path) -> str:
    """sha256 of a file; of a directory (binarised data), sha256 over its files' names and digests in
    name order."""
    if not path.is_dir():
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(f"{file.relative_to(path)}\0{file_digest(file)}\n".encode())
    return digest.hexdigest()


def data_digest(data: DataSettings) -> dict[str, str]:
    """``{setting: sha256}`` for every data file a run reads (``train_aux.parents``, ``train_sources.0``
    for mappings and lists); settings left empty are absent."""
    named: dict[str, Any] = {}
    for key, value in data.__dict__.items():
        if isinstance(value, dict) and key != "aux_labels":
            named.update({f"{key}.{name}": path for name, path in value.items()})
        elif isinstance(value, list):
            named.update({f"{key}.{index}": path for index, path in enumerate(value)})
        elif isinstance(value, str):
            named[key] = value
    return {key: file_digest(Path(path)) for key, path in sorted(named.items()) if Path(path).exists()}


def digest_conflicts(saved: dict[str, str] | None, current: dict[str, str]) -> list[str]:
    """Data settings whose file contents differ from a checkpoint's (none for checkpoints written
    before digests were recorded)."""
    if saved is None:
        return []
    return [
        f"data.{key}: contents changed"
        for key in sorted(set(saved) | set(current))
        if saved.get(key) != current.get(key)
    ]
