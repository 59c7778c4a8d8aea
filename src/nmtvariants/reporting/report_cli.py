"""`nmtvariants report`: write results/report.md from the tables, figures and records of a run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from nmtvariants.errors import ConfigError
from nmtvariants.reporting.report import write_report


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report", help="results/report.md: every table and figure with its provenance"
    )
    parser.add_argument("--results", type=Path, default=Path("results"), help="results folder")
    parser.add_argument("--data", type=Path, default=Path("data"), help="data folder (manifests)")
    parser.add_argument(
        "--models", type=Path, default=Path("models"), help="models folder (run.json: commits, hardware)"
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--config-json", help="the resolved config as a JSON string")
    source.add_argument("--config-file", type=Path, help="the resolved config as a YAML/JSON file")
    parser.add_argument(
        "--repo", type=Path, default=Path("."), help="git checkout whose commit wrote the report"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("results/report.md"),
        help="report (markdown); the full data manifest goes beside it as data_manifest.json",
    )
    parser.set_defaults(func=run_report)


def load_config(args: argparse.Namespace) -> dict:
    try:
        if args.config_json is not None:
            config = json.loads(args.config_json)
        else:
            config = yaml.safe_load(args.config_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, yaml.YAMLError, OSError) as error:
        raise ConfigError(f"cannot read the config for the report: {error}") from None
    if not isinstance(config, dict):
        raise ConfigError("the config for the report must be a mapping at the top level")
    return config


def run_report(args: argparse.Namespace) -> None:
    write_report(
        args.out,
        results_dir=args.results,
        data_dir=args.data,
        config=load_config(args),
        repo=args.repo,
        models_dir=args.models,
    )
