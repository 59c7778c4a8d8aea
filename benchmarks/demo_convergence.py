"""Do the demo's toy comparisons hold across training seeds? Every BLEU row, seed by seed, from one run.

A toy table prints one number per system; whether a difference between two rows is a finding or the
luck of one seed shows only when the same comparison is trained again with other seeds. This script
reads a workflow folder where the demo's experiments were trained with several ``seeds`` (the config
plus ``experiments/overlays/toy_seeds.yaml``) and writes, for every experiment, pair and test set: each
variant's BLEU per seed, its mean ± sd and spread, its difference from the experiment's reference
variant (its first, as the significance tests use) seed by seed and whether that difference has the
same sign in every seed, and each run's plateau record (``run.json``: the change of the validation
perplexity over the last fifth of its updates). Nothing is trained here: the workflow did that.

Usage::

    snakemake --cores 1 --configfile config.yaml experiments/overlays/toy_seeds.yaml -d WORK <tables>
    python benchmarks/demo_convergence.py --workdir WORK \\
        --configfile config.yaml experiments/overlays/toy_seeds.yaml \\
        --experiments baseline bugliarello2020 --date 2026-11-26 --out benchmarks/results/demo_convergence

Writes ``<out>.json`` and ``<out>.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from snakemake.utils import update_config

from nmtvariants.config import content_id, experiment_replicas, run_settings, with_defaults
from nmtvariants.hardware import cpu_model
from nmtvariants.layout import run_folder, scores_file
from nmtvariants.studies.libovicky2018.plan import Libovicky2018Plan

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "schemas" / "config.schema.yaml"


def merged_config(paths: Sequence[str]) -> dict[str, Any]:
    """The configs merged as Snakemake merges several ``--configfile`` (later ones update earlier ones,
    mapping by mapping), with the schema's defaults."""
    config: dict[str, Any] = {}
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            update_config(config, yaml.safe_load(handle) or {})
    return with_defaults(config, SCHEMA)


def score_file(config: dict[str, Any], experiment: str, pair: str, replica: str, testset: str) -> str:
    """A replica's test scores: the workflow's score file, or for the multi-source study its own
    scoring of the clean (not deranged) translation, which its tables read."""
    if config["experiments"][experiment]["study"] == "libovicky2018":
        return f"{Libovicky2018Plan.folder(experiment, pair, replica)}/{testset}.clean.json"
    return scores_file(experiment, pair, replica, testset)


def replica_records(workdir: Path, config: dict[str, Any], experiment: str, testset: str) -> list[dict]:
    """One record per replica of an experiment: its BLEU on ``testset`` and its run's plateau."""
    records = []
    for replica in experiment_replicas(config, experiment):
        run_id = content_id(run_settings(config, experiment, replica.pair, replica.variant, replica.seed))
        score_path = workdir / score_file(config, experiment, replica.pair, replica.name, testset)
        scores = json.loads(score_path.read_text(encoding="utf-8"))
        run_json = json.loads((workdir / run_folder(run_id) / "run.json").read_text(encoding="utf-8"))
        records.append({
            "pair": replica.pair,
            "variant": replica.variant,
            "seed": replica.seed,
            "run": run_id,
            "bleu": scores["scores"]["bleu"]["score"],
            "plateau": run_json.get("plateau"),
        })  # fmt: skip
    return records


def summary(values: Sequence[float]) -> dict[str, float | None]:
    return {
        "mean": statistics.fmean(values),
        "sd": statistics.stdev(values) if len(values) > 1 else None,
        "spread": max(values) - min(values),
    }


