"""Score tables: one row per (system, test set) from the evaluation JSONs, metrics as columns,
with the sacreBLEU signature of each metric kept beside the table so a number can be trusted later.
A system trained with several seeds is one row: mean ± sample standard deviation over its replicas
(nmtvariants.reporting.replicas), each seed's score kept in the CSV.

Signatures must agree across the rows of one table (same tokenizer, smoothing, sacreBLEU version),
or the rows are not comparable. A disagreement is not an error here -- the table is still worth
seeing -- but it is stated in the table's notes and in the report, never hidden by keeping one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from nmtvariants.config import REPLICA_SUFFIX
from nmtvariants.errors import InputError
from nmtvariants.evaluation.results import read_scores_json
from nmtvariants.reporting.replicas import aggregate_replicas

METRIC_LABELS = {
    "bleu": "BLEU",
    "chrf": "chrF",
    "chrf++": "chrF++",
    "ter": "TER",
    "tok-bleu": "tok. BLEU",
    "meteor": "METEOR",
    "ribes": "RIBES",
}

# metric label -> signature -> the score files that carry it
Signatures = dict[str, dict[str, list[str]]]


def score_signatures(record: Any) -> dict[str, str]:
    """Metric label -> signature of one score record, as ``evaluate`` writes it
    (``scores.<metric>.signature``); empty for records without scores."""
    scores = record.get("scores") if isinstance(record, dict) else None
    if not isinstance(scores, dict):
        return {}
    return {
        METRIC_LABELS.get(metric, metric): result["signature"]
        for metric, result in scores.items()
        if isinstance(result, dict) and isinstance(result.get("signature"), str)
    }


def collect_signatures(per_file: dict[str, dict[str, str]]) -> Signatures:
    """Group ``{file: {metric: signature}}`` by metric and signature (files in the given order)."""
    grouped: Signatures = {}
    for name, signatures in per_file.items():
        for metric, signature in signatures.items():
            grouped.setdefault(metric, {}).setdefault(signature, []).append(name)
    return grouped


UNRECORDED_SEED = "?"
KEYS = ["experiment", "pair", "variant", "testset"]


def scores_table(
    score_files: Sequence[Path], seeds: Sequence[object] | None = None
) -> tuple[pd.DataFrame, Signatures]:
    """One row per score file: ``system`` (split into its ``experiment/pair/variant`` parts), its
    training ``seed``, ``testset`` and one column per metric; also the signatures, metric ->
    signature -> files (one signature per metric when the rows agree).

    ``seeds`` gives each file's training seed; a replica folder ``<variant>-seed<N>`` (the further
    seeds of nmtvariants.config.replica_name) is then read back as ``variant``. Without ``seeds`` the
    seed comes from such a folder name, and is ``?`` for a plain one."""
    if seeds is not None and len(seeds) != len(score_files):
        raise InputError(
            f"scores-table: {len(seeds)} seeds for {len(score_files)} score files; give one seed per file"
        )
    rows, per_file = [], {}
    for index, path in enumerate(score_files):
        record = read_scores_json(path)
        experiment, pair, replica = [*record["system"].split("/"), "", "", ""][:3]
        variant, seed = _replica_seed(replica, None if seeds is None else seeds[index])
        row = {
            "experiment": experiment,
            "pair": pair,
            "variant": variant,
            "seed": seed,
            "testset": record["testset"],
        }
        for metric, result in record["scores"].items():
            row[METRIC_LABELS.get(metric, metric)] = result["score"]
        per_file[str(path)] = score_signatures(record)
        rows.append(row)
    return pd.DataFrame(rows), collect_signatures(per_file)


def _replica_seed(replica: str, seed: object | None) -> tuple[str, object]:
    """(variant, seed) of a result folder name, given its seed or not."""
    match = REPLICA_SUFFIX.match(replica)
    if seed is not None:
        seed = int(seed) if str(seed).lstrip("-").isdigit() else seed
        if match and str(match["seed"]) == str(seed):
            return match["variant"], seed
        return replica, seed
    if match:
        return match["variant"], int(match["seed"])
    return replica, UNRECORDED_SEED


def replicated_scores_table(
    score_files: Sequence[Path], seeds: Sequence[object] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, list[object], Signatures]:
    """The scores table over replicas: one row per (experiment, pair, variant, test set) with ``n``,
    each metric's mean over seeds and ``<metric> sd`` (sample standard deviation), and each seed's
    score (``<metric> seed <s>``) -- the CSV frame; the markdown frame with ``mean ± sd`` cells; the
    seeds; the signatures (:func:`scores_table`)."""
    long, signatures = scores_table(score_files, seeds)
    metrics = [column for column in long.columns if column not in (*KEYS, "seed")]
    csv, markdown, seen = aggregate_replicas(long, KEYS, metrics)
    return csv, markdown, seen, signatures


def signature_lines(signatures: Signatures) -> list[str]:
    """Markdown bullets: one signature per metric, or every signature with its files on disagreement."""
    lines = []
    for metric, by_signature in sorted(signatures.items()):
        if len(by_signature) == 1:
            lines.append(f"- {metric}: `{next(iter(by_signature))}`")
            continue
        lines.append(f"- {metric}: **signatures disagree across rows**, so these scores are not comparable:")
        lines += [f"  - `{signature}`: {', '.join(files)}" for signature, files in by_signature.items()]
    return lines


def signature_notes(signatures: Signatures) -> str:
    return "\n".join(signature_lines(signatures))
