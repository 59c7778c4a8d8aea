"""Checkpoint files: atomic, checksummed, pruned, and averaged.

Each checkpoint ``checkpoint_<update>.pt`` is an ordinary ``torch.save`` file (so ``load_model``
and ``torch.load`` read it) written through :func:`atomic_write`, followed by a sidecar
``checkpoint_<update>.pt.sha256`` in ``sha256sum`` format (``sha256sum -c`` checks it by hand).
The sidecar is written *after* the checkpoint is complete, so a run killed between the two, a
truncated copy or a flipped bit all fail verification; resuming then falls back to the previous
checkpoint with a warning instead of crashing or, worse, training on garbage.

Averaging follows fairseq's ``scripts/average_checkpoints.py``: a uniform mean of every floating
parameter, accumulated in float64 here (fairseq: float32) and cast back to the stored dtype.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, atomic_write
from nmtvariants.provenance import provenance

log = logging.getLogger(__name__)

CHECKPOINT_RE = re.compile(r"^checkpoint_(\d+)\.pt$")
_CHUNK = 1 << 20


class _HashingWriter:
    """File-like wrapper that feeds every written byte to a sha256 while writing it."""

    def __init__(self, raw):
        self.raw = raw
        self.digest = hashlib.sha256()

    def write(self, data) -> int:
        self.digest.update(data)
        return self.raw.write(data)

    def flush(self) -> None:
        self.raw.flush()


def sidecar_path(path: PathLike) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".sha256")


def file_sha256(path: PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def save_checkpoint(state: dict[str, Any], path: PathLike) -> Path:
    """Write ``state`` atomically, then its sha256 sidecar; return the path.

    The file also records ``provenance``: the commit (and dirty flag) of the code that wrote it.
    """
    path = Path(path)
    state = {**state, "provenance": provenance()}
    with atomic_write(path, "wb") as raw:
        writer = _HashingWriter(raw)
        torch.save(state, writer)
    with atomic_write(sidecar_path(path)) as out:
        out.write(f"{writer.digest.hexdigest()}  {path.name}\n")
    return path


def verify_checkpoint(path: PathLike) -> str | None:
    """None if ``path`` matches its sidecar, else the reason it does not."""
    path = Path(path)
    side = sidecar_path(path)
    if not path.exists():
        return "file missing"
    if not side.exists():
        return "no .sha256 sidecar (the write was interrupted)"
    expected = side.read_text(encoding="utf-8").split()[:1]
    actual = file_sha256(path)
    if expected != [actual]:
        return f"sha256 mismatch (sidecar {expected[0] if expected else '<empty>'}, file {actual})"
    return None


def load_checkpoint(
    path: PathLike,
    verify: bool = True,
    map_location: str | torch.device = "cpu",
    require_sidecar: bool = True,
) -> dict[str, Any]:
    """Load a checkpoint dict; with ``verify``, a sidecar mismatch is an :class:`InputError`.

    The one loader of checkpoint files, for resuming, averaging and decoding alike, so that no
    reader uses weights whose bytes differ from what was written. ``require_sidecar=False`` accepts
    a file without a sidecar unchecked (a model file saved by other code; ours are complete
    whenever they exist, through ``atomic_write``), but never one whose sidecar disagrees: resuming
    keeps it True, since there a missing sidecar means the run died between the two writes.
    Only tensors and plain Python containers are unpickled (``weights_only``).
    """
    path = Path(path)
    if verify and not require_sidecar and path.exists() and not sidecar_path(path).exists():
        log.info("%s: no .sha256 sidecar, loaded unverified", path)
    elif verify and (reason := verify_checkpoint(path)):
        raise InputError(f"{path}: corrupt or incomplete checkpoint: {reason}")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as error:  # torch raises RuntimeError, pickle errors, EOFError, zipfile errors
        raise InputError(f"{path}: unreadable checkpoint ({type(error).__name__}: {error})") from None


def checkpoint_path(directory: PathLike, update: int) -> Path:
    return Path(directory) / f"checkpoint_{update}.pt"


def list_checkpoints(directory: PathLike) -> list[tuple[int, Path]]:
    """``(update, path)`` of every ``checkpoint_<update>.pt`` in ``directory``, oldest first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        match = CHECKPOINT_RE.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def latest_valid_checkpoint(directory: PathLike) -> tuple[Path, dict[str, Any]] | None:
    """Newest checkpoint that verifies and loads; each one skipped is reported with a warning."""
    for _, path in reversed(list_checkpoints(directory)):
        try:
            return path, load_checkpoint(path)
        except InputError as error:
            log.warning("%s; falling back to the previous checkpoint", error)
    return None


