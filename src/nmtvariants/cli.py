"""The `nmtvariants` command: one sub-command per pipeline stage.

Each stage module exposes ``add_parser(subparsers)`` that registers its sub-command(s) and sets
``func`` on the parsed namespace. Modules are imported lazily by name so that `nmtvariants --help`
stays fast and a broken optional stage cannot take the others down.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from nmtvariants import __version__
from nmtvariants.errors import NMTVariantsError

# One line per stage module; each registers its own sub-commands.
COMMAND_MODULES: list[str] = [
    "nmtvariants.reporting.cli",
    "nmtvariants.corpora.cli",
    "nmtvariants.evaluation.cli",
    "nmtvariants.corpora.toyworld_cli",
    "nmtvariants.text.bpe_cli",
    "nmtvariants.text.cli",
    "nmtvariants.inference.cli",
    "nmtvariants.training.cli",
    "nmtvariants.reporting.report_cli",
    "nmtvariants.syntax.cli",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nmtvariants", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"nmtvariants {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        result = args.func(args)
    except NMTVariantsError as error:
        print(f"nmtvariants {args.command}: error: {error}", file=sys.stderr)
        return 2
    return int(result or 0)
