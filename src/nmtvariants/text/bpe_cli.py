"""Sub-commands `translit`, `bpe learn|apply|undo` and `vocab` (files or stdin/stdout).

    nmtvariants translit [-r] [IN] [-o OUT]
    nmtvariants bpe learn --input en=train.en --input ru=train.ru -s 32000 --codes C --vocab-dir D \\
        [--translit ru] [--shared fr=train.fr]
    nmtvariants bpe count --codes C [IN] -o vocab.fr
    nmtvariants bpe apply --codes C [--vocab V --threshold 50] [IN] [-o OUT]
    nmtvariants bpe undo [IN] [-o OUT]
    nmtvariants vocab FILE... -o vocab.txt
    nmtvariants follow-clean --kept clean/train.kept [IN] -o OUT

A language that shares a pair's BPE (``preprocess.bpe.shared_with``) goes through the pair's chain:
``follow-clean`` keeps its training lines that the pair's cleaning kept, ``bpe learn --shared`` learns
the merges on it too, and ``bpe count`` writes its ``vocab.<lang>`` (in a job of its own, so that the
workflow declares one file per job; the counts are those ``bpe learn`` would write).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from nmtvariants.errors import InputError
from nmtvariants.fileio import atomic_write, decode_lines, read_lines
from nmtvariants.text.bpe import (
    DEFAULT_THRESHOLD,
    BPESegmenter,
    build_network_vocab,
    learn_joint_bpe,
    true_counts,
    undo_bpe,
)
from nmtvariants.text.subword_map import SEPARATOR
from nmtvariants.text.translit import TRANSLITERATIONS, iso9_to_cyrillic, iso9_to_latin


def _lines(path: str | None) -> Iterator[str]:
    if path is None or path == "-":
        return decode_lines(sys.stdin.buffer, "<stdin>")
    return read_lines(path)


def map_lines(source: str | None, target: str | None, function: Callable[[str], str]) -> int:
    """Apply ``function`` to every line of a file (or stdin); write a file atomically (or stdout)."""
    count = 0
    if target is None or target == "-":
        out = sys.stdout
        for line in _lines(source):
            out.write(function(line) + "\n")
            count += 1
        out.flush()
        return count
    with atomic_write(target) as handle:
        for line in _lines(source):
            handle.write(function(line) + "\n")
            count += 1
    return count


def _translit(args: argparse.Namespace) -> int:
    map_lines(args.input, args.output, iso9_to_cyrillic if args.reverse else iso9_to_latin)
    return 0


def _parse_pairs(values: list[str], option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        lang, sep, path = value.partition("=")
        if not sep or not lang or not path:
            raise InputError(f"{option} {value!r}: expected LANG=VALUE, e.g. {option} en=train.en")
        if lang in pairs:
            raise InputError(f"{option}: language '{lang}' given twice")
        pairs[lang] = path
    return pairs


def _bpe_learn(args: argparse.Namespace) -> int:
    files = _parse_pairs(args.inputs, "--input")
    shared = _parse_pairs(args.shared or [], "--shared")
    twice = sorted(set(files) & set(shared))
    if twice:
        raise InputError(f"--shared {twice[0]}: already given with --input")
    translit = {}
    for value in args.translit or []:
        lang, _, scheme = value.partition("=")
        scheme = scheme or "iso9"
        if scheme not in TRANSLITERATIONS:
            raise InputError(
                f"--translit {value}: unknown scheme '{scheme}' (known: {sorted(TRANSLITERATIONS)})"
            )
        translit[lang] = TRANSLITERATIONS[scheme]
    result = learn_joint_bpe(
        {**files, **shared},
        args.symbols,
        args.codes,
        args.vocab_dir,
        translit,
        args.min_frequency,
        args.num_workers,
        vocab_langs=list(files),
    )
    # what to apply per language, for scripts
    print(
        json.dumps(
            {
                "codes": {k: str(v) for k, v in result.codes.items()},
                "vocab": {k: str(v) for k, v in result.vocab.items()},
            }
        )
    )
    return 0


def _bpe_apply(args: argparse.Namespace) -> int:
    segmenter = BPESegmenter(args.codes, args.vocab, args.threshold if args.vocab else None, args.separator)
    map_lines(args.input, args.output, segmenter)
    return 0


def _bpe_count(args: argparse.Namespace) -> int:
    true_counts(args.codes, args.input, args.output)
    return 0


def _follow_clean(args: argparse.Namespace) -> int:
    from nmtvariants.text.clean import read_kept, select_lines

    lines = select_lines(args.input, read_kept(args.kept))
    with atomic_write(args.output) as out:
        out.writelines(line + "\n" for line in lines)
    return 0


def _bpe_undo(args: argparse.Namespace) -> int:
    map_lines(args.input, args.output, lambda line: undo_bpe(line, args.separator))
    return 0


def _vocab(args: argparse.Namespace) -> int:
    build_network_vocab([Path(path) for path in args.files], args.output, args.min_count)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    translit = subparsers.add_parser("translit", help="ISO 9 transliteration (Lingua::Translit's table)")
    translit.add_argument("input", nargs="?", help="input file (default: stdin)")
    translit.add_argument("-o", "--output", help="output file (default: stdout)")
    translit.add_argument("-r", "--reverse", action="store_true", help="Latin -> Cyrillic")
    translit.set_defaults(func=_translit)

    bpe = subparsers.add_parser("bpe", help="joint BPE (subword-nmt): learn, apply, undo")
    actions = bpe.add_subparsers(dest="bpe_command", metavar="ACTION", required=True)

    learn = actions.add_parser("learn", help="learn joint codes and per-language vocabularies")
    learn.add_argument("--input", dest="inputs", action="append", required=True, metavar="LANG=FILE")
    learn.add_argument("-s", "--symbols", type=int, required=True, help="number of merge operations")
    learn.add_argument("--codes", required=True, help="codes file to write")
    learn.add_argument("--vocab-dir", required=True, help="folder for vocab.LANG files")
    learn.add_argument(
        "--translit",
        action="append",
        metavar="LANG[=iso9]",
        help="learn on this language transliterated (Emelin et al.'s Russian procedure)",
    )
    learn.add_argument(
        "--shared",
        action="append",
        metavar="LANG=FILE",
        help="a further language: the merges are learned on it too, no vocab.LANG is written (`bpe count`)",
    )
    learn.add_argument("--min-frequency", type=int, default=2)
    learn.add_argument("--num-workers", type=int, default=1)
    learn.set_defaults(func=_bpe_learn)

    apply = actions.add_parser("apply", help="segment text (same output as subword-nmt apply-bpe)")
    apply.add_argument("input", nargs="?", help="input file (default: stdin)")
    apply.add_argument("-o", "--output", help="output file (default: stdout)")
    apply.add_argument("--codes", required=True)
    apply.add_argument("--vocab", help="vocabulary for the threshold (vocab.LANG from `bpe learn`)")
    apply.add_argument("--threshold", type=int, default=DEFAULT_THRESHOLD)
    apply.add_argument("--separator", default=SEPARATOR)
    apply.set_defaults(func=_bpe_apply)

    count = actions.add_parser("count", help="sub-word counts of a text segmented with codes (a vocab.LANG)")
    count.add_argument("input", help="tokenised (truecased) training text")
    count.add_argument("-o", "--output", required=True, help="vocab.LANG to write")
    count.add_argument("--codes", required=True)
    count.set_defaults(func=_bpe_count)

    undo = actions.add_parser("undo", help="join sub-words (remove '@@ ')")
    undo.add_argument("input", nargs="?", help="input file (default: stdin)")
    undo.add_argument("-o", "--output", help="output file (default: stdout)")
    undo.add_argument("--separator", default=SEPARATOR)
    undo.set_defaults(func=_bpe_undo)

    vocab = subparsers.add_parser("vocab", help="network vocabulary from segmented training files")
    vocab.add_argument("files", nargs="+")
    vocab.add_argument("-o", "--output", required=True)
    vocab.add_argument("--min-count", type=int, default=1)
    vocab.set_defaults(func=_vocab)

    follow = subparsers.add_parser(
        "follow-clean", help="the lines of a further language that a pair's cleaning kept (.kept numbers)"
    )
    follow.add_argument("input", help="tokenised training text of the language, parallel with the pair's")
    follow.add_argument("-o", "--output", required=True)
    follow.add_argument("--kept", required=True, help="the pair's clean/train.kept (1-based line numbers)")
    follow.set_defaults(func=_follow_clean)