def last_checkpoints(directory: PathLike, k: int) -> list[Path]:
    """The last ``k`` checkpoints that verify, oldest first (fewer, with a warning, if absent)."""
    if k < 1:
        raise InputError(f"--last must be >= 1, got {k}")
    valid: list[Path] = []
    for _, path in reversed(list_checkpoints(directory)):
        reason = verify_checkpoint(path)
        if reason:
            log.warning("%s: skipped: %s", path, reason)
            continue
        valid.append(path)
        if len(valid) == k:
            break
    if not valid:
        raise InputError(f"{directory}: no valid checkpoint_<update>.pt files to average")
    if len(valid) < k:
        log.warning("%s: only %d valid checkpoints, averaging those instead of %d", directory, len(valid), k)
    return valid[::-1]


def prune_checkpoints(directory: PathLike, keep_last: int) -> list[Path]:
    """Delete all but the newest ``keep_last`` checkpoints (and their sidecars); return the deleted."""
    removed = []
    if keep_last <= 0:
        return removed
    for _, path in list_checkpoints(directory)[:-keep_last]:
        path.unlink(missing_ok=True)
        sidecar_path(path).unlink(missing_ok=True)
        removed.append(path)
    return removed


def average_state_dicts(state_dicts: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Uniform mean of floating tensors (float64 accumulation); other tensors from the last one."""
    if not state_dicts:
        raise ValueError("nothing to average")
    keys = list(state_dicts[0])
    for index, state in enumerate(state_dicts[1:], start=1):
        if list(state) != keys:
            missing = set(keys) ^ set(state)
            raise InputError(f"checkpoint {index} has different parameters: {sorted(missing)[:5]}")
    averaged: dict[str, torch.Tensor] = {}
    count = len(state_dicts)
    for key in keys:
        reference = state_dicts[0][key]
        if reference.is_floating_point():
            total = torch.zeros(reference.shape, dtype=torch.float64)
            for state in state_dicts:
                total += state[key].to(torch.float64)
            averaged[key] = (total / count).to(reference.dtype)
        else:
            averaged[key] = state_dicts[-1][key].clone()
    return averaged


def average_checkpoints(paths: Sequence[PathLike], out: PathLike) -> dict[str, Any]:
    """Average the ``model`` entries of ``paths`` into ``out`` (load_model format, no optimizer).

    The other entries (model config, vocabulary size, ...) come from the last checkpoint; the
    list of sources is recorded under ``averaged_from``.
    """
    if not paths:
        raise InputError("average: no input checkpoints given")
    states = []
    for path in paths:
        state = load_checkpoint(path, require_sidecar=False)
        if "model" not in state:
            raise InputError(f"{path}: no 'model' entry; not an nmtvariants checkpoint")
        states.append(state)
    result = {key: value for key, value in states[-1].items() if key in MODEL_FILE_KEYS}
    result["model"] = average_state_dicts([state["model"] for state in states])
    result["averaged_from"] = [str(path) for path in paths]
    save_checkpoint(result, out)
    log.info("averaged %d checkpoints into %s", len(paths), out)
    return result


# what a model-only file (final.pt, an average) keeps from a training checkpoint
MODEL_FILE_KEYS = ("model_config", "vocab_size", "model", "update", "vocab", "train_config", "variant")


def model_file(state: dict[str, Any]) -> dict[str, Any]:
    """The load_model-format subset of a training checkpoint (drops optimizer and RNG states)."""
    return {key: value for key, value in state.items() if key in MODEL_FILE_KEYS}