def compare(records: list[dict], reference: str) -> list[dict]:
    """Per (pair, variant): the seeds' BLEU, their summary, and the seed-by-seed difference from the
    reference variant with whether its sign is the same in every seed."""
    rows = []
    for pair in dict.fromkeys(r["pair"] for r in records):
        by_variant: dict[str, dict[int, dict]] = {}
        for record in records:
            if record["pair"] == pair:
                by_variant.setdefault(record["variant"], {})[record["seed"]] = record
        base = by_variant.get(reference, {})
        for variant, seeds in by_variant.items():
            bleu = [seeds[s]["bleu"] for s in seeds]
            paired = [s for s in seeds if s in base] if variant != reference else []
            deltas = [seeds[s]["bleu"] - base[s]["bleu"] for s in paired]
            signs = {(d > 0) - (d < 0) for d in deltas}
            rows.append({
                "pair": pair,
                "variant": variant,
                "seeds": list(seeds),
                "bleu": bleu,
                **summary(bleu),
                "delta": deltas,
                "same_sign": None if len(deltas) < 2 else len(signs) == 1 and 0 not in signs,
                "last_fifth_change": [(seeds[s]["plateau"] or {}).get("last_fifth_change") for s in seeds],
                "at_plateau": [(seeds[s]["plateau"] or {}).get("at_plateau") for s in seeds],
            })  # fmt: skip
    return rows


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# The demo's toy comparisons over training seeds",
        "",
        f"Measured {result['date']}; {result['machine']}. Every BLEU row of the listed toy experiments, seed"
        " by seed (sacreBLEU on the test set, the workflow's own score files); Δ: the row's BLEU minus"
        " its experiment's reference variant's, seed by seed; *holds*: Δ has the same sign in every seed"
        " (blank with one seed);"
        " last-fifth change: how much the run's validation perplexity still moved over the last fifth of"
        " its updates (run.json; at its plateau when under 2%).",
        "",
        f"Commands: `{result['workflow_command']}`, then `{result['command']}`",
        "",
        *[paragraph + "\n" for paragraph in result["notes"]],
    ]
    for experiment in result["experiments"]:
        lines += [
            f"## {experiment['name']} ({experiment['testset']}; reference: {experiment['reference']})",
            "",
            "| pair | variant | BLEU per seed | mean ± sd | spread | Δ per seed | holds | last-fifth change |"
            " plateau |",
            "|---|---|---|---:|---:|---|---|---|---|",
        ]
        for row in experiment["rows"]:
            holds = {None: "", True: "yes", False: "**no**"}[row["same_sign"]]
            lines.append(
                f"| {row['pair']} | {row['variant']} | {' / '.join(_num(b) for b in row['bleu'])} |"
                f" {_num(row['mean'])} ± {_num(row['sd'])} | {_num(row['spread'])} |"
                f" {' / '.join(f'{d:+.2f}' for d in row['delta'])} | {holds} |"
                f" {' / '.join('–' if c is None else f'{100 * c:.1f}%' for c in row['last_fifth_change'])} |"
                f" {' '.join('yes' if p else 'no' for p in row['at_plateau'])} |"
            )
        lines.append("")
    return "\n".join(lines)


def recorded_command(args: argparse.Namespace) -> str:
    """The command line that made the result, with the long texts (the workflow's command, printed
    beside it, and the notes, printed above the tables) shortened to ``...``."""
    words = ["python", "benchmarks/demo_convergence.py", "--workdir", args.workdir, "--configfile",
             *args.configfile, "--experiments", *args.experiments, "--testset", args.testset,
             "--workflow-command", "...", *(["--note", "..."] if args.note else []), "--date", args.date,
             "--out", args.out]  # fmt: skip
    return shlex.join(words)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True, help="the workflow folder the runs were made in")
    parser.add_argument("--configfile", nargs="+", required=True, help="as given to snakemake")
    parser.add_argument("--experiments", nargs="+", required=True)
    parser.add_argument("--testset", default="test")
    parser.add_argument("--workflow-command", required=True, help="the snakemake command that trained them")
    parser.add_argument("--note", action="append", default=[], help="a paragraph for the markdown")
    parser.add_argument("--date", required=True)
    parser.add_argument("--out", default="benchmarks/results/demo_convergence")
    args = parser.parse_args(argv)

    config = merged_config(args.configfile)
    workdir = Path(args.workdir)
    experiments = []
    for name in args.experiments:
        reference = next(iter(config["experiments"][name]["variants"]))
        records = replica_records(workdir, config, name, args.testset)
        experiments.append({
            "name": name, "testset": args.testset, "reference": reference, "records": records,
            "rows": compare(records, reference),
        })  # fmt: skip
    result = {
        "date": args.date,
        "machine": f"{cpu_model()}, {os.cpu_count()} cores",
        "command": recorded_command(args),
        "workflow_command": args.workflow_command,
        "notes": args.note,
        "experiments": experiments,
    }
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))


if __name__ == "__main__":
    main()
