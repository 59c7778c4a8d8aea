"""Training logs: a pandas-readable CSV, TensorBoard scalars and a tqdm progress bar.

Columns beyond :data:`BASE_COLUMNS` appear as they are first logged: validation metrics, and each
plug-in's auxiliary loss term (``aux_<name>`` in training rows, ``valid_aux_<name>`` in validation
rows, per target token with its weight), which also get a TensorBoard scalar and a place on the bar.

The CSV is rewritten atomically at every log event (it is small), so it is never half a line;
on resume the rows after the resumed update are dropped, because the killed run may have logged
updates that the resumed run will now redo. TensorBoard event files are append-only by design and
are left to TensorBoard (its ``purge_step`` hides the redone steps).
"""

from __future__ import annotations

import csv
import logging
import math
from pathlib import Path
from typing import Any

from nmtvariants.errors import InputError
from nmtvariants.fileio import atomic_write

log = logging.getLogger(__name__)

BASE_COLUMNS = ["update", "epoch", "split", "loss", "nll", "ppl", "lr", "tokens", "tok_per_s", "elapsed_s"]


def perplexity(nll_per_token: float) -> float:
    return math.exp(min(nll_per_token, 100.0))


class TrainLogger:
    """CSV + TensorBoard + progress bar; a no-op on non-main ranks."""

    def __init__(
        self,
        outdir: Path,
        enabled: bool = True,
        resume_update: int = 0,
        tensorboard: bool = True,
        progress: bool = True,
        total_updates: int | None = None,
    ):
        self.enabled = enabled
        self.csv_path = outdir / "train_log.csv"
        self.rows: list[dict[str, Any]] = []
        self.columns = list(BASE_COLUMNS)
        self.writer = None
        self.bar = None
        if not enabled:
            return
        if self.csv_path.exists():
            with open(self.csv_path, newline="", encoding="utf-8") as handle:
                reader = csv.DictReader(handle)
                for column in reader.fieldnames or []:
                    if column not in self.columns:
                        self.columns.append(column)
                self.rows = [
                    row for row in reader if row.get("update") and int(row["update"]) <= resume_update
                ]
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(outdir / "tensorboard"), purge_step=resume_update + 1)
        if progress:
            from tqdm import tqdm

            self.bar = tqdm(
                total=total_updates, initial=resume_update, unit="upd", dynamic_ncols=True, mininterval=1.0
            )

    def record(self, row: dict[str, Any]) -> None:
        if not self.enabled:
            return
        for column in row:
            if column not in self.columns:
                self.columns.append(column)
        self.rows.append(row)
        with atomic_write(self.csv_path) as out:
            writer = csv.DictWriter(out, fieldnames=self.columns, lineterminator="\n")
            writer.writeheader()
            writer.writerows(self.rows)
        if self.writer is not None:
            step = int(row["update"])
            for key, value in row.items():
                if key not in ("update", "epoch", "split") and isinstance(value, int | float):
                    self.writer.add_scalar(f"{row['split']}/{key}", value, step)
            self.writer.flush()

    def progress(self, update: int, **shown: float) -> None:
        """Advance the bar to ``update``; tqdm redraws at most once a second (``mininterval``)."""
        if self.bar is None:
            return
        if shown:
            self.bar.set_postfix({k: f"{v:.4g}" for k, v in shown.items()}, refresh=False)
        self.bar.update(update - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        if self.writer is not None:
            self.writer.close()


def training_speed(train_log: str | Path) -> float:
    """Target tokens per second of a run's training: every logged training token over the summed
    duration of the logging windows (a window lasts ``tokens / tok_per_s``; validation time is
    outside them)."""
    tokens = seconds = 0.0
    try:
        with open(train_log, encoding="utf-8", newline="") as handle:
            for number, row in enumerate(csv.DictReader(handle), start=2):
                if row.get("split") != "train":
                    continue
                try:
                    window, rate = float(row["tokens"]), float(row["tok_per_s"])
                except (KeyError, TypeError, ValueError):
                    raise InputError(
                        f"{train_log}:{number}: no numeric tokens/tok_per_s; re-run the training"
                    ) from None
                if rate <= 0:
                    raise InputError(f"{train_log}:{number}: tok_per_s {rate} is not positive")
                tokens += window
                seconds += window / rate
    except FileNotFoundError:
        raise InputError(f"{train_log}: no training log; train the run first") from None
    if seconds == 0:
        raise InputError(f"{train_log}: no training rows (split=train); train the run first")
    return tokens / seconds
