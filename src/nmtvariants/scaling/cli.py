"""Sub-command ``plan``: a config's predicted cost per stage on an N-core node, before running it.

    nmtvariants plan --configfile experiments/emelin2019.yaml --cores 32 --gpu-tokens-per-s 100000

prints a markdown table (stage, jobs, core-hours, longest job, peak memory, wall time on the node,
GPU-hours of the training runs). Jobs come from the workflow's dry run of the config (in an empty
folder, so that every job is planned); a corpus's size comes from ``--pairs CORPUS=N``, its
downloaded ``data/<corpus>/raw/train.*``, or the published sizes in :mod:`nmtvariants.scaling.plan`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from nmtvariants.config import training_runs, with_defaults
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.fileio import read_lines
from nmtvariants.scaling import plan


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "plan", help="predicted core-hours, memory, wall time and GPU-hours per stage"
    )
    parser.add_argument("--configfile", type=Path, required=True)
    parser.add_argument("--snakefile", type=Path, default=Path("Snakefile"))
    parser.add_argument("--cores", type=int, default=32, help="cores of one node (default 32)")
    parser.add_argument(
        "--gpu-tokens-per-s",
        type=float,
        help="training throughput of one GPU, target tokens per second (measured on one H200, "
        "Multi30k, 8,192-token batches: base model 146,000 in bf16 and 76,000 in fp32; "
        "benchmarks/results/gpu_bf16_attention.md)",
    )
    parser.add_argument("--pairs", action="append", default=[], metavar="CORPUS=N", help="training pairs")
    parser.add_argument("targets", nargs="*", help="workflow targets (default: the config's all)")
    parser.set_defaults(func=run_plan)


def corpus_pairs(config: dict, stated: list[str]) -> dict[str, int]:
    """Training pairs of each configured corpus: stated, counted from downloaded data, or published."""
    pairs = dict(plan.KNOWN_PAIRS)
    for name in config.get("corpora", {}):
        raw = sorted(Path("data", name, "raw").glob("train.*"))
        if raw:
            pairs[name] = sum(1 for _ in read_lines(raw[0]))
    for item in stated:
        name, _, count = item.partition("=")
        if not count.isdigit():
            raise InputError(f"--pairs {item}: give CORPUS=N with N a whole number of training pairs")
        pairs[name] = int(count)
    return pairs


def dry_run(snakefile: Path, configfile: Path, targets: list[str]) -> str:
    with tempfile.TemporaryDirectory() as empty:
        done = subprocess.run(
            [sys.executable, "-m", "snakemake", *targets, "-n", "-s", str(snakefile.resolve()), "-d", empty,
             "--configfile", str(configfile.resolve())],
            capture_output=True, text=True,
        )  # fmt: skip
    if done.returncode:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:]
        raise ConfigError(f"{configfile}: the workflow's dry run failed ({' '.join(last)}); run snakemake -n")
    return done.stdout + done.stderr


def run_plan(args: argparse.Namespace) -> None:
    config = with_defaults(
        yaml.safe_load(args.configfile.read_text()), args.snakefile.parent / "schemas/config.schema.yaml"
    )
    jobs = plan.parse_dry_run(dry_run(args.snakefile, args.configfile, args.targets))
    pairs = corpus_pairs(config, args.pairs)
    try:
        stages = plan.plan_data_path(jobs, pairs)
    except KeyError as missing:
        raise InputError(
            f"corpus {missing.args[0]}: its size is not known; give --pairs {missing.args[0]}=N"
        ) from None
    rows = list(stages.values())
    if any(job.rule == "train" for job in jobs):
        if args.gpu_tokens_per_s is None:
            raise InputError("the config trains models: give --gpu-tokens-per-s (one GPU's target tokens/s)")
        runs = training_runs(config)
        tokens = {
            run_id: plan.run_tokens(run.settings["train"], run.resources.get("gpus", 1))
            for run_id, run in runs.items()
        }
        rows.append(plan.plan_training(jobs, tokens, args.gpu_tokens_per_s))
    unplanned: dict[str, int] = {}
    for job in jobs:
        if job.rule not in plan.STAGE_OF_RULE and job.rule not in ("train", "all"):
            unplanned[job.rule] = unplanned.get(job.rule, 0) + 1
    sys.stdout.write(plan.markdown(rows, args.cores, unplanned))
