"""Score tables: one row per (system, test set) from the evaluation JSONs, metrics as columns,
with the sacreBLEU signature of each metric kept beside the table so a number can be trusted later.

Signatures must agree across the rows of one table (same tokenizer, smoothing, sacreBLEU version),
or the rows are not comparable. A disagreement is not an error here -- the table is still worth
seeing -- but it is stated in the table's notes and in the report, never hidden by keeping one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from nmtvariants.evaluation.meteor15 import NLTK_METEOR_LABEL
from nmtvariants.evaluation.results import read_scores_json

# Column labels of score records that do not name their metric themselves (records written before
# METEOR records carried a "name" were NLTK's METEOR: Meteor 1.5 records always name themselves).
METRIC_LABELS = {
    "bleu": "BLEU",
    "chrf": "chrF",
    "chrf++": "chrF++",
    "ter": "TER",
    "tok-bleu": "tok. BLEU",
    "meteor": NLTK_METEOR_LABEL,
    "ribes": "RIBES",
}


def metric_label(metric: str, result: Any) -> str:
    """The column label of one metric's score record: the name the record gives (NLTK's METEOR and
    Meteor 1.5 are different metrics under one key), else the label of the metric key."""
    name = result.get("name") if isinstance(result, dict) else None
    return name if isinstance(name, str) else METRIC_LABELS.get(metric, metric)


# metric label -> signature -> the score files that carry it
Signatures = dict[str, dict[str, list[str]]]


def score_signatures(record: Any) -> dict[str, str]:
    """Metric label -> signature of one score record, as ``evaluate`` writes it
    (``scores.<metric>.signature``); empty for records without scores."""
    scores = record.get("scores") if isinstance(record, dict) else None
    if not isinstance(scores, dict):
        return {}
    return {
        metric_label(metric, result): result["signature"]
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


def scores_table(score_files: list[Path]) -> tuple[pd.DataFrame, Signatures]:
    """Rows ``system`` (split into its ``experiment/pair/variant`` parts), ``testset`` and one column
    per metric; also the signatures, metric -> signature -> files (one signature per metric when
    the rows agree)."""
    rows, per_file = [], {}
    for path in score_files:
        record = read_scores_json(path)
        experiment, pair, variant = [*record["system"].split("/"), "", "", ""][:3]
        row = {"experiment": experiment, "pair": pair, "variant": variant, "testset": record["testset"]}
        for metric, result in record["scores"].items():
            row[metric_label(metric, result)] = result["score"]
        per_file[str(path)] = score_signatures(record)
        rows.append(row)
    return pd.DataFrame(rows), collect_signatures(per_file)


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
