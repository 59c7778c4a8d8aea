"""Commands of the PASCAL study (rules/studies/bugliarello2020.smk).

    nmtvariants bugliarello2020-gold-parse --conllu raw/train.en.conllu --tokens en-de/tc/train.en \\
        [--kept en-de/clean/train.kept] -o en-de/parse/train.en.conllu
    nmtvariants bugliarello2020-table --table main|ablation --manifest JSON --out T.md
    nmtvariants bugliarello2020-length --manifest JSON --out F.csv
    nmtvariants bugliarello2020-parser-table --scores en.scores.json [...] --out parser.md

The manifest is a JSON list with one object per (task, system): ``experiment``, ``pair``, ``testset``,
``variant``, ``switches`` (the variant's config), and the files ``scores`` (one per seed, with their
``seeds``), ``significance`` (over all seeds; null for the Transformer) and ``length`` (first seed).
See :mod:`nmtvariants.studies.bugliarello2020`.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from nmtvariants.errors import InputError
from nmtvariants.fileio import atomic_write
from nmtvariants.reporting.deviations import applicable
from nmtvariants.reporting.replicas import seeds_note
from nmtvariants.reporting.tables import write_table
from nmtvariants.studies.bugliarello2020 import (
    DEVIATIONS,
    ablation_table,
    length_rows,
    main_table,
    parser_table,
    replica_scores,
    significance_method,
    table_conditions,
    write_gold_parse,
)
from nmtvariants.studies.bugliarello2020_plan import files

TITLES = {
    "main": "Bugliarello & Okazaki (2020), Table 1: BLEU of the syntax-aware models",
    "ablation": "Bugliarello & Okazaki (2020), Table 3: PASCAL layer (a) and variance (b) ablations",
}
NOTES = {
    "main": (
        "‡: p < 0.01 against the task's Transformer (paired bootstrap over sentences and every seed of "
        "both). delta: difference of the mean BLEU from the Transformer's; p: the test's p-value (4 "
        "decimals in the CSV). RIBES is reported for Japanese targets only (the paper's EN-JA column); "
        "n/a elsewhere."
    ),
    "ablation": (
        "PASCAL variants only; delta (of the means over seeds) and ‡ (p < 0.01, paired bootstrap over "
        "sentences and every seed of both) against the task's Transformer. The paper reports "
        "this ablation on the NC11 validation sets; a demo run has the rows its config trains."
    ),
}


def _manifest(text: str) -> list[dict[str, Any]]:
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"--manifest: not JSON ({error}); the study's rules write it") from None
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise InputError("--manifest: expected a JSON list of objects, one per (task, system)")
    return entries


def run_gold_parse(args: argparse.Namespace) -> int:
    count = write_gold_parse(args.conllu, args.tokens, args.output, args.kept)
    print(f"{count} gold trees on {args.tokens}")
    return 0


def run_table(args: argparse.Namespace) -> int:
    entries = _manifest(args.manifest)
    csv, markdown = main_table(entries) if args.table == "main" else ablation_table(entries)
    seeds = list(dict.fromkeys(seed for entry in entries for seed, _ in replica_scores(entry)))
    notes = (
        f"{NOTES[args.table]}\n\n{seeds_note(seeds)}\n\nSignificance test: {significance_method(entries)}."
    )
    write_table(
        csv,
        args.out,
        TITLES[args.table],
        notes,
        sources=files(entries, "scores", "significance"),
        deviations=applicable(DEVIATIONS, args.table, table_conditions(entries)),
        markdown=markdown,
    )
    return 0


PARSER_TITLE = (
    "Bugliarello & Okazaki (2020): the Stanza tagger and parser trained offline, on the treebank's test set"
)
PARSER_NOTE = (
    "Trained with `nmtvariants stanza-train` (--no_pretrain: no word vectors or character LM can be "
    "downloaded here). Scored on the gold words (the parser runs pretokenised, as on the corpora) with "
    "the CoNLL 2018 shared task's conventions: every word counts, punctuation included; LAS compares the "
    "universal relation (subtypes ignored). UPOS/UAS/LAS in %."
)


def run_parser_table(args: argparse.Namespace) -> int:
    frame = parser_table(args.scores)
    deviations = applicable(DEVIATIONS, "parser")
    write_table(frame, args.out, PARSER_TITLE, PARSER_NOTE, sources=args.scores, deviations=deviations)
    return 0


def run_length(args: argparse.Namespace) -> int:
    frame = length_rows(_manifest(args.manifest))
    with atomic_write(args.out) as out:
        frame.to_csv(out, index=False)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    gold = subparsers.add_parser(
        "bugliarello2020-gold-parse", help="gold CoNLL-U trees moved onto the preprocessed (tc) tokens"
    )
    gold.add_argument("--conllu", required=True, help="gold trees, one per raw line")
    gold.add_argument("--tokens", required=True, help="the truecased Moses tokens the BPE was applied to")
    gold.add_argument("--kept", help="clean/train.kept: the raw lines the training split kept")
    gold.add_argument("-o", "--output", required=True)
    gold.set_defaults(func=run_gold_parse)

    table = subparsers.add_parser(
        "bugliarello2020-table", help="PASCAL study: Table 1 (main) or 3 (ablation)"
    )
    table.add_argument("--table", choices=sorted(TITLES), required=True)
    table.add_argument("--manifest", required=True, help="JSON list, one object per (task, system)")
    table.add_argument("--out", required=True, help="markdown table; CSV and provenance beside it")
    table.set_defaults(func=run_table)

    length = subparsers.add_parser(
        "bugliarello2020-length", help="PASCAL study, Figure 2: BLEU by source length as a long CSV"
    )
    length.add_argument("--manifest", required=True, help="JSON list: variant and length JSON per system")
    length.add_argument("--out", required=True, help="CSV: bucket, variant, bleu, n_sentences")
    length.set_defaults(func=run_length)

    parser = subparsers.add_parser(
        "bugliarello2020-parser-table", help="PASCAL study: UPOS/UAS/LAS of the offline Stanza parser(s)"
    )
    parser.add_argument("--scores", nargs="+", required=True, help="stanza-score JSON, one per language")
    parser.add_argument("--out", required=True, help="markdown table; CSV and provenance beside it")
    parser.set_defaults(func=run_parser_table)
