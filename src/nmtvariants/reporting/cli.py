"""Sub-commands that aggregate stage outputs into tables."""

from __future__ import annotations

import argparse
from pathlib import Path

from nmtvariants.reporting.data_statistics import text_statistics
from nmtvariants.reporting.tables import write_table


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("data-stats", help="sentences, tokens and types per split and language")
    parser.add_argument(
        "texts", nargs="+", type=Path, help="files data/<corpus>/raw/<split>.<lang> (corpus from the path)"
    )
    parser.add_argument("--out", type=Path, required=True, help="markdown table (CSV beside it)")
    parser.set_defaults(func=run_data_stats)

    check = subparsers.add_parser(
        "check-resources",
        help="the external resources (WordNet or Meteor 1.5, ImageNet weights, images, Stanza models, a "
        "mirror) a workflow config's experiments read and that are missing: one line, exit 2",
    )
    check.add_argument("configfile", type=Path, help="a workflow config (config.yaml, experiments/*.yaml)")
    check.add_argument("--schema", type=Path, default=Path("schemas/config.schema.yaml"))
    check.set_defaults(func=run_check_resources)

    scores = subparsers.add_parser("scores-table", help="one table of evaluation JSONs (BLEU, chrF, ...)")
    scores.add_argument("scores", nargs="+", type=Path, help="JSON files from `nmtvariants evaluate`")
    scores.add_argument("--title", required=True)
    scores.add_argument("--out", type=Path, required=True, help="markdown table (CSV beside it)")
    scores.add_argument(
        "--seeds",
        nargs="+",
        help="the training seed of each score file, in the same order (default: from <variant>-seed<N>)",
    )
    scores.add_argument(
        "--reference",
        help="test every other variant against this one, over all replicas of both (p-value columns)",
    )
    scores.add_argument(
        "--significance-metrics", default="bleu", help="comma list of bleu,chrf,chrf++,ter (default bleu)"
    )
    scores.add_argument("--significance-samples", type=int, default=1000)
    scores.add_argument("--significance-seed", type=int, default=12345)
    scores.add_argument(
        "--toy", action="store_true", help="the systems are toy-world runs: the note says what they can show"
    )
    scores.set_defaults(func=run_scores_table)

    figure = subparsers.add_parser(
        "figure", help="a PNG from a long-format CSV: per-layer lines, bars or an attention heat map"
    )
    figure.add_argument("--kind", required=True, choices=["layers", "bars", "heatmap"])
    figure.add_argument(
        "--csv", type=Path, required=True, help="long-format table (see reporting/figures.py)"
    )
    figure.add_argument("--output", type=Path, help="PNG file (default: beside the CSV, same stem)")
    figure.add_argument("--title", default="")
    figure.add_argument("--ylabel", help="y-axis label (layers, bars; default: the y column)")
    figure.add_argument("--x", help="x column (default: layer for layers, label for bars)")
    figure.add_argument("--y", default="value", help="value column of layers and bars (default: value)")
    figure.add_argument("--group", help="one line/bar colour per value (default: variant for layers)")
    figure.add_argument("--row-index", default="target_index", help="heatmap: row order column")
    figure.add_argument("--row-label", default="target_token", help="heatmap: row token column")
    figure.add_argument("--col-index", default="source_index", help="heatmap: column order column")
    figure.add_argument("--col-label", default="source_token", help="heatmap: column token column")
    figure.add_argument("--value", default="weight", help="heatmap: cell value column")
    figure.set_defaults(func=run_figure)


def run_figure(args: argparse.Namespace) -> None:
    from nmtvariants.reporting import figures

    if args.kind == "layers":
        drawn = figures.layer_figure(
            args.csv, args.x or "layer", args.y, args.group or "variant", args.title, args.ylabel
        )
    elif args.kind == "bars":
        drawn = figures.bar_figure(args.csv, args.x or "label", args.y, args.group, args.title, args.ylabel)
    else:
        drawn = figures.heatmap_figure(
            args.csv, args.row_index, args.row_label, args.col_index, args.col_label, args.value, args.title
        )
    out = figures.save_png(drawn, args.output or figures.png_path(args.csv))
    print(out)


def run_scores_table(args: argparse.Namespace) -> None:
    from nmtvariants.reporting.replicas import seeds_note
    from nmtvariants.reporting.results import replicated_scores_table, signature_notes

    frame, markdown, seeds, signatures, significance = replicated_scores_table(
        args.scores,
        args.seeds,
        args.reference,
        [name.strip() for name in args.significance_metrics.split(",") if name.strip()],
        args.significance_samples,
        args.significance_seed,
    )
    notes = seeds_note(seeds, args.toy)
    if significance:
        notes += "\n\n" + significance
    if signatures:
        notes += "\n\nSignatures:\n\n" + signature_notes(signatures)
    p_columns = {column: ".3f" for column in frame.columns if column.endswith(" p")}
    write_table(
        frame,
        args.out,
        title=args.title,
        notes=notes,
        sources=args.scores,
        markdown=markdown,
        floatfmt=p_columns,
    )


def run_data_stats(args: argparse.Namespace) -> None:
    frame = text_statistics(args.texts)
    write_table(
        frame,
        args.out,
        title="Data statistics",
        notes="Tokens are whitespace-separated words of the raw text.",
    )


def run_check_resources(args: argparse.Namespace) -> None:
    """What the workflow checks before its first job (Snakefile `onstart:`), without building the DAG,
    so that `make demo` can stop within seconds."""
    import yaml

    from nmtvariants.config import with_defaults
    from nmtvariants.errors import MissingResourceError
    from nmtvariants.resources import missing_resources_message

    config = with_defaults(yaml.safe_load(args.configfile.read_text(encoding="utf-8")) or {}, args.schema)
    missing = missing_resources_message(config)
    if missing:
        raise MissingResourceError(missing)
    print(f"{args.configfile}: every external resource is there")
