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

    scores = subparsers.add_parser("scores-table", help="one table of evaluation JSONs (BLEU, chrF, ...)")
    scores.add_argument("scores", nargs="+", type=Path, help="JSON files from `nmtvariants evaluate`")
    scores.add_argument("--title", required=True)
    scores.add_argument("--out", type=Path, required=True, help="markdown table (CSV beside it)")
    scores.set_defaults(func=run_scores_table)


def run_scores_table(args: argparse.Namespace) -> None:
    from nmtvariants.reporting.results import scores_table, signature_notes

    frame, signatures = scores_table(args.scores)
    write_table(frame, args.out, title=args.title, notes="Signatures:\n\n" + signature_notes(signatures))


def run_data_stats(args: argparse.Namespace) -> None:
    frame = text_statistics(args.texts)
    write_table(
        frame,
        args.out,
        title="Data statistics",
        notes="Tokens are whitespace-separated words of the raw text.",
    )
