"""Paired bootstrap resampling between a baseline and a system (Koehn 2004), via sacreBLEU's PairedTest.

sacreBLEU reimplements Moses' ``bootstrap-hypothesis-difference-significance.pl``: resample test-set
sentence indices with replacement, recompute corpus BLEU for both systems on each sample, and take
as p-value the share of samples whose (centred) absolute difference reaches the observed one. It
seeds NumPy from ``$SACREBLEU_SEED`` only, so the seed is passed through that variable for exactly
the duration of the test and restored afterwards.

PASCAL's own script (seed 1234, one-sided shifted null) differs in detail; sacreBLEU's two-sided
test is the modern standard and what we report, with the seed in the JSON.

With several training seeds per system (replicas), :func:`replica_bootstrap` extends the same test
to resample replicas as well as sentences (below); with one replica on each side it *is* the test
above, sample for sample.

One degenerate case is corrected: for two *identical* outputs every resampled difference is 0 and
sacreBLEU's strict ``>`` yields the minimum p = 1/(n+1), i.e. "significant". No difference cannot be
significant, so identical outputs get p = 1 and ``identical_outputs: true``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from sacrebleu.significance import PairedTest

from nmtvariants.errors import InputError
from nmtvariants.evaluation.bleu import build_metric

DEFAULT_SEED = 12345
SIGNIFICANCE_METRICS = ("bleu", "chrf", "chrf++", "ter")


@contextlib.contextmanager
def _sacrebleu_seed(seed: int | None) -> Iterator[None]:
    previous = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = "None" if seed is None else str(int(seed))
    try:
        yield
    finally:
        if previous is None:
            del os.environ["SACREBLEU_SEED"]
        else:
            os.environ["SACREBLEU_SEED"] = previous


def paired_bootstrap(
    baseline: Sequence[str],
    system: Sequence[str],
    refs: Sequence[Sequence[str]],
    lang: str = "en",
    metrics: Sequence[str] = ("bleu",),
    n_samples: int = 1000,
    seed: int | None = DEFAULT_SEED,
    tokenize: str | None = None,
    names: tuple[str, str] = ("baseline", "system"),
) -> dict[str, Any]:
    """Paired bootstrap test of ``system`` against ``baseline``; returns a JSON-ready dict.

    For each metric: both scores, the bootstrap mean and 95% CI half-width of each, and the
    p-value of the system's difference from the baseline (two-sided, ``(count + 1) / (n + 1)``).
    """
    if len(baseline) != len(system) or any(len(ref) != len(system) for ref in refs):
        raise InputError(
            f"significance: baseline has {len(baseline)} lines, system {len(system)}, references "
            f"{[len(ref) for ref in refs]}; all must be line-parallel translations of one test set"
        )
    metric_objects = {name: build_metric(name, lang, tokenize) for name in metrics}
    with _sacrebleu_seed(seed):
        test = PairedTest(
            [(names[0], list(baseline)), (names[1], list(system))],
            dict(metric_objects),
            [list(ref) for ref in refs],
            test_type="bs",
            n_samples=n_samples,
        )
        signatures, scores = test()
    identical = list(baseline) == list(system)
    out: dict[str, Any] = {
        "test": "paired-bootstrap",
        "identical_outputs": identical,
        "n_samples": n_samples,
        "seed": seed,
        "n_lines": len(system),
        "systems": list(names),
        "metrics": {},
    }
    # sacreBLEU keys results by its own metric names ("BLEU", "chrF2++"), in the order given.
    result_keys = [key for key in scores if key != "System"]
    for name, key in zip(metrics, result_keys, strict=True):
        base, sys_ = scores[key]
        out["metrics"][name] = {
            "signature": str(signatures[key]),
            "baseline": {"score": float(base.score), "mean": float(base.mean), "ci95": float(base.ci)},
            "system": {"score": float(sys_.score), "mean": float(sys_.mean), "ci95": float(sys_.ci)},
            "delta": float(sys_.score - base.score),
            "p_value": 1.0 if identical else float(sys_.p_value),
        }
    return out


# --- over replicas --------------------------------------------------------------------------------

REPLICA_TEST = "paired-bootstrap-sentences-and-replicas"
REPLICA_METHOD = (
    "paired bootstrap over sentences and replicas: each of {n} samples draws the test sentences with "
    "replacement (one draw shared by both systems, as Koehn 2004) and, independently, as many "
    "replicas (training seeds) of each system as it has, with replacement; the statistic is the "
    "difference of the two systems' mean corpus scores over the drawn replicas; p is two-sided, "
    "(1 + #samples whose centred absolute difference exceeds the observed one) / ({n} + 1); "
    "numpy default_rng(seed {seed})"
)


def replica_bootstrap(
    baseline: Sequence[Sequence[str]],
    system: Sequence[Sequence[str]],
    refs: Sequence[Sequence[str]],
    lang: str = "en",
    metrics: Sequence[str] = ("bleu",),
    n_samples: int = 1000,
    seed: int = DEFAULT_SEED,
    tokenize: str | None = None,
) -> dict[str, Any]:
    """Paired bootstrap of ``system`` against ``baseline`` over sentences *and* replicas.

    ``baseline`` and ``system`` are lists of replicas, each one output (a list of lines) of the
    test set. One training run is one draw of the runs a setting yields, so a test on one replica
    per system confuses the variant's effect with its seed's (Clark et al. 2011). Here every sample
    resamples the sentences (the same indices for every replica of both systems) and the replicas of
    each system, and compares the mean corpus scores of the drawn replicas:

    1. ``rng = numpy.random.default_rng(seed)``; sentence indices
       ``rng.choice(n_lines, size=(n_samples, n_lines))`` (exactly sacreBLEU's draw), then replica
       indices ``rng.choice(k, size=(n_samples, k))`` for the system's ``k`` replicas and
       ``rng.choice(m, size=(n_samples, m))`` for the baseline's ``m``;
    2. per sample, each replica's corpus score on the drawn sentences (from summed sentence
       statistics), averaged over the drawn replicas of each system; the sample difference is
       system minus baseline;
    3. ``p = (1 + #(|d*| - mean|d*| > |observed|)) / (n_samples + 1)`` (sacreBLEU's centred
       two-sided statistic), and the 2.5/97.5 percentiles of ``d*`` as a 95% interval.

    With one replica each this is sacreBLEU's paired bootstrap with the same seed, sample for
    sample. Returns a JSON-ready dict: per metric each replica's score, the means and sample
    standard deviations, the mean difference, its interval and p.
    """
    replicas = [list(map(list, baseline)), list(map(list, system))]
    if not replicas[0] or not replicas[1]:
        raise InputError("significance: each system needs at least one replica (one output per seed)")
    n_lines = len(refs[0]) if refs else 0
    lengths = sorted({len(output) for side in replicas for output in side} | {len(ref) for ref in refs})
    if lengths != [n_lines] or n_lines == 0:
        raise InputError(
            f"significance: replica and reference lengths {lengths}; every output of every replica "
            "and every reference must be line-parallel translations of one non-empty test set"
        )
    rng = np.random.default_rng(seed)
    sentences = rng.choice(n_lines, size=(n_samples, n_lines), replace=True)
    drawn_system = rng.choice(len(replicas[1]), size=(n_samples, len(replicas[1])), replace=True)
    drawn_baseline = rng.choice(len(replicas[0]), size=(n_samples, len(replicas[0])), replace=True)
    # weights[s, i]: how often sentence i is drawn in sample s; a sample's sums are weights @ stats
    weights = np.zeros((n_samples, n_lines))
    np.add.at(weights, (np.arange(n_samples)[:, None], sentences), 1.0)
    identical = sorted(map(tuple, replicas[0])) == sorted(map(tuple, replicas[1]))
    ref_lists = [list(ref) for ref in refs]
    out: dict[str, Any] = {
        "test": REPLICA_TEST,
        "method": REPLICA_METHOD.format(n=n_samples, seed=seed),
        "identical_outputs": identical,
        "n_samples": n_samples,
        "seed": seed,
        "n_lines": n_lines,
        "replicas": {"baseline": len(replicas[0]), "system": len(replicas[1])},
        "metrics": {},
    }
    for name in metrics:
        metric = build_metric(name, lang, tokenize)
        scores, samples = [], []
        for side in replicas:
            observed, resampled = [], []
            for output in side:
                stats = np.asarray(metric._extract_corpus_statistics(output, ref_lists), dtype=float)
                observed.append(float(metric._compute_score_from_stats(list(stats.sum(0))).score))
                resampled.append(
                    [metric._compute_score_from_stats(list(row)).score for row in weights @ stats]
                )
            scores.append(observed)
            samples.append(np.asarray(resampled).T)  # (n_samples, replicas)
        base_mean = samples[0][np.arange(n_samples)[:, None], drawn_baseline].mean(1)
        sys_mean = samples[1][np.arange(n_samples)[:, None], drawn_system].mean(1)
        diffs = sys_mean - base_mean
        delta = float(np.mean(scores[1]) - np.mean(scores[0]))
        centred = np.abs(diffs) - np.abs(diffs).mean()
        p_value = (int(np.sum(centred > abs(delta))) + 1) / (n_samples + 1)
        out["metrics"][name] = {
            "signature": str(metric.get_signature()),
            "baseline": _replica_summary(scores[0]),
            "system": _replica_summary(scores[1]),
            "delta": delta,
            "ci95": [float(np.percentile(diffs, 2.5)), float(np.percentile(diffs, 97.5))],
            "p_value": 1.0 if identical else float(p_value),
        }
    return out


def _replica_summary(scores: Sequence[float]) -> dict[str, Any]:
    """Each replica's score, their mean and sample standard deviation (None for one replica)."""
    return {
        "scores": list(scores),
        "mean": float(np.mean(scores)),
        "sd": float(np.std(scores, ddof=1)) if len(scores) > 1 else None,
    }
