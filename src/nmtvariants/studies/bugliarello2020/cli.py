"""Commands of the PASCAL study (rules/studies/bugliarello2020.smk).

    nmtvariants bugliarello2020-gold-parse --conllu raw/train.en.conllu --tokens en-de/tc/train.en \\
        [--kept en-de/clean/train.kept] -o en-de/parse/train.en.conllu
    nmtvariants bugliarello2020-table --table main|ablation --manifest M.json --out T.md
    nmtvariants bugliarello2020-length --manifest M.json --out F.csv
    nmtvariants bugliarello2020-parser-table --manifest M.json --out parser.md

The manifests (:mod:`nmtvariants.reporting.manifest`, written by the rules from
:mod:`nmtvariants.studies.bugliarello2020.plan`): a table's holds, system by system (experiment, pair,
test set, variant), the ``scores`` of every replica (with its seed) and, but for the Transformer, one
entry without a seed with the ``significance`` test over all seeds; every entry's ``info`` has the
variant's ``switches`` and ``derived`` corpus. The length figure's holds each system's ``length`` JSON
(first seed), the parser table's the ``scores`` of each language's parser.
See :mod:`nmtvariants.studies.bugliarello2020.tables`.
"""

from __future__ import annotations

import argparse
from typing import Any

from nmtvariants.errors import InputError
from nmtvariants.fileio import atomic_write
from nmtvariants.reporting.deviations import applicable
from nmtvariants.reporting.manifest import Entry, add_manifest_command, groups, read_manifest, toy_runs
from nmtvariants.reporting.replicas import seeds_note
from nmtvariants.reporting.results import UNRECORDED_SEED
from nmtvariants.reporting.tables import write_table
from nmtvariants.studies.bugliarello2020.tables import (
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

TITLES = {
    "main": "Bugliarello & Okazaki (2020), Table 1: BLEU of the syntax-aware models",
    "ablation": "Bugliarello & Okazaki (2020), Table 3: PASCAL layer (a) and variance (b) ablations",
}
NOTES = {
    "main": (
        "‡: p < 0.01 against the task's Transformer (paired bootstrap over sentences and every seed of "
        "both), given only where both have two or more training seeds: with one seed a side the test "
        "samples the test sentences, not the training run. delta: difference of the mean BLEU from the "
        "Transformer's; p: the test's p-value (4 decimals in the CSV). RIBES is reported for Japanese "
        "targets only (the paper's EN-JA column); n/a elsewhere."
    ),
    "ablation": (
        "PASCAL variants only; delta (of the means over seeds) and ‡ (p < 0.01, paired bootstrap over "
        "sentences and every seed of both, two or more seeds a side) against the task's Transformer. "
        "The paper reports this ablation on the NC11 validation sets; a demo run has the rows its "
        "config trains."
    ),
}


def _systems(entries: list[Entry]) -> list[dict[str, Any]]:
    """One row's record per system (the table builders' shape): its replicas' ``scores`` and ``seeds``
    in the manifest's order, its ``significance`` and ``length`` files (or None), and its info."""
    systems = []
    for (experiment, pair, variant, testset), found in groups(entries).items():
        replicas = [entry for entry in found if "scores" in entry.files]
        if not replicas:
            raise InputError(f"{found[0].where}: no entry of this system has its 'scores'")
        system = {"experiment": experiment, "pair": pair, "variant": variant, "testset": testset}
        system.update({"switches": None, "derived": None, **found[0].info})
        system["scores"] = [entry.files["scores"] for entry in replicas]
        system["seeds"] = [UNRECORDED_SEED if entry.seed is None else entry.seed for entry in replicas]
        for role in ("significance", "length"):
            system[role] = next((entry.files[role] for entry in found if role in entry.files), None)
        systems.append(system)
    return systems


def _sources(entries: list[Entry]) -> list[str]:
    """The files a table was built from, in the manifest's order."""
    return [
        entry.files[role] for entry in entries for role in ("scores", "significance") if role in entry.files
    ]


def run_gold_parse(args: argparse.Namespace) -> int:
    count = write_gold_parse(args.conllu, args.tokens, args.output, args.kept)
    print(f"{count} gold trees on {args.tokens}")
    return 0


def run_table(args: argparse.Namespace) -> int:
    manifest = read_manifest(args.manifest, names=["experiment", "pair", "variant", "testset"])
    entries = _systems(manifest)
    csv, markdown = main_table(entries) if args.table == "main" else ablation_table(entries)
    seeds = list(dict.fromkeys(seed for entry in entries for seed, _ in replica_scores(entry)))
    notes = (
        f"{NOTES[args.table]}\n\n{seeds_note(seeds, toy_runs(manifest))}\n\n"
        f"Significance test: {significance_method(entries)}."
    )
    write_table(
        csv,
        args.out,
        TITLES[args.table],
        notes,
        sources=_sources(manifest),
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
    scores = [entry.file("scores") for entry in read_manifest(args.manifest, roles=["scores"])]
    frame = parser_table(scores)
    deviations = applicable(DEVIATIONS, "parser")
    write_table(frame, args.out, PARSER_TITLE, PARSER_NOTE, sources=scores, deviations=deviations)
    return 0


def run_length(args: argparse.Namespace) -> int:
    manifest = read_manifest(
        args.manifest, roles=["length"], names=["experiment", "pair", "variant", "testset"]
    )
    frame = length_rows([{"variant": entry.variant, "length": entry.files["length"]} for entry in manifest])
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

    table = add_manifest_command(
        subparsers,
        "bugliarello2020-table",
        "PASCAL study: Table 1 (main) or 3 (ablation)",
        "scores per replica, significance",
        run_table,
    )
    table.add_argument("--table", choices=sorted(TITLES), required=True)
    add_manifest_command(
        subparsers,
        "bugliarello2020-length",
        "PASCAL study, Figure 2: BLEU by source length as a long CSV",
        "each system's length JSON",
        run_length,
        out="CSV: bucket, variant, bleu, n_sentences",
    )
    add_manifest_command(
        subparsers,
        "bugliarello2020-parser-table",
        "PASCAL study: UPOS/UAS/LAS of the offline Stanza parser(s)",
        "stanza-score JSON per language",
        run_parser_table,
    )
