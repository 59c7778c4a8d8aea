"""Variants compose: one model with several studies' mechanisms, beside each mechanism alone and the
baseline (experiments with ``study: composition``, e.g. PASCAL + feature-fusion shortcuts + the
simplified decoder on Multi30k EN-DE).

No anchor toolkit builds such a model, so the table answers the questions a composition raises: does
the composed model keep each mechanism's gain (its difference to the baseline beside the sum of the
parts' differences: additive, less, or more), what it costs in parameters and training speed, and
whether the runs it is compared with trained alike (equal updates, the plateau record). Every score
is the mean ± sample sd over the experiment's seeds; the p-values are the core ``significance`` rule's
paired bootstrap over sentences and replicas against the baseline (one file per variant and test set,
shared with any other table that tests the same pair).

:func:`parts` finds the composed variants from the config: a variant whose switches are the union of
two or more other variants' switches. What the rules build and the table's manifest:
:mod:`nmtvariants.studies.composition.plan`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from nmtvariants.errors import InputError
from nmtvariants.reporting.manifest import Entry
from nmtvariants.reporting.replicas import format_mean_sd, mean_sd

METRICS = {"bleu": "BLEU", "chrf": "chrF"}
ROLES = (
    "scores",
    "run",
    "train_log",
    "checkpoint",
)  # every entry's files; significance but for the reference


def parts(variants: Mapping[str, Mapping[str, Any] | None]) -> dict[str, list[str]]:
    """Composed variant -> the variants it composes, in config order: those (two or more, with
    switches) whose every switch the composed variant sets to the same value, and which together set
    all of its switches. A variant without switches is the baseline, not a part."""
    switches = {name: dict(options or {}) for name, options in variants.items()}
    out = {}
    for name, composed in switches.items():
        found = [
            other
            for other, own in switches.items()
            if other != name and own and all(key in composed and composed[key] == own[key] for key in own)
        ]
        covered = {key for other in found for key in switches[other]}
        if len(found) >= 2 and covered == set(composed):
            out[name] = found
    return out


def _read_json(path: str | Path, what: str) -> dict[str, Any]:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no {what}; run the rule that writes it") from None
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: not JSON ({error}); re-run the rule that writes it") from None


def training_record(run_json: str | Path, train_log: str | Path) -> dict[str, Any]:
    """A replica's training as the table reports it: updates, wall minutes of the training loop (the
    log's last elapsed time), training target tokens/s and whether it reached its plateau."""
    from nmtvariants.training.logging_utils import training_speed

    run = _read_json(run_json, "run record")
    elapsed = pd.to_numeric(pd.read_csv(train_log)["elapsed_s"], errors="coerce").max()
    return {
        "updates": int(run["updates"]),
        "train min": float(elapsed) / 60 if elapsed == elapsed else math.nan,
        "train tok/s": training_speed(train_log),
        "at plateau": bool((run.get("plateau") or {}).get("at_plateau")),
    }


def parameter_count(checkpoint: str | Path) -> int:
    from nmtvariants.models import count_parameters
    from nmtvariants.models.checkpoint_io import load_model

    return count_parameters(load_model(checkpoint, map_location="cpu"))


def long_frame(entries: Sequence[Entry]) -> pd.DataFrame:
    """One row per (test set, variant, seed): each metric's score, the replica's training record and
    the variant's parameter count (read once per variant: every seed has the same architecture)."""
    rows, params = [], {}
    for entry in entries:
        files = entry.files
        scores = _read_json(files["scores"], "score record")["scores"]
        if entry.variant not in params:
            params[entry.variant] = parameter_count(files["checkpoint"])
        row = {"testset": entry.testset, "variant": entry.variant, "seed": entry.seed}
        for metric, label in METRICS.items():
            if metric not in scores:
                raise InputError(f"{files['scores']}: no {metric} score; add it to the experiment's metrics")
            row[label] = float(scores[metric]["score"])
        row.update(training_record(files["run"], files["train_log"]))
        row["params"] = params[entry.variant]
        rows.append(row)
    return pd.DataFrame(rows)


