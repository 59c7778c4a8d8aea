"""Score tables: one row per (system, test set) from the evaluation JSONs, metrics as columns,
with the sacreBLEU signature of each metric kept beside the table so a number can be trusted later."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from nmtvariants.evaluation.results import read_scores_json

METRIC_LABELS = {
    "bleu": "BLEU",
    "chrf": "chrF",
    "chrf++": "chrF++",
    "ter": "TER",
    "tok-bleu": "tok. BLEU",
    "meteor": "METEOR",
    "ribes": "RIBES",
}


def scores_table(score_files: list[Path]) -> tuple[pd.DataFrame, dict[str, str]]:
    """Rows ``system`` (split into its ``experiment/pair/variant`` parts), ``testset`` and one column
    per metric; also the signatures, metric -> signature (they must agree across rows)."""
    rows, signatures = [], {}
    for path in score_files:
        record = read_scores_json(path)
        experiment, pair, variant = [*record["system"].split("/"), "", "", ""][:3]
        row = {"experiment": experiment, "pair": pair, "variant": variant, "testset": record["testset"]}
        for metric, result in record["scores"].items():
            row[METRIC_LABELS.get(metric, metric)] = result["score"]
            if "signature" in result:
                signatures[METRIC_LABELS.get(metric, metric)] = result["signature"]
        rows.append(row)
    return pd.DataFrame(rows), signatures


def signature_notes(signatures: dict[str, str]) -> str:
    return "\n".join(f"- {metric}: `{signature}`" for metric, signature in sorted(signatures.items()))
