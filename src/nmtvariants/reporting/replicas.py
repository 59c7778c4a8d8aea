"""Replicas: one score per training seed, reported as mean ± sample standard deviation over seeds.

A single training run is one draw from the distribution of runs a setting produces; differences of a
few tenths of BLEU between two variants are within the spread of seeds (Clark et al. 2011). So every
table built from an experiment with ``seeds: [...]`` gives, per row, the mean over its replicas, their
*sample* standard deviation (``ddof=1``: the seeds are a sample of the seeds one could have drawn) and
their number, and keeps each seed's own score in the CSV so that nothing is averaged away unseen.
With one seed there is no spread to report, and the table says so ("1 seed") rather than printing a
standard deviation of 0.

A table of toy-world runs (the demo) says so first, with the seed spread measured for the toy
baseline at the demo's training setting (:data:`TOY_BASELINE_SPREAD`): a reader of a one-seed toy
table can then tell a difference from seed noise without rerunning anything.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

N_COLUMN = "n"


@dataclass(frozen=True)
class MeasuredSpread:
    """A system's test BLEU over several training seeds: max - min, where and when it was measured."""

    bleu: float
    seeds: tuple[int, ...]
    source: str
    date: str


# The toy baseline at config.yaml's `&toy_train` setting; a test checks it against the source's JSON.
TOY_BASELINE_SPREAD = MeasuredSpread(
    0.57, (1234, 2, 3), "benchmarks/results/toy_convergence.md", "2026-11-28"
)


def sd_column(metric: str) -> str:
    """The CSV column of a metric's sample standard deviation over seeds."""
    return f"{metric} sd"


def seed_column(metric: str, seed: object) -> str:
    """The CSV column of one seed's score of a metric."""
    return f"{metric} seed {seed}"


def mean_sd(values: Sequence[float]) -> tuple[float, float, int]:
    """Mean, sample standard deviation (NaN for fewer than two values) and count of ``values``,
    leaving out missing ones (NaN)."""
    present = np.asarray([value for value in values if not _missing(value)], dtype=float)
    if present.size == 0:
        return math.nan, math.nan, 0
    sd = float(present.std(ddof=1)) if present.size > 1 else math.nan
    return float(present.mean()), sd, int(present.size)


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def format_mean_sd(mean: float, sd: float, n: int, digits: int = 2) -> str:
    """``27.31 ± 0.12`` over several seeds, ``27.31`` for one (no spread to give), empty for none."""
    if n == 0 or _missing(mean):
        return ""
    if n == 1 or _missing(sd):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


def seeds_note(seeds: Sequence[object], toy: bool = False) -> str:
    """The sentence every replicated table carries: how many seeds, which, and what ± means; for
    ``toy`` runs, led by what a toy run can show (:func:`toy_note`)."""
    note = _seeds_sentence(seeds)
    return f"{toy_note(len(seeds))} {note}" if toy else note


def toy_note(seeds: int) -> str:
    """The lead of a toy table's note: toy world, how many seeds, the toy baseline's seed spread."""
    spread = TOY_BASELINE_SPREAD
    listed = ", ".join(str(seed) for seed in spread.seeds)
    plural = "" if seeds == 1 else "s"
    return (
        f"**Toy world, {seeds} seed{plural}**: tiny models on the generated toyworld corpus, not the "
        f"paper's data. At the demo's training setting the toy baseline's test BLEU varies by "
        f"{spread.bleu:.2f} between seeds {listed} ({spread.source}, {spread.date}); a difference "
        "smaller than that is seed noise unless the replicas' test marks it."
    )


def _seeds_sentence(seeds: Sequence[object]) -> str:
    listed = ", ".join(str(seed) for seed in seeds)
    if len(seeds) == 1:
        return (
            f"1 seed ({listed}): every score is a single training run; no standard deviation over seeds "
            "can be given, and a significance mark tests the sampling of test sentences only, not the "
            "variation between training seeds (train with `seeds: [...]` for both)."
        )
    return (
        f"Mean ± sample standard deviation over {len(seeds)} seeds ({listed}); n is the number of seeds "
        "behind each row, and the CSV keeps each seed's score."
    )


def aggregate_replicas(
    long: pd.DataFrame, keys: Sequence[str], metrics: Sequence[str], seed: str = "seed"
) -> tuple[pd.DataFrame, pd.DataFrame, list[object]]:
    """Collapse one row per replica into one row per ``keys`` (in first-seen order).

    Returns the CSV frame (``keys``, ``n``, each metric's mean and ``<metric> sd``, then
    ``<metric> seed <s>`` for every seed), the markdown frame (``keys``, ``n``, each metric as
    ``mean ± sd``) and the seeds, in first-seen order.
    """
    seeds = list(dict.fromkeys(long[seed]))
    csv_rows, md_rows = [], []
    for group_keys, group in long.groupby(list(keys), sort=False, dropna=False):
        group_keys = group_keys if isinstance(group_keys, tuple) else (group_keys,)
        base = dict(zip(keys, group_keys, strict=True))
        csv_row, md_row = dict(base), dict(base)
        by_seed = {row[seed]: row for _, row in group.iterrows()}
        csv_row[N_COLUMN] = md_row[N_COLUMN] = len(by_seed)

        def score(metric: str, of: object, by_seed: dict = by_seed) -> float:
            row = by_seed.get(of)
            return row[metric] if row is not None and metric in row else math.nan

        for metric in metrics:
            mean, sd, count = mean_sd([score(metric, s) for s in seeds])
            csv_row[metric] = mean
            csv_row[sd_column(metric)] = sd
            md_row[metric] = format_mean_sd(mean, sd, count)
        for metric in metrics:
            for s in seeds:
                csv_row[seed_column(metric, s)] = score(metric, s)
        csv_rows.append(csv_row)
        md_rows.append(md_row)
    return pd.DataFrame(csv_rows), pd.DataFrame(md_rows), seeds
