"""Whether a run trained to the plateau of its validation perplexity, read from its training log.

A comparison of two models that are still learning ranks how fast each starts, not which is better
(extra encoders and auxiliary losses start slower). So every run records how much its validation
perplexity still moved over the last fifth of its updates, and the report shows it beside the run:
a run is *at its plateau* when that change is under 2%. The change is measured from the last
validation at or before 80% of the run's updates to the last validation; with validations rarer
than a fifth of the run, that span is longer than a fifth, which can only overstate the change.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from nmtvariants.errors import InputError

PLATEAU_SHARE = 0.2  # the last fifth of the updates
PLATEAU_TOLERANCE = 0.02  # relative change of the validation perplexity over it


def valid_curve(train_log: str | Path) -> list[tuple[int, float]]:
    """(update, validation perplexity) of each ``valid`` row of a run's ``train_log.csv``."""
    curve = []
    try:
        with open(train_log, encoding="utf-8", newline="") as handle:
            for number, row in enumerate(csv.DictReader(handle), start=2):
                if row.get("split") != "valid" or not row.get("valid_ppl"):
                    continue
                try:
                    curve.append((int(row["update"]), float(row["valid_ppl"])))
                except ValueError:
                    raise InputError(
                        f"{train_log}:{number}: update/valid_ppl are not numbers; re-run the training"
                    ) from None
    except FileNotFoundError:
        raise InputError(f"{train_log}: no training log; train the run first") from None
    return curve


def last_fifth_change(curve: Sequence[tuple[int, float]]) -> float | None:
    """Relative change of the validation perplexity over (at least) the last fifth of the updates,
    ``|ppl_last - ppl_start| / ppl_start``; None without a validation before the last fifth."""
    if not curve:
        return None
    last_update, last_ppl = curve[-1]
    boundary = (1 - PLATEAU_SHARE) * last_update
    earlier = [(update, ppl) for update, ppl in curve[:-1] if update <= boundary]
    if not earlier:
        return None
    start_ppl = earlier[-1][1]
    return abs(last_ppl - start_ppl) / start_ppl


def plateau_record(train_log: str | Path) -> dict[str, float | int | bool | None]:
    """What ``run.json`` and the report say of a run's convergence."""
    curve = valid_curve(train_log)
    change = last_fifth_change(curve)
    return {
        "validations": len(curve),
        "last_valid_ppl": curve[-1][1] if curve else None,
        "last_fifth_change": change,
        "at_plateau": None if change is None else change < PLATEAU_TOLERANCE,
    }
