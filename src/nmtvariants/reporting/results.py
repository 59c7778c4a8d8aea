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
from nmtvariants.evaluation.evaluate import multi30k_preprocess
from nmtvariants.evaluation.inputs import sha256_file
from nmtvariants.evaluation.meteor15 import NLTK_METEOR_LABEL
from nmtvariants.evaluation.results import read_scores_json
from nmtvariants.evaluation.significance import DEFAULT_SEED, REPLICA_METHOD, replica_bootstrap
from nmtvariants.fileio import read_lines
from nmtvariants.reporting.replicas import aggregate_replicas

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
        variant, seed = replica_seed(replica, None if seeds is None else seeds[index])
        row = {
            "experiment": experiment,
            "pair": pair,
            "variant": variant,
            "seed": seed,
            "testset": record["testset"],
        }
        for metric, result in record["scores"].items():
            row[metric_label(metric, result)] = result["score"]
        per_file[str(path)] = score_signatures(record)
        rows.append(row)
    return pd.DataFrame(rows), collect_signatures(per_file)


def replica_seed(replica: str, seed: object | None) -> tuple[str, object]:
    """(variant, seed) of a result folder name, given its seed or not (the study tables that read score
    records themselves use it too, so that every table reads a replica folder the same way)."""
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
    score_files: Sequence[Path],
    seeds: Sequence[object] | None = None,
    reference: str | None = None,
    significance_metrics: Sequence[str] = ("bleu",),
    n_samples: int = 1000,
    significance_seed: int = DEFAULT_SEED,
) -> tuple[pd.DataFrame, pd.DataFrame, list[object], Signatures, str]:
    """The scores table over replicas: one row per (experiment, pair, variant, test set) with ``n``,
    each metric's mean over seeds and ``<metric> sd`` (sample standard deviation), and each seed's
    score (``<metric> seed <s>``) -- the CSV frame; the markdown frame with ``mean ± sd`` cells; the
    seeds; the signatures (:func:`scores_table`); and, with a ``reference`` variant, the note that
    names the significance test whose p-values the ``<metric> p`` columns hold (else "")."""
    long, signatures = scores_table(score_files, seeds)
    metrics = [column for column in long.columns if column not in (*KEYS, "seed")]
    csv, markdown, seen = aggregate_replicas(long, KEYS, metrics)
    if reference is None:
        return csv, markdown, seen, signatures, ""
    p_values, method = replica_significance(
        score_files, seeds, reference, significance_metrics, n_samples, significance_seed
    )
    keys = list(csv[KEYS].itertuples(index=False, name=None))
    for name in significance_metrics:
        label = METRIC_LABELS.get(name, name)
        column = [p_values.get(key, {}).get(label, float("nan")) for key in keys]
        csv[significance_column(label)] = column
        markdown[significance_column(label)] = ["" if p != p else p for p in column]  # blank: reference
    columns = ", ".join(significance_column(METRIC_LABELS.get(name, name)) for name in significance_metrics)
    note = (
        f"Significance ({columns}): each variant against {reference} on the same test set, "
        f"over all replicas of both -- {method}."
    )
    return csv, markdown, seen, signatures, note


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


def significance_column(label: str) -> str:
    """The column of a metric's p-value against the reference variant."""
    return f"{label} p"


def replica_significance(
    score_files: Sequence[Path],
    seeds: Sequence[object] | None,
    reference: str,
    metrics: Sequence[str] = ("bleu",),
    n_samples: int = 1000,
    seed: int = DEFAULT_SEED,
) -> tuple[dict[tuple[str, str, str, str], dict[str, float]], str]:
    """p-values of every variant against ``reference`` (same experiment, pair and test set), each
    over *all* replicas of both (:func:`~nmtvariants.evaluation.significance.replica_bootstrap`),
    keyed like the table's rows (experiment, pair, variant, test set) -> metric label -> p; and the
    method's description for the table's notes.

    The outputs are the hypothesis and references each score file records (with their sha256: a
    file changed since it was scored is an error, not a silent mismatch)."""
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for index, path in enumerate(score_files):
        record = read_scores_json(path)
        experiment, pair, replica = [*record["system"].split("/"), "", "", ""][:3]
        variant, _ = replica_seed(replica, None if seeds is None else seeds[index])
        groups.setdefault((experiment, pair, variant, record["testset"]), []).append(record)
    p_values: dict[tuple[str, str, str, str], dict[str, float]] = {}
    for key, records in groups.items():
        experiment, pair, variant, testset = key
        baseline = groups.get((experiment, pair, reference, testset))
        if variant == reference or baseline is None:
            continue
        lang = records[0].get("lang") or pair.split("-")[-1]

        def scored(lines: list[str], preprocess: str | None = records[0].get("preprocess"), lang: str = lang):
            # the text as `evaluate` scored it (Multi30k's own tokenisation, when it was asked for)
            return multi30k_preprocess(lines, lang) if preprocess == "multi30k" else lines

        result = replica_bootstrap(
            [scored(_checked_lines(one["hypothesis"])) for one in baseline],
            [scored(_checked_lines(one["hypothesis"])) for one in records],
            [scored(_checked_lines(ref)) for ref in records[0]["references"]],
            lang,
            metrics,
            n_samples,
            seed,
            records[0].get("tokenize"),
        )
        p_values[key] = {
            METRIC_LABELS.get(name, name): record["p_value"] for name, record in result["metrics"].items()
        }
    method = REPLICA_METHOD.format(n=n_samples, seed=seed)
    return p_values, method


def _checked_lines(file: dict[str, str]) -> list[str]:
    """The lines of a file a score record names, if it still has the sha256 recorded then."""
    path = Path(file["path"])
    if not path.is_file():
        raise InputError(f"{path}: the file a score record names is gone; re-run its evaluate step")
    if file.get("sha256") and sha256_file(path) != file["sha256"]:
        raise InputError(f"{path}: changed since it was scored (sha256 differs); re-run its evaluate step")
    return list(read_lines(path))
