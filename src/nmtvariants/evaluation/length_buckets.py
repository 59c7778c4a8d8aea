"""BLEU by source-sentence length (PASCAL, Bugliarello & Okazaki 2020, Figure 2).

Sentences are grouped by the number of whitespace tokens of the *source* (the paper's ``len2bleu.sh``
buckets the tokenised source) and corpus BLEU is computed inside each bucket, so the curve shows where
a syntax-aware model helps (long sentences) rather than an average of sentence BLEU.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from nmtvariants.errors import ConfigError, InputError
from nmtvariants.evaluation.bleu import sacrebleu_score

DEFAULT_EDGES = (10, 20, 30, 40, 50)


def bucket_label(low: int, high: int | None) -> str:
    return f"{low}-{high}" if high is not None else f">={low}"


def length_buckets(
    lengths: Sequence[int], edges: Sequence[int] = DEFAULT_EDGES
) -> list[tuple[str, list[int]]]:
    """Indices per bucket ``[0, e1)``, ``[e1, e2)``, ..., ``[e_last, inf)``; labels use inclusive ends."""
    edges = list(edges)
    if any(b <= a for a, b in itertools.pairwise(edges)) or any(e <= 0 for e in edges):
        raise ConfigError(f"evaluate.length_edges: edges must be positive and increasing, got {edges}")
    bounds = [0, *edges]
    buckets: list[tuple[str, list[int]]] = []
    for k, low in enumerate(bounds):
        high = bounds[k + 1] if k + 1 < len(bounds) else None
        label = bucket_label(low, high - 1 if high is not None else None)
        members = [i for i, n in enumerate(lengths) if n >= low and (high is None or n < high)]
        buckets.append((label, members))
    return buckets


def bleu_by_source_length(
    sources: Sequence[str],
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]],
    lang: str,
    edges: Sequence[int] = DEFAULT_EDGES,
    tokenize: str | None = None,
) -> dict[str, Any]:
    """Corpus BLEU of each source-length bucket (empty buckets are listed with ``bleu: null``)."""
    if len(sources) != len(hyps):
        raise InputError(f"bleu-by-length: {len(sources)} source lines but {len(hyps)} hypotheses")
    rows = []
    for label, members in length_buckets([len(s.split()) for s in sources], edges):
        row: dict[str, Any] = {"bucket": label, "n_sentences": len(members), "bleu": None}
        if members:
            scored = sacrebleu_score(
                "bleu",
                [hyps[i] for i in members],
                [[ref[i] for i in members] for ref in refs],
                lang,
                tokenize,
            )
            row["bleu"] = scored["score"]
            row["signature"] = scored["signature"]
        rows.append(row)
    return {"edges": list(edges), "buckets": rows, "n_lines": len(hyps)}
