"""Sub-commands for the Moses-style text steps; each reads a file or stdin and writes a file or stdout.

nmtvariants normalize  -l LANG [IN] [-o OUT] [--lowercase] [--no-perl-parity] [-j N]
nmtvariants tokenize   -l LANG [IN] [-o OUT] [-a] [--no-escape] [-j N]
nmtvariants detokenize -l LANG [IN] [-o OUT] [--no-unescape] [-j N]
nmtvariants truecase train --model M [IN]
nmtvariants truecase apply [--model M] [IN] [-o OUT] [-j N]
nmtvariants truecase undo  [IN] [-o OUT]
nmtvariants segment    -l ja|zh [--method M] [IN] [-o OUT] [-j N]
nmtvariants clean --src-in A --tgt-in B --src-out A2 --tgt-out B2 [--min 1 --max 80 --ratio 9]
                  [--report drops.json] [--kept A2.kept]
nmtvariants postprocess -l LANG [IN] [-o OUT] [--truecased] [--no-bpe] [--no-detokenize]
                  [--no-repair] [--translit-reverse MODULE:FUNCTION] [-j N]
nmtvariants roundtrip -l LANG --raw RAW --tok TOK --tc TC --bpe BPE --json OUT [--lowercase]
                  [--truecased]
nmtvariants apply-chain --corpus-dir data/CORPUS/SRC-TGT -l LANG [IN] [-o OUT] [--pretokenized]
                  [--config config.yaml] [--corpus NAME]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from nmtvariants.fileio import atomic_write, decode_lines, read_lines, write_lines
from nmtvariants.text import clean as clean_module
from nmtvariants.text.chain import TrainedChain, load_settings
from nmtvariants.text.moses import Detokenizer, Normalizer, Tokenizer
from nmtvariants.text.postprocess import InverseChain, load_callable
from nmtvariants.text.roundtrip import roundtrip_files
from nmtvariants.text.segment import METHODS, Segmenter
from nmtvariants.text.sharding import LineStep, map_lines
from nmtvariants.text.truecase import Detruecaser, Truecaser, train_truecaser

log = logging.getLogger(__name__)

STDIO = "-"


def _read(path: str) -> Iterator[str]:
    """Lines of a file, or of stdin for "-", decoded strictly with file/line/offset on error."""
    if path == STDIO:
        return decode_lines(sys.stdin.buffer, "<stdin>")
    return read_lines(path)


def _write(path: str, lines: Iterable[str]) -> int:
    if path != STDIO:
        return write_lines(path, lines)
    count = 0
    out = sys.stdout
    for line in lines:
        out.write(line + "\n")
        count += 1
    out.flush()
    return count


def _run_step(args: argparse.Namespace, step: LineStep) -> None:
    count = _write(args.output, map_lines(step, _read(args.input), args.processes))
    log.debug("%s: %d lines", args.command, count)


def _io_arguments(parser: argparse.ArgumentParser, parallel: bool = True) -> None:
    parser.add_argument("input", nargs="?", default=STDIO, help="input text (default: stdin)")
    parser.add_argument("-o", "--output", default=STDIO, help="output text (default: stdout)")
    if parallel:
        parser.add_argument(
            "-j", "--processes", type=int, default=1, help="worker processes (output is identical)"
        )


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("normalize", help="Moses normalize-punctuation.perl")
    parser.add_argument("-l", "--lang", required=True)
    parser.add_argument("--lowercase", action="store_true", help="lower-case first (lowercase.perl)")
    parser.add_argument(
        "--no-perl-parity",
        dest="perl_parity",
        action="store_false",
        help="sacremoses' own mapping of ’ to ' instead of Moses' \"",
    )
    _io_arguments(parser)
    parser.set_defaults(func=lambda a: _run_step(a, Normalizer(a.lang, a.lowercase, a.perl_parity)))

    parser = subparsers.add_parser("tokenize", help="Moses tokenizer.perl")
    parser.add_argument("-l", "--lang", required=True)
    parser.add_argument("-a", "--aggressive", action="store_true", help="split hyphens as @-@")
    parser.add_argument("--no-escape", dest="escape", action="store_false", help="no XML escaping")
    _io_arguments(parser)
    parser.set_defaults(func=lambda a: _run_step(a, Tokenizer(a.lang, a.aggressive, a.escape)))

    parser = subparsers.add_parser("detokenize", help="Moses detokenizer.perl")
    parser.add_argument("-l", "--lang", required=True)
    parser.add_argument("--no-unescape", dest="unescape", action="store_false")
    _io_arguments(parser)
    parser.set_defaults(func=lambda a: _run_step(a, Detokenizer(a.lang, a.unescape)))

    _add_truecase(subparsers)

    parser = subparsers.add_parser("segment", help="Japanese / Chinese word segmentation")
    parser.add_argument("-l", "--lang", required=True, choices=sorted(METHODS))
    parser.add_argument("--method", help="ja: mecab; zh: jieba (default) or chars")
    _io_arguments(parser)
    parser.set_defaults(func=lambda a: _run_step(a, Segmenter(a.lang, a.method)))

    parser = subparsers.add_parser("clean", help="Moses clean-corpus-n.perl for training data")
    parser.add_argument("--src-in", required=True, type=Path)
    parser.add_argument("--tgt-in", required=True, type=Path)
    parser.add_argument("--src-out", required=True, type=Path)
    parser.add_argument("--tgt-out", required=True, type=Path)
    parser.add_argument("--min", type=int, default=1, help="fewest tokens per side (default 1)")
    parser.add_argument("--max", type=int, default=80, help="most tokens per side (default 80)")
    parser.add_argument("--ratio", type=float, default=9.0, help="largest length ratio (default 9)")
    parser.add_argument("--ignore-ratio", action="store_true")
    parser.add_argument("--ignore-xml", action="store_true")
    parser.add_argument("--lowercase", action="store_true")
    parser.add_argument("--max-word-length", type=int, default=1000)
    parser.add_argument("--report", type=Path, help="JSON with the number of pairs dropped per reason")
    parser.add_argument(
        "--kept", type=Path, help="1-based input line numbers of the kept pairs (default: SRC_OUT.kept)"
    )
    parser.set_defaults(func=_run_clean)

    parser = subparsers.add_parser("postprocess", help="inverse chain: de-BPE, detruecase, detokenize")
    parser.add_argument("-l", "--lang", required=True)
    parser.add_argument("--truecased", action="store_true", help="the text was truecased: detruecase")
    parser.add_argument("--no-bpe", dest="bpe", action="store_false", help="do not remove @@ markers")
    parser.add_argument("--no-detokenize", dest="detokenize", action="store_false")
    parser.add_argument(
        "--no-repair", dest="repair", action="store_false", help="plain Moses detokenizer output"
    )
    parser.add_argument(
        "--translit-reverse",
        metavar="MODULE:FUNCTION",
        help="callable str -> str mapping transliterated tokens back (applied after de-BPE)",
    )
    _io_arguments(parser)
    parser.set_defaults(func=_run_postprocess)

    parser = subparsers.add_parser(
        "roundtrip", help="how exactly postprocess inverts the preprocessing files of a workflow run"
    )
    parser.add_argument("-l", "--lang", required=True)
    parser.add_argument("--raw", required=True, type=Path, help="raw text: data/<corpus>/raw/<split>.<lang>")
    parser.add_argument("--tok", required=True, type=Path, help="its tokenised file (data/<corpus>/tok/)")
    parser.add_argument("--tc", required=True, type=Path, help="its truecased file (<corpus>/<pair>/tc/)")
    parser.add_argument("--bpe", required=True, type=Path, help="its BPE file (<corpus>/<pair>/bpe/)")
    parser.add_argument("--json", required=True, type=Path, help="report to write")
    parser.add_argument("--lowercase", action="store_true", help="tokenize normalised with --lowercase")
    parser.add_argument("--truecased", action="store_true", help="postprocess detruecases (as its flag)")
    parser.set_defaults(func=_run_roundtrip)

    parser = subparsers.add_parser(
        "apply-chain", help="run foreign text through a pair's trained chain (with a token-count check)"
    )
    parser.add_argument(
        "--corpus-dir", required=True, type=Path, help="a workflow run's data/<corpus>/<src>-<tgt> folder"
    )
    parser.add_argument("-l", "--lang", required=True)
    parser.add_argument("--config", type=Path, default=Path("config.yaml"), help="the workflow's config")
    parser.add_argument("--corpus", help="corpus key in the config (default: the folder above --corpus-dir)")
    parser.add_argument(
        "--pretokenized", action="store_true", help="the input is tokenised: keep its tokens, never re-split"
    )
    _io_arguments(parser, parallel=False)
    parser.set_defaults(func=_run_apply_chain)


def _add_truecase(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("truecase", help="Moses truecaser: train, apply, undo")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    train = actions.add_parser("train", help="learn a model from tokenised training text")
    train.add_argument("--model", required=True, type=Path)
    train.add_argument("input", nargs="?", default=STDIO)
    train.set_defaults(func=_run_truecase_train)

    apply = actions.add_parser("apply", help="truecase tokenised text")
    apply.add_argument(
        "--model", type=Path, help="truecase model; none: the text unchanged (preprocess.truecase: false)"
    )
    _io_arguments(apply)
    apply.set_defaults(func=_run_truecase_apply)

    undo = actions.add_parser("undo", help="detruecase: capitalise sentence starts")
    _io_arguments(undo)
    undo.set_defaults(func=lambda a: _run_step(a, Detruecaser()))


def _run_truecase_train(args: argparse.Namespace) -> None:
    types = train_truecaser(_read(args.input), args.model)
    log.info("truecase model %s: %d types", args.model, types)


def _run_truecase_apply(args: argparse.Namespace) -> None:
    """Without a model the stage is the identity: a corpus with ``truecase: false`` still has its
    ``tc/`` files (the same lines), so no rule downstream needs a case of its own."""
    if args.model is None:
        count = _write(args.output, _read(args.input))
        log.info("truecase apply without a model: %d lines copied unchanged", count)
        return
    _run_step(args, Truecaser(args.model))


def _run_clean(args: argparse.Namespace) -> None:
    settings = clean_module.CleanSettings(
        min_tokens=args.min,
        max_tokens=args.max,
        ratio=args.ratio,
        ignore_ratio=args.ignore_ratio,
        ignore_xml=args.ignore_xml,
        lowercase=args.lowercase,
        max_word_length=args.max_word_length,
    )
    report = clean_module.clean_files(
        args.src_in, args.tgt_in, args.src_out, args.tgt_out, settings, args.report, args.kept
    )
    log.info(
        "clean: kept %d of %d pairs; dropped %s",
        report["kept"],
        report["input_pairs"],
        report["dropped"],
    )


def _run_postprocess(args: argparse.Namespace) -> None:
    translit = load_callable(args.translit_reverse) if args.translit_reverse else None
    chain = InverseChain(
        args.lang,
        bpe=args.bpe,
        truecased=args.truecased,
        detokenize=args.detokenize,
        repair=args.repair,
        translit_reverse=translit,
    )
    _run_step(args, chain)


def _run_roundtrip(args: argparse.Namespace) -> None:
    report = roundtrip_files(
        args.lang, args.raw, args.tok, args.tc, args.bpe, lowercase=args.lowercase, detruecase=args.truecased
    )
    with atomic_write(args.json) as out:
        json.dump(report, out, indent=2, ensure_ascii=False)
        out.write("\n")
    log.info(
        "roundtrip %s: inverse %.2f%% identical, end-to-end %.2f%%",
        args.raw,
        100 * report["inverse"]["identical_fraction"],
        100 * report["end_to_end"]["identical_fraction"],
    )


def _run_apply_chain(args: argparse.Namespace) -> None:
    corpus = args.corpus or args.corpus_dir.resolve().parent.name
    chain = TrainedChain.from_corpus_dir(args.corpus_dir, args.lang, load_settings(args.config, corpus))
    source = "<stdin>" if args.input == STDIO else args.input
    count = _write(args.output, chain.apply(_read(args.input), source, args.pretokenized))
    log.info("apply-chain %s: %d lines through the %s chain of %s", source, count, args.lang, args.corpus_dir)
