"""Yang et al. (2020)'s commands for ``rules/studies/yang2020.smk``: the tables, the figures' CSVs,
the decoding-speed measurement, and ``layer-aer`` on text tokenised with Moses' hyphen splitting.

The rule passes what each table or figure is built from as a manifest (``--manifest FILE``,
:mod:`nmtvariants.reporting.manifest`, from :class:`nmtvariants.studies.yang2020.plan.Yang2020Plan`):
every entry names its system (experiment, pair, variant; the rest of
:class:`nmtvariants.studies.yang2020.tables.System` in its ``info``) and its files, so that the paths are
decided in one place and the tables see exactly the files Snakemake tracked. Roles: ``scores`` (one
entry per replica and test set; Table 4 also ``checkpoint``, ``train_log`` and ``decode_speed``),
``layer_aer`` (the AER table and Figures 4-7; ``info`` has the ``gold`` set, ``corpus`` and ``seeds``)
and ``probes`` (Figures 3, 8, 10).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from nmtvariants.errors import ConfigError, InputError
from nmtvariants.inference.defaults import MAX_LEN_A, MAX_LEN_B
from nmtvariants.reporting.manifest import add_manifest_command

TABLES = {
    "layouts": (
        "Yang et al. (2020) Table 1: decoder layouts",
        "BLEU of each decoder layout at the preset's depth; ΔBLEU: its mean BLEU less the mean BLEU of "
        "the standard decoder (TEM -> "
        "SEM -> IFM) of the same experiment, pair and test set. sem_ifm drops TEM, sem_tem_ifm swaps "
        "the two attentions, simplified keeps one Add&Norm as IFM (no FFN).",
    ),
    "depth": (
        "Yang et al. (2020) Table 2: decoder depth",
        "BLEU of the standard decoder at every decoder depth the config trains (one row per depth; "
        "config.yaml's comments give the switch that trains more depths than the demo's).",
    ),
    "simplified": (
        "Yang et al. (2020) Table 4: simplified against standard decoder",
        "Parameters: counted on the first seed's averaged checkpoint (as `nmtvariants count-params`; "
        "every seed has the same architecture). Train tok/s: target tokens per second of each seed's "
        "train_log.csv (all logged training tokens over the summed logging windows; validation "
        "excluded), each run timed while it trained, so other jobs running beside it add noise. Decode "
        "sent/s: beam search over the first test sentences, the first seed's two models timed in one "
        "job in alternating rounds (median round; rule yang2020_decode_speed). Ratios are against the "
        "standard decoder, of the means over seeds.",
    ),
    "aer": (
        "Yang et al. (2020) Figs. 4-7: AER of each decoder layer's SEM alignment",
        "AER (Och & Ney 2003: sure and possible gold links; lower is better), precision, recall and "
        "cumulative coverage of every decoder layer: encoder-attention heads averaged, under teacher "
        "forcing, the arg-max source word for each target word (sub-words pooled, words glued across "
        "Moses' @-@ splits).",
    ),
}
FIGURE_ROLES = {"probes": "probes", "aer": "layer_aer"}  # yang2020-figure-data --kind -> its CSVs' role
# What a model was trained on, for the domain-gap note of a Hansards-scored row
CORPUS_DOMAINS = {"multi30k": "Multi30k's image captions", "toyworld": "toyworld's synthetic scenes"}


def hansards_note(corpora: list[str]) -> str:
    """The caveat beside AERs on the Hansards gold set of a model trained on another domain."""
    trained = ", ".join(CORPUS_DOMAINS.get(c, c) for c in dict.fromkeys(corpora))
    return (
        f" Hansards rows: the model was trained on {trained} and is scored on the 447 test sentences of "
        "the HLT-NAACL 2003 English-French gold (Canadian parliamentary debates, lower-cased), their "
        "own tokens run through the model's truecaser and BPE without re-tokenisation (word counts "
        "checked per line). The domain gap between these training data and parliament is large: "
        "these AERs measure the attention under a strong domain shift, not the paper's in-domain setting."
    )


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    tb = add_manifest_command(
        subparsers,
        "yang2020-table",
        "Yang et al. 2020: Table 1, 2 or 4 (md, csv, provenance)",
        "`scores` per replica and test set (simplified: also checkpoint, train_log, decode_speed); "
        "kind aer: `layer_aer` per replica (system and seed), info gold and corpus",
        run_table,
    )
    tb.add_argument("--kind", choices=tuple(TABLES), required=True)

    fg = add_manifest_command(
        subparsers,
        "yang2020-figure-data",
        "Yang et al. 2020: the long CSVs of Figures 3, 8, 10 or 4-7",
        "`probes` or `layer_aer` per system",
        run_figure_data,
        out=None,
    )
    fg.add_argument("--kind", choices=tuple(FIGURE_ROLES), required=True)
    fg.add_argument("--outdir", required=True, help="results/figures/yang2020")

    sp = subparsers.add_parser(
        "yang2020-decode-speed", help="beam-search sentences/s of several models, timed in alternating rounds"
    )
    sp.add_argument("--checkpoint", action="append", required=True, metavar="LABEL=FILE")
    sp.add_argument("--vocab", required=True)
    sp.add_argument("--input", required=True, help="BPE'd source text")
    sp.add_argument("--max-sentences", type=int, default=200, help="time the first N lines")
    sp.add_argument("--beam", type=int, default=5)
    sp.add_argument("--alpha", type=float, default=0.6)
    sp.add_argument("--max-len-a", type=float, default=MAX_LEN_A)
    sp.add_argument("--max-len-b", type=int, default=MAX_LEN_B)
    sp.add_argument("--batch-size", type=int, default=64)
    sp.add_argument("--rounds", type=int, default=3)
    sp.add_argument("--device", default="cpu")
    sp.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    sp.add_argument("--output", required=True, help="JSON")
    sp.set_defaults(func=run_decode_speed)

    al = subparsers.add_parser(
        "yang2020-layer-aer",
        help="layer-aer with words glued across Moses' @-@ hyphen splits (gold over unsplit words)",
    )
    al.add_argument("--checkpoint", required=True)
    al.add_argument("--vocab", required=True)
    al.add_argument("--src", required=True, help="BPE'd source, one gold sentence per line")
    al.add_argument("--tgt", required=True, help="BPE'd target (teacher forcing)")
    al.add_argument("--gold", required=True, help="gold links (default format: Pharaoh, 0-based)")
    al.add_argument(
        "--format",
        default="pharaoh",
        choices=("pharaoh", "talp", "berkeley"),
        help="gold format; it implies the index base (talp 1-based, the others 0-based)",
    )
    al.add_argument("--reverse-gold", action="store_true", help="the gold lists the target position first")
    al.add_argument("--src-words", help="source in the gold's own tokens: check each line's word count")
    al.add_argument("--tgt-words", help="target in the gold's own tokens (with --src-words)")
    al.add_argument("--batch-size", type=int, default=32, help="sentences per forward pass")
    al.add_argument("--device", default="cpu")
    al.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    al.add_argument("--output", required=True, help="CSV, one row per decoder layer (layer-aer's columns)")
    al.set_defaults(func=run_layer_aer)

    ch = subparsers.add_parser(
        "yang2020-gold-chain",
        help="a gold set's tokenised text through a pair's trained chain (gold tokens kept, counts checked)",
    )
    ch.add_argument("--corpus-dir", required=True, help="the workflow's data/<corpus>/<src>-<tgt>")
    ch.add_argument("-l", "--lang", required=True)
    ch.add_argument("--preprocess", required=True, help="JSON: the corpus's `preprocess` settings")
    ch.add_argument("--input", required=True, help="the gold's text, one tokenised sentence per line")
    ch.add_argument("--output", required=True, help="the BPE'd text, line for line")
    ch.set_defaults(func=run_gold_chain)


def _entries(path: str, role: str) -> list[dict[str, Any]]:
    """The manifest's entries as the table code reads them: the ``system``, ``seed`` and ``testset``,
    the files by role and the rest of the ``info`` (the AER table's gold set, corpus and seeds)."""
    from nmtvariants.reporting.manifest import read_manifest
    from nmtvariants.reporting.results import UNRECORDED_SEED
    from nmtvariants.studies.yang2020.tables import SYSTEM_INFO, manifest_system

    entries = []
    for entry in read_manifest(path, roles=[role]):
        extra = {key: value for key, value in entry.info.items() if key not in SYSTEM_INFO}
        seed = UNRECORDED_SEED if entry.seed is None else entry.seed
        system = manifest_system(entry)
        names = {"system": system, "seed": seed, "testset": entry.testset, "toy": entry.toy}
        entries.append({**extra, **entry.files, **names})
    return entries


def _toy(entries: list[dict[str, Any]]) -> bool:
    return any(entry["toy"] for entry in entries)


def run_table(args: argparse.Namespace) -> int:
    from nmtvariants.models import load_model
    from nmtvariants.models.build import count_parameters
    from nmtvariants.reporting.deviations import applicable
    from nmtvariants.reporting.replicas import seeds_note
    from nmtvariants.reporting.tables import write_table
    from nmtvariants.studies.yang2020.tables import (
        DEVIATIONS,
        bleu_table,
        read_decode_speed,
        simplified_table,
        table_conditions,
        training_speed,
    )

    entries = _entries(args.manifest, "layer_aer" if args.kind == "aer" else "scores")
    title, notes = TABLES[args.kind]
    deviations = applicable(DEVIATIONS, args.kind, table_conditions([e["system"] for e in entries]))
    if args.kind == "aer":
        from nmtvariants.studies.yang2020.tables import layer_aer_table

        hansards = [e["corpus"] for e in entries if e["gold"] == "hansards"]
        notes += hansards_note(hansards) if hansards else ""
        notes += " " + seeds_note(list(dict.fromkeys(e["seed"] for e in entries)), _toy(entries))
        frame, markdown = layer_aer_table(
            [(e["system"], e["corpus"], e["gold"], e["layer_aer"], e["seed"]) for e in entries]
        )
        sources = [e["layer_aer"] for e in entries]
        write_table(frame, args.out, title, notes, sources, deviations, markdown=markdown)
        return 0
    # one entry per replica (training seed) and test set; the rows are the systems, over their seeds
    rows = [(e["system"], e["testset"], e["scores"], e["seed"]) for e in entries]
    sources = [e["scores"] for e in entries]
    if args.kind == "simplified":
        parameters, train_speed, decode_speed = {}, {}, {}
        for entry, (system, _, _, seed) in zip(entries, rows, strict=True):
            if system not in parameters:  # the first seed's checkpoint: every seed has the same count
                parameters[system] = count_parameters(load_model(entry["checkpoint"], map_location="cpu"))
                decode_speed[system] = read_decode_speed(entry["decode_speed"], system.variant)
                sources.append(entry["decode_speed"])
            if (system, seed) not in train_speed:
                train_speed[(system, seed)] = training_speed(entry["train_log"])
                sources.append(entry["train_log"])
        table = simplified_table(rows, parameters, train_speed, decode_speed)
    else:
        table = bleu_table(rows)
    notes += " " + seeds_note(table.seeds, _toy(entries))
    write_table(
        table.csv, args.out, title, notes, list(dict.fromkeys(sources)), deviations, markdown=table.markdown
    )
    return 0


def run_figure_data(args: argparse.Namespace) -> int:
    from nmtvariants.studies.yang2020.tables import (
        FIGURE_MODULES,
        aer_figure_rows,
        probe_figure_rows,
        read_probe_csv,
        write_rows,
    )

    entries = _entries(args.manifest, FIGURE_ROLES[args.kind])
    outdir = Path(args.outdir)
    if args.kind == "probes":
        probes = [(e["system"], read_probe_csv(e["probes"])) for e in entries]
        for figure in FIGURE_MODULES:
            for side in ("source", "target"):
                write_rows(outdir / f"{figure}_{side}.csv", probe_figure_rows(figure, side, probes))
    else:
        tables = [(e["system"], e["layer_aer"]) for e in entries]
        for metric in ("aer", "coverage"):
            write_rows(outdir / f"figs4_7_{metric}.csv", aer_figure_rows(metric, tables))
    return 0


def run_decode_speed(args: argparse.Namespace) -> int:
    import torch

    from nmtvariants.data.vocab import Vocabulary
    from nmtvariants.evaluation.results import write_json
    from nmtvariants.fileio import read_lines
    from nmtvariants.inference.translate import check_vocabulary
    from nmtvariants.models import load_model
    from nmtvariants.studies.yang2020.tables import SpeedSettings, decode_speed

    if args.max_sentences < 1:
        raise ConfigError(f"--max-sentences must be positive, got {args.max_sentences}")
    if args.threads:
        torch.set_num_threads(args.threads)
    vocab = Vocabulary.load(args.vocab)
    models = {}
    for spec in args.checkpoint:
        label, sep, path = spec.partition("=")
        if not sep or not label or not path:
            raise ConfigError(f"--checkpoint {spec!r}: expected LABEL=FILE")
        models[label] = load_model(path, map_location=args.device).eval()
        check_vocabulary(models[label], vocab, args.vocab)
    lines = list(read_lines(args.input))[: args.max_sentences]
    if not lines:
        raise InputError(f"{args.input}: no sentences to decode")
    settings = SpeedSettings(
        args.beam, args.alpha, args.max_len_a, args.max_len_b, args.batch_size, args.rounds, args.device
    )
    with torch.inference_mode():
        record = decode_speed(models, vocab, lines, settings)
    write_json(args.output, {**record, "threads": torch.get_num_threads(), "input": args.input})
    print(" ".join(f"{name}: {rate:.2f} sent/s" for name, rate in record["sentences_per_second"].items()))
    return 0


def run_layer_aer(args: argparse.Namespace) -> int:
    import torch

    from nmtvariants.data.vocab import Vocabulary
    from nmtvariants.evaluation.layer_alignment import layer_aer, write_layer_csv
    from nmtvariants.inference.translate import check_vocabulary
    from nmtvariants.models import load_model
    from nmtvariants.studies.yang2020.tables import gold_aligned_set

    if args.batch_size < 1:
        raise ConfigError(f"--batch-size must be positive, got {args.batch_size}")
    if args.threads:
        torch.set_num_threads(args.threads)
    if (args.src_words is None) != (args.tgt_words is None):
        raise ConfigError("yang2020-layer-aer: give both --src-words and --tgt-words or neither")
    words = None if args.src_words is None else (args.src_words, args.tgt_words)
    test_set = gold_aligned_set(args.src, args.tgt, args.gold, args.format, args.reverse_gold, words)
    model = load_model(args.checkpoint, map_location=args.device)
    vocab = Vocabulary.load(args.vocab)
    check_vocabulary(model, vocab, args.vocab)
    rows = layer_aer(model, vocab, test_set, args.batch_size, args.device)
    write_layer_csv(args.output, rows)
    print(" ".join(f"L{row['layer']}: aer={row['aer']:.3f} cc={row['coverage']:.3f}" for row in rows))
    return 0


def run_gold_chain(args: argparse.Namespace) -> int:
    from nmtvariants.studies.yang2020.tables import chain_gold_text

    try:
        preprocess = json.loads(args.preprocess)
    except json.JSONDecodeError as error:
        raise ConfigError(f"--preprocess: not valid JSON ({error.msg} at character {error.pos})") from None
    if not isinstance(preprocess, dict):
        raise ConfigError("--preprocess: expected a JSON object (a corpus's `preprocess` settings)")
    count = chain_gold_text(args.corpus_dir, args.lang, preprocess, args.input, args.output)
    print(f"{count} lines of {args.input} through the {args.lang} chain of {args.corpus_dir}")
    return 0