def significance(entries: Sequence[Entry]) -> tuple[dict[tuple[str, str], dict[str, float]], str]:
    """(test set, variant) -> metric label -> p over replicas, from the core rule's files; and the
    method sentence they record."""
    p_values, methods = {}, set()
    for entry in entries:
        path = entry.files.get("significance")
        if not path or (entry.testset, entry.variant) in p_values:
            continue
        record = _read_json(path, "significance test")
        methods.add(record["method"])
        p_values[entry.testset, entry.variant] = {
            label: float(record["metrics"][metric]["p_value"])
            for metric, label in METRICS.items()
            if metric in record["metrics"]
        }
    return p_values, " / ".join(sorted(methods))


def composition_table(
    entries: Sequence[Entry], reference: str, composed: Mapping[str, Sequence[str]]
) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The CSV frame (means, sds, each seed's score), the markdown frame (mean ± sd cells) and the
    notes: the significance method and, per composed variant and test set, its difference to the
    reference beside the sum of its parts' differences."""
    long = long_frame(entries)
    p_values, method = significance(entries)
    seeds = list(dict.fromkeys(long["seed"]))
    csv_rows, md_rows, notes = [], [], []
    means: dict[tuple[str, str, str], float] = {}
    for (testset, variant), group in long.groupby(["testset", "variant"], sort=False):
        csv_row = {"testset": testset, "variant": variant, "n": len(group)}
        md_row = {"test set": testset, "system": variant, "n": len(group)}
        for label in (*METRICS.values(), "train tok/s", "train min"):
            mean, sd, n = mean_sd(list(group[label]))
            means[testset, variant, label] = mean
            csv_row[label], csv_row[f"{label} sd"] = mean, sd
            md_row[label] = format_mean_sd(mean, sd, n, digits=0 if label == "train tok/s" else 2)
            if label in METRICS.values():
                for seed, value in zip(group["seed"], group[label], strict=True):
                    csv_row[f"{label} seed {seed}"] = value
                p = p_values.get((testset, variant), {}).get(label)
                csv_row[f"{label} p"] = p
                md_row[f"{label} p"] = "" if p is None else p  # blank: the reference
        csv_row["params"] = md_row["params"] = int(group["params"].iloc[0])
        csv_row["updates"] = md_row["updates"] = "/".join(str(u) for u in dict.fromkeys(group["updates"]))
        csv_row["at plateau"] = md_row["at plateau"] = f"{int(group['at plateau'].sum())} of {len(group)}"
        csv_rows.append(csv_row)
        md_rows.append(md_row)
    csv, markdown = pd.DataFrame(csv_rows), pd.DataFrame(md_rows)
    for label in METRICS.values():
        delta = [
            means[row["testset"], row["variant"], label] - means[row["testset"], reference, label]
            if (row["testset"], reference, label) in means
            else math.nan
            for row in csv_rows
        ]
        csv.insert(list(csv.columns).index(f"{label} sd") + 1, f"Δ{label}", delta)
        markdown.insert(list(markdown.columns).index(label) + 1, f"Δ{label}", [f"{d:+.2f}" for d in delta])
    for variant, its_parts in composed.items():
        for testset in dict.fromkeys(long["testset"]):
            for label in METRICS.values():
                base = means.get((testset, reference, label))
                whole = means.get((testset, variant, label))
                alone = [means.get((testset, part, label)) for part in its_parts]
                if base is None or whole is None or any(value is None for value in alone):
                    continue
                total = sum(value - base for value in alone) + 0.0  # no -0.00
                notes.append(
                    f"{testset}, {label}: {variant} {whole - base:+.2f} against {reference}; the sum of its "
                    f"parts' differences ({', '.join(its_parts)}) {total:+.2f}"
                )
    head = [
        f"Mean ± sample sd over {len(seeds)} seed(s) ({', '.join(str(seed) for seed in seeds)}); the CSV "
        "keeps each seed's score. Δ: difference of the means to "
        f"{reference}. Train tok/s: target tokens per second of the training loop; train min: its wall "
        "time; updates: the runs' update count (equal updates make the rows comparable)."
    ]
    if method:
        head.append(f"p: {method}.")
    return csv, markdown, head + ([("Additivity (composed vs its parts):")] if notes else []) + notes
