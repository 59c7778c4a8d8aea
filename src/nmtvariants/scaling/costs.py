"""What a data-path job costs as a function of its input size: the one home of the fitted curves.

A cluster job that outgrows its memory request is killed hours in, and one whose runtime request is
too short is killed at the limit; static requests (``mem_mb=2000`` on every rule) are right for
toy data and wrong for WMT. Each stage here has two curves in the job's input size ``s`` (MiB, what
Snakemake's ``input.size_mb`` gives): ``seconds = a * s^b`` on one core, and ``peak RSS MB = c + d * s``
(a fixed part, the interpreter and libraries, plus what the job holds: a power law fitted at small
sizes would under-predict it at WMT size). ``benchmarks/scale_data_path.py`` fits them on the real
rules run on WMT14-sized corpora at several fractions (``benchmarks/results/scale_data_path.md``).

The rules ask for the prediction times a headroom (a cluster core is not this machine's; the fit
has scatter), above a floor, and grow it with Snakemake's ``attempt`` so that ``retries:`` in the
SLURM profile re-submits a killed job with more (:func:`mem_mb`, :func:`runtime_minutes`). The
plan command (:mod:`nmtvariants.scaling.plan`) reads the same curves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nmtvariants.inference.defaults import DECODER_CACHE_MB

# What a decoding job holds besides the model and its decoder cache: the interpreter, torch, the
# encoder states, one step's logits and attention weights. The BASE model's beam-16 decode of WMT
# sentences peaked at 3.6 GB with a 2,048 MB cache (benchmarks/results/scale_data_path.md): ~1.3 GB.
DECODING_OVERHEAD_MB = 1500


@dataclass(frozen=True)
class StageCost:
    """``seconds = a * s^b`` (one core) and ``peak RSS MB = c + d * s`` for input size ``s`` in MiB."""

    a: float
    b: float
    c: float
    d: float
    # Input MB per training pair (both sides where the stage reads both): what the plan uses to turn a
    # corpus's pair count into a job's input size before any file exists.
    mb_per_pair: float

    def seconds(self, size_mb: float) -> float:
        return self.a * max(size_mb, 1e-3) ** self.b

    def peak_mb(self, size_mb: float) -> float:
        return self.c + self.d * max(size_mb, 0.0)


# Fitted 2026-11-27 on a 2-core AMD EPYC (Zen 4) over 1%, 3%, 10% (one job at a time) and 100% (two
# cores) of WMT14 EN-DE's 4.5M pairs, on the jobs' CPU seconds sampled every 0.1 s (1 s at 100%)
# (benchmarks/results/scale_data_path.md has the points, the exponents and the plan's check).
# bpe_apply and truecase_apply were measured again at every size on 2026-11-27 after the BPE memo bound
# and the chunked truecase model loading (text/bpe.py, text/truecase.py): same outputs, less memory.
STAGES: dict[str, StageCost] = {
    "bpe_apply": StageCost(a=0.6762, b=0.9498, c=89.99, d=0.08305, mb_per_pair=9.205e-05),
    "bpe_learn": StageCost(a=35.17, b=0.526, c=524.6, d=3.069, mb_per_pair=0.0001841),
    "clean": StageCost(a=0.1238, b=0.9327, c=53.83, d=0, mb_per_pair=0.0001928),
    "download": StageCost(a=0.1282, b=0.9019, c=38.39, d=0.0002056, mb_per_pair=8.331e-05),
    "network_vocab": StageCost(a=0.05216, b=0.9853, c=25.8, d=0.003597, mb_per_pair=0.0002052),
    "tokenize": StageCost(a=1.352, b=1.013, c=99.11, d=0.4271, mb_per_pair=8.638e-05),
    "train_data": StageCost(a=0.07823, b=0.9741, c=41.36, d=1.238, mb_per_pair=0.0002052),
    "truecase_apply": StageCost(a=0.9939, b=0.9913, c=63.36, d=1.413, mb_per_pair=9.205e-05),
    "truecase_train": StageCost(a=0.4994, b=0.9293, c=113.3, d=0.8483, mb_per_pair=9.205e-05),
}

# Rule -> the fitted stage whose curve it follows (the rules and the plan both read this).
STAGE_OF_RULE = {
    "tokenize": "tokenize",
    "roundtrip": "tokenize",
    "clean": "clean",
    "clean_shared": "clean",
    "truecase_train": "truecase_train",
    "truecase_apply": "truecase_apply",
    "bpe_learn": "bpe_learn",
    "bpe_vocab_shared": "bpe_apply",
    "bpe_apply": "bpe_apply",
    "network_vocab": "network_vocab",
}

FLOOR_MB = 1000
FLOOR_MINUTES = 10
MEMORY_HEADROOM = 1.5  # over the fitted peak: scatter, and allocator growth the benchmark did not see
TIME_HEADROOM = 3.0  # over the fitted seconds: a slower or shared cluster core
RETRY_GROWTH = 2.0  # each retry asks for this much more memory and time
# Below this predicted one-core time a sharded stage asks for one core. A job that asks for two waits
# until two cores are free at once, and the scheduler fills every free core with one-core jobs first:
# on the demo's 2 cores, beside one-core training, a 3-second truecasing job waited 17 minutes and
# held back the two runs that needed it. Above it, the pool's start-up is small beside the work.
SHARDING_FROM_SECONDS = 60.0


def mem_mb(stage: str, size_mb: float, attempt: int = 1) -> int:
    """The memory request (MB) of a ``stage`` (or rule) job reading ``size_mb`` of input, at ``attempt``."""
    predicted = STAGES[STAGE_OF_RULE.get(stage, stage)].peak_mb(size_mb) * MEMORY_HEADROOM
    return math.ceil(max(FLOOR_MB, predicted) * RETRY_GROWTH ** (attempt - 1))


def runtime_minutes(stage: str, size_mb: float, attempt: int = 1) -> int:
    """The runtime request (minutes) of a ``stage`` (or rule) job reading ``size_mb``, at ``attempt``."""
    predicted = STAGES[STAGE_OF_RULE.get(stage, stage)].seconds(size_mb) * TIME_HEADROOM / 60
    return math.ceil(max(FLOOR_MINUTES, predicted) * RETRY_GROWTH ** (attempt - 1))


def threads(stage: str, pairs: int | None, most: int) -> int:
    """The cores a sharded ``stage`` (or rule) job over ``pairs`` lines asks for: ``most`` where its
    predicted one-core time reaches :data:`SHARDING_FROM_SECONDS` or the size is not known before
    the job runs (``None``: a corpus still to be downloaded), else one. Snakemake fixes a job's threads
    when it plans the DAG, before the input exists, so this cannot read ``input.size_mb``."""
    if pairs is None:
        return most
    cost = STAGES[STAGE_OF_RULE.get(stage, stage)]
    return most if cost.seconds(pairs * cost.mb_per_pair) >= SHARDING_FROM_SECONDS else 1


def grown(request: float, attempt: int) -> int:
    """A fixed request grown for a retry (the experiment's own `runtime`, a download's)."""
    return math.ceil(request * RETRY_GROWTH ** (attempt - 1))


def train_mem_mb(configured_mb: int, size_mb: float, attempt: int = 1) -> int:
    """A training run's memory: the configured request or, if larger, holding its training data
    (stage ``train_data``: reading and binarising the BPE'd corpus in the process), with headroom."""
    data = STAGES["train_data"].peak_mb(size_mb) * MEMORY_HEADROOM
    return grown(max(configured_mb, data), attempt)


def decoding_mem_mb(floor_mb: int, size_mb: float, attempt: int = 1) -> int:
    """A translation job: its inputs (the model, twice), the decoder cache that ``translate`` keeps
    each batch within (``DECODER_CACHE_MB``) and the rest, above the floor, grown for a retry."""
    return grown(max(floor_mb, 2 * size_mb + DECODER_CACHE_MB + DECODING_OVERHEAD_MB), attempt)


def input_sized_mb(floor_mb: int, size_mb: float, attempt: int = 1) -> int:
    """A rule without a fitted curve: its floor or twice its input, grown for a retry."""
    return grown(max(floor_mb, 2 * size_mb), attempt)
