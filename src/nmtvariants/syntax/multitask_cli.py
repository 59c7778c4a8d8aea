"""Sub-commands that derive the syntax baselines' inputs from a parsed, BPE'd corpus.

    nmtvariants multitask-corpus --source train.bpe.en --target train.bpe.de --conllu train.en.conllu \\
        --out-source mt.train.en --out-target mt.train.de      # training: translation + parse pairs
    nmtvariants multitask-corpus --source test.bpe.en --out-source mt.test.en   # valid/test: <TR> tags
    nmtvariants dep-labels --conllu train.en.conllu --bpe train.bpe.en -o train.dep_labels

``multitask-corpus`` writes the Currey & Heafield multi-task corpus (:mod:`nmtvariants.syntax.linearize`);
without ``--conllu`` it only tags the sources for translation (and copies ``--target`` to ``--out-target``
if both are given), which is what the multi-task model's valid and test sources need. ``dep-labels``
writes the Sennrich & Haddow label stream (:mod:`nmtvariants.syntax.dep_labels`).
"""

from __future__ import annotations

import argparse

from nmtvariants.errors import InputError
from nmtvariants.fileio import read_lines, write_lines
from nmtvariants.syntax.conllu import read_conllu
from nmtvariants.syntax.dep_labels import label_lines
from nmtvariants.syntax.linearize import multitask_pairs, translation_sources


def _multitask(args: argparse.Namespace) -> int:
    sources = list(read_lines(args.source))
    if args.conllu is None:
        if args.target is not None and args.out_target is None:
            raise InputError("multitask-corpus: --target without --conllu needs --out-target for its copy")
        write_lines(args.out_source, translation_sources(sources))
        if args.target is not None:
            write_lines(args.out_target, read_lines(args.target))
        return 0
    if args.target is None or args.out_target is None:
        raise InputError(
            "multitask-corpus: with --conllu (a training corpus) give --target and --out-target too"
        )
    names = (args.source, args.target, args.conllu)
    new_sources, new_targets = multitask_pairs(
        sources, list(read_lines(args.target)), read_conllu(args.conllu), names
    )
    write_lines(args.out_source, new_sources)
    write_lines(args.out_target, new_targets)
    return 0


def _dep_labels(args: argparse.Namespace) -> int:
    lines = label_lines(read_conllu(args.conllu), read_lines(args.bpe), args.conllu, args.bpe)
    write_lines(args.output, list(lines))
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    multitask = subparsers.add_parser(
        "multitask-corpus",
        help="Currey & Heafield multi-task corpus: <TR> translation pairs + <PA> linearised-parse pairs",
    )
    multitask.add_argument("--source", required=True, help="BPE'd source, one sentence per line")
    multitask.add_argument("--target", help="target side (training: required with --conllu)")
    multitask.add_argument("--conllu", help="parse of the source (omit for valid/test: tags only)")
    multitask.add_argument("--out-source", required=True)
    multitask.add_argument("--out-target")
    multitask.set_defaults(func=_multitask)

    labels = subparsers.add_parser(
        "dep-labels", help="Sennrich & Haddow input feature: UD relation id per BPE token (dep_labels)"
    )
    labels.add_argument("--conllu", required=True, help="parse of the tokenised source")
    labels.add_argument("--bpe", required=True, help="the BPE'd source")
    labels.add_argument("-o", "--output", required=True)
    labels.set_defaults(func=_dep_labels)
