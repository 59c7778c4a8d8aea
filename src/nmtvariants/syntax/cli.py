"""Sub-command ``parents``: subword parent positions from a parse and the BPE-segmented corpus.

    nmtvariants parents --conllu FILE --bpe FILE [--mode middle|first] [-o FILE]

One line per sentence, one number per BPE token (``</s>`` excluded), 0-based; ``middle`` (PASCAL)
writes half positions such as ``6.5``, ``first`` (LISA) integers. Without ``-o`` the lines go to
stdout. See :mod:`nmtvariants.syntax.parents` for the rules and the storage convention.
"""

from __future__ import annotations

import argparse
import sys

from nmtvariants.syntax.parents import MIDDLE, MODES, format_x2, iter_parents_x2, write_parents


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "parents", help="subword parent positions (PASCAL: middle, LISA: first) from CoNLL-U + BPE"
    )
    parser.add_argument("--conllu", required=True, help="the parse, one sentence per BPE line")
    parser.add_argument("--bpe", required=True, help="the BPE-segmented corpus (@@ continuation marks)")
    parser.add_argument(
        "--mode",
        choices=MODES,
        default=MIDDLE,
        help="middle: mean subword index of the head word (PASCAL); first: its first subword (LISA)",
    )
    parser.add_argument("-o", "--output", help="output file (default: stdout)")
    parser.set_defaults(func=run_parents)


def run_parents(args: argparse.Namespace) -> int:
    if args.output and args.output != "-":
        write_parents(args.conllu, args.bpe, args.output, args.mode)
        return 0
    for values in iter_parents_x2(args.conllu, args.bpe, args.mode):
        sys.stdout.write(format_x2(values) + "\n")
    sys.stdout.flush()
    return 0
