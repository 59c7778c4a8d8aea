"""Paired bootstrap resampling between a baseline and a system (Koehn 2004), via sacreBLEU's PairedTest.

sacreBLEU reimplements Moses' ``bootstrap-hypothesis-difference-significance.pl``: resample test-set
sentence indices with replacement, recompute corpus BLEU for both systems on each sample, and take
as p-value the share of samples whose (centred) absolute difference reaches the observed one. It
seeds NumPy from ``$SACREBLEU_SEED`` only, so the seed is passed through that variable for exactly
the duration of the test and restored afterwards.

PASCAL's own script (seed 1234, one-sided shifted null) differs in detail; sacreBLEU's two-sided
test is the modern standard and what we report, with the seed in the JSON.

One degenerate case is corrected: for two *identical* outputs every resampled difference is 0 and
sacreBLEU's strict ``>`` yields the minimum p = 1/(n+1), i.e. "significant". No difference cannot be
significant, so identical outputs get p = 1 and ``identical_outputs: true``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

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
