"""Sub-command ``parents``: subword parent positions from a parse and the BPE-segmented corpus.

    nmtvariants parents --conllu FILE --bpe FILE [--mode middle|first] [-o FILE]
    nmtvariants parse IN -o OUT.conllu --lang L --model-dir DIR [--batch-size N] [--device D]
    nmtvariants stanza-train --train T.conllu --dev D.conllu --lang L --model-dir DIR \\
        --tagger-steps N --parser-steps N [--tagger-hidden N ...] [--device cpu]
    nmtvariants stanza-score --gold TEST.conllu --lang L --model-dir DIR --pred P.conllu --json S.json

One line per sentence, one number per BPE token (``</s>`` excluded), 0-based; ``middle`` (PASCAL)
writes half positions such as ``6.5``, ``first`` (LISA) integers. Without ``-o`` the lines go to
stdout. See :mod:`nmtvariants.syntax.parents` for the rules and the storage convention,
:mod:`nmtvariants.syntax.stanza_parse` and :mod:`nmtvariants.syntax.stanza_train` for the parser.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from nmtvariants.fileio import atomic_write
from nmtvariants.syntax.parents import MIDDLE, MODES, format_x2, iter_parents_x2, write_parents
from nmtvariants.syntax.stanza_parse import DEFAULT_BATCH
from nmtvariants.syntax.stanza_train import StanzaSizes

SIZE_FLAGS = {field.name: "--" + field.name.replace("_", "-") for field in dataclasses.fields(StanzaSizes)}


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
    add_stanza_parsers(subparsers)


def run_parents(args: argparse.Namespace) -> int:
    if args.output and args.output != "-":
        write_parents(args.conllu, args.bpe, args.output, args.mode)
        return 0
    for values in iter_parents_x2(args.conllu, args.bpe, args.mode):
        sys.stdout.write(format_x2(values) + "\n")
    sys.stdout.flush()
    return 0


def add_stanza_parsers(subparsers: argparse._SubParsersAction) -> None:
    parse = subparsers.add_parser(
        "parse", help="dependency-parse a Moses-tokenised corpus with Stanza (CoNLL-U)"
    )
    parse.add_argument("input", help="Moses-tokenised text, one sentence per line")
    parse.add_argument("-o", "--output", required=True, help="CoNLL-U, one sentence per input line")
    parse.add_argument("--lang", required=True)
    parse.add_argument("--model-dir", required=True, help="holds <lang>_tagger.pt and <lang>_parser.pt")
    parse.add_argument("--batch-size", type=int, default=DEFAULT_BATCH, help="lines per Stanza call")
    parse.add_argument("--device", help="torch device (default: cuda when available)")
    parse.set_defaults(func=run_parse)

    train = subparsers.add_parser("stanza-train", help="train a Stanza tagger + parser offline on UD CoNLL-U")
    train.add_argument("--train", required=True)
    train.add_argument("--dev", required=True)
    train.add_argument("--lang", required=True)
    train.add_argument("--model-dir", required=True)
    train.add_argument("--tagger-steps", type=int, required=True)
    train.add_argument("--parser-steps", type=int, required=True)
    for name, flag in SIZE_FLAGS.items():
        default = getattr(StanzaSizes(), name)
        kind = _switch if isinstance(default, bool) else int
        train.add_argument(flag, dest=name, type=kind, default=default)
    train.add_argument("--device", default="cpu")
    train.add_argument("--seed", type=int, default=1234)
    train.set_defaults(func=run_stanza_train)

    score = subparsers.add_parser(
        "stanza-score", help="UPOS/UAS/LAS of the Stanza models on a gold treebank (gold words)"
    )
    score.add_argument("--gold", required=True, help="gold CoNLL-U (e.g. UD EWT test)")
    score.add_argument("--lang", required=True)
    score.add_argument("--model-dir", required=True)
    score.add_argument("--pred", required=True, help="the parse, CoNLL-U")
    score.add_argument("--json", required=True, help="the scores, with the models' training record")
    score.add_argument("--batch-size", type=int, default=DEFAULT_BATCH)
    score.add_argument("--device", help="torch device (default: cuda when available)")
    score.set_defaults(func=run_stanza_score)


def _switch(text: str) -> bool:
    """A yes/no option as the workflow writes it from YAML (``True``/``False``) or by hand (1/0)."""
    value = text.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r}: expected true or false")


def run_parse(args: argparse.Namespace) -> int:
    from nmtvariants.syntax.stanza_parse import StanzaModels, parse_file

    parse_file(
        args.input, args.output, StanzaModels(Path(args.model_dir), args.lang), args.batch_size, args.device
    )
    return 0


def run_stanza_train(args: argparse.Namespace) -> int:
    from nmtvariants.syntax.stanza_train import train_stanza

    train_stanza(
        args.train,
        args.dev,
        args.model_dir,
        args.lang,
        args.tagger_steps,
        args.parser_steps,
        sizes=StanzaSizes(**{name: getattr(args, name) for name in SIZE_FLAGS}),
        device=args.device,
        seed=args.seed,
    )
    return 0


def run_stanza_score(args: argparse.Namespace) -> int:
    from nmtvariants.syntax.attachment import attachment_scores
    from nmtvariants.syntax.conllu import read_conllu, write_conllu
    from nmtvariants.syntax.stanza_parse import StanzaModels, parse_treebank
    from nmtvariants.syntax.stanza_train import training_record

    models = StanzaModels(Path(args.model_dir), args.lang)
    models.check()
    gold = read_conllu(args.gold)
    predicted = parse_treebank(gold, models, args.batch_size, args.device)
    write_conllu(args.pred, predicted)
    scores = attachment_scores(gold, read_conllu(args.pred), (args.gold, args.pred))
    record = training_record(models)
    document = {
        "gold": args.gold,
        "lang": args.lang,
        "models": str(models.model_dir),
        "scorer": "gold words; CoNLL 2018 conventions (punctuation counted, LAS on universal relations)",
        **scores,
        "training": json.loads(record.read_text()) if record.is_file() else None,
    }
    with atomic_write(args.json) as out:
        json.dump(document, out, indent=2, sort_keys=True)
        out.write("\n")
    print(f"{args.gold}: UPOS {scores['upos']:.2f} UAS {scores['uas']:.2f} LAS {scores['las']:.2f}")
    return 0
