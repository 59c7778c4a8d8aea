"""Commands of the lexical-shortcuts study (Emelin et al. 2019) for ``rules/studies/emelin2019.smk``.

Each table command reads the files its manifest names (``--manifest FILE``:
:mod:`nmtvariants.reporting.manifest`, written by the rule from
:class:`nmtvariants.studies.emelin2019.plan.Emelin2019Plan`) and writes the table with
:func:`nmtvariants.reporting.tables.write_table` (markdown, CSV and provenance record)::

    nmtvariants emelin2019-bleu --manifest M.json [--mean-testsets nt14 nt15] --title T --out t1.md
    nmtvariants emelin2019-variants --manifest M.json --title T --out table4.md
    nmtvariants emelin2019-params --manifest M.json --title T --out table5.md
    nmtvariants emelin2019-bootstrap --manifest M.json --title T --out bootstrap.md
    nmtvariants emelin2019-probes --manifest M.json --group-kind frequency_bin --title T --out probes.md
    nmtvariants emelin2019-gates --manifest M.json --title T --out gates.md
    nmtvariants emelin2019-contrawsd --manifest M.json --title T --out contrawsd.md
    nmtvariants emelin2019-curves --manifest M.json --value accuracy --side encoder --out fig.csv
    nmtvariants emelin2019-pos --conllu test.en.conllu --bpe bpe/test.en -o pos/test.en
    nmtvariants emelin2019-pos --tags raw/test.de.pos --bpe bpe/test.de -o pos/test.de

The file roles each reads: ``scores`` (score JSONs of every replica and test set; Table 4's entries
carry the variant's ``switches`` in ``info``), ``count`` and ``train_log`` (Table 5), ``significance``
(bootstrap), ``probes``, ``gates``, ``contrawsd`` and, for the curves, ``probes`` or ``similarity``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from nmtvariants.errors import InputError
from nmtvariants.evaluation.results import read_scores_json
from nmtvariants.fileio import atomic_write, read_lines, write_lines
from nmtvariants.reporting.deviations import Deviation, applicable
from nmtvariants.reporting.manifest import Entry, add_manifest_command, read_manifest, toy_runs
from nmtvariants.reporting.replicas import seeds_note
from nmtvariants.reporting.results import UNRECORDED_SEED
from nmtvariants.reporting.tables import write_table
from nmtvariants.studies.emelin2019 import tables
from nmtvariants.syntax.conllu import read_conllu


def _read_csvs(entries: list[Entry], role: str) -> pd.DataFrame:
    """The long CSVs of ``role`` the manifest names, one after the other."""
    frames = [pd.read_csv(entry.file(role), keep_default_na=False) for entry in entries]
    return pd.concat(frames, ignore_index=True)


def _seed(entry: Entry) -> object:
    """An entry's training seed, or the marker of a manifest that recorded none."""
    return UNRECORDED_SEED if entry.seed is None else entry.seed


def _read_json(path: Path) -> dict:
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise InputError(f"{path}:{error.lineno}: invalid JSON ({error.msg})") from None


def _deviations(table: str, conditions: set[str] | None = None) -> list[Deviation]:
    """The study's deviations from the paper (emelin2019.DEVIATIONS) that apply to ``table``."""
    return applicable(tables.DEVIATIONS, table, conditions or set())


def _bleu_replicas(entries: list[Entry], mean_testsets: list[str] | None = None) -> pd.DataFrame:
    """Every replica's rows (tables.bleu_replicas), in the manifest's order; each record's training seed
    from its entry (without one, from its ``<variant>-seed<N>`` folder)."""
    records = [read_scores_json(entry.file("scores")) for entry in entries]
    return tables.bleu_replicas(records, None, mean_testsets, [entry.seed for entry in entries])


def _files(entries: list[Entry], role: str) -> list[str]:
    return [entry.file(role) for entry in entries]


def run_bleu(args: argparse.Namespace) -> int:
    mean = (
        f"the unweighted mean over {', '.join(args.mean_testsets)} (Table 1's test sets, as the paper's "
        "'test mean'); other test sets are not in it."
        if args.mean_testsets
        else "the unweighted mean over the test sets."
    )
    entries = read_manifest(args.manifest, roles=["scores"])
    csv, markdown, seeds = tables.replicated_bleu_table(_bleu_replicas(entries, args.mean_testsets))
    notes = (
        "BLEU: sacreBLEU on the detokenised output; tok. BLEU: BLEU of the Moses-tokenised output "
        f"against the tokenised reference (the paper's second figure). `mean`: {mean} Over seeds, the "
        f"`mean` row averages each seed's test mean.\n\n{seeds_note(seeds, toy_runs(entries))}"
    )
    switches = {str(entry.variant): entry.info.get("switches") for entry in entries}
    deviations = _deviations("bleu", tables.variant_conditions(switches))
    write_table(csv, args.out, args.title, notes, _files(entries, "scores"), deviations, markdown=markdown)
    return 0


def run_variants(args: argparse.Namespace) -> int:
    entries = read_manifest(args.manifest, roles=["scores"], names=["variant"])
    switches = {str(entry.variant): entry.info.get("switches") for entry in entries}
    replicas = _bleu_replicas(entries)
    csv, markdown = tables.variants_table(replicas, switches, args.baseline)
    notes = (
        f"Mean over the test sets; Δ BLEU: difference of the mean sacreBLEU to `{args.baseline}`.\n\n"
        + seeds_note(list(dict.fromkeys(replicas["seed"])), toy_runs(entries))
    )
    deviations = _deviations("variants", tables.variant_conditions(switches))
    sources = _files(entries, "scores")
    write_table(csv, args.out, args.title, notes, sources, deviations, markdown=markdown)
    return 0


def run_params(args: argparse.Namespace) -> int:
    entries = read_manifest(args.manifest, roles=["count", "train_log"], names=["experiment", "variant"])
    runs = {f"{entry.experiment}/{entry.variant}": entry for entry in entries}
    params = {label: tables.read_count(entry.file("count")) for label, entry in runs.items()}
    speeds = {label: tables.training_speed(entry.file("train_log")) for label, entry in runs.items()}
    frame = tables.params_speed_table(params, speeds, args.baseline)
    notes = (
        "Parameters: `nmtvariants count-params` of each run's model and vocabulary. Training speed: target "
        f"tokens per second over each run's train_log.csv, relative to `{args.baseline}`; runs that "
        "shared the machine with other jobs are slowed by them, so compare runs trained side by side."
    )
    notes = _with_note(notes, args.note)
    sources = [*_files(entries, "count"), *_files(entries, "train_log")]
    write_table(frame, args.out, args.title, notes, sources, _deviations("params"))
    return 0


def run_bootstrap(args: argparse.Namespace) -> int:
    entries = read_manifest(args.manifest, roles=["significance"], names=["variant", "testset"])
    results = {
        (entry.variant, entry.testset): _read_json(Path(entry.file("significance"))) for entry in entries
    }
    csv, markdown = tables.bootstrap_table(results, args.baseline)
    first = next(iter(results.values()))
    method = first.get("method") or (
        f"sacreBLEU's two-sided paired bootstrap over sentences, {first['n_samples']} samples, "
        f"seed {first['seed']}; one output per system"
    )
    notes = (
        f"Each variant against `{args.baseline}` on the same test set: n is the number of replicas "
        "(training seeds) behind a row, each score their mean (± their sample sd), Δ the difference of the "
        f"variant's mean from the baseline's and p the test's p-value. Test: {method}. The CSV beside this "
        "table has the p-values to full precision."
    )
    if max(csv["n"]) == 1:
        notes += (
            " One training seed per variant: the p-values test the outputs of these runs, not the methods; "
            "run-to-run variation of a few tenths of BLEU is not in them (train with `seeds: [...]`)."
        )
    sources = _files(entries, "significance")
    p_columns = {column: ".3f" for column in markdown.columns if column.startswith("p (")}
    write_table(
        csv,
        args.out,
        args.title,
        notes,
        sources,
        _deviations("bootstrap"),
        markdown=markdown,
        floatfmt=p_columns,
    )
    return 0


def run_probes(args: argparse.Namespace) -> int:
    entries = read_manifest(args.manifest, roles=["probes"])
    probes = [(_seed(entry), pd.read_csv(entry.file("probes"), keep_default_na=False)) for entry in entries]
    frame, markdown, seeds = tables.probe_breakdown_replicas(probes, args.group_kind)
    notes = f"Held-out lexical-probe accuracy per layer (0 = embeddings) by {args.group_kind}."
    if args.group_kind == "frequency_bin":
        notes += " Ten equal-sized bins of sub-word types, 1 the rarest; 0: types unseen in training."
    else:  # labels of one side only (source POS vs target POS) stay empty on the other side
        frame = frame.astype(object).where(frame.notna(), None)
    notes = _with_note(f"{notes} {seeds_note(seeds, toy_runs(entries))}", args.note)
    deviations = _deviations("probes", {args.group_kind})
    write_table(frame, args.out, args.title, notes, _files(entries, "probes"), deviations, markdown=markdown)
    return 0


def run_gates(args: argparse.Namespace) -> int:
    entries = read_manifest(args.manifest, roles=["gates"])
    frame, markdown, seeds = tables.gate_table(
        [(_seed(entry), _read_csvs([entry], "gates")) for entry in entries]
    )
    notes = _with_note(
        "Shortcut gate activations r (eqs 9-10) over the test set: the weight of the embedding part. "
        + seeds_note(seeds, toy_runs(entries)),
        args.note,
    )
    sources = _files(entries, "gates")
    write_table(frame, args.out, args.title, notes, sources, _deviations("gates"), markdown=markdown)
    return 0


def run_contrawsd(args: argparse.Namespace) -> int:
    entries = read_manifest(args.manifest, roles=["contrawsd"], names=["variant"])
    results = [
        (entry.label or str(entry.variant), _seed(entry), _read_json(Path(entry.file("contrawsd"))))
        for entry in entries
    ]
    frame, markdown, seeds = tables.contrawsd_table(results)
    notes = (
        "An item is correct only if the reference's mean token NLL is lower than every contrastive "
        "translation's; every candidate went through the model's own preprocessing chain. "
        + seeds_note(seeds, toy_runs(entries))
    )
    notes = _with_note(notes, args.note)
    sources = _files(entries, "contrawsd")
    write_table(frame, args.out, args.title, notes, sources, _deviations("contrawsd"), markdown=markdown)
    return 0


CURVE_ROLES = {"accuracy": "probes", "cosine": "similarity"}  # a figure's value -> the CSVs it is in


def run_curves(args: argparse.Namespace) -> int:
    role = CURVE_ROLES[args.value]
    entries = read_manifest(args.manifest, roles=[role])
    frame = tables.layer_curves(_read_csvs(entries, role), args.value, args.side)
    with atomic_write(args.out) as out:
        frame.to_csv(out, index=False)
    return 0


def run_pos(args: argparse.Namespace) -> int:
    if args.conllu:
        lines = tables.pos_lines(read_conllu(args.conllu), read_lines(args.bpe), args.conllu, args.bpe)
    else:
        lines = tables.target_pos_lines(read_lines(args.tags), read_lines(args.bpe), args.tags, args.bpe)
    write_lines(args.output, list(lines))
    return 0


def _with_note(notes: str, note: str | None) -> str:
    """The table's notes and the sentence(s) its rule adds (e.g. that the analyses read one seed)."""
    return f"{notes} {note}" if note else notes


def _note_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--note", help="a sentence appended to the table's notes")


def _table_command(
    subparsers: argparse._SubParsersAction,
    name: str,
    help: str,
    manifest: str,
    func,
    note: bool = False,
    baseline: bool = False,
) -> argparse.ArgumentParser:
    """One of the study's tables: the manifest convention, a title, and a note or a baseline."""
    parser = add_manifest_command(subparsers, name, help, manifest, func)
    parser.add_argument("--title", required=True)
    if note:
        _note_arg(parser)
    if baseline:
        parser.add_argument("--baseline", default="baseline")
    return parser


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    bleu = _table_command(
        subparsers,
        "emelin2019-bleu",
        "Emelin et al. Tables 1-3: BLEU per test set + mean",
        "`scores` of every replica and test set, rows in its order",
        run_bleu,
    )
    bleu.add_argument(
        "--mean-testsets",
        nargs="+",
        help="average over exactly these test sets (Table 3: Table 1's); default: every test set scored",
    )
    _table_command(
        subparsers,
        "emelin2019-variants",
        "Emelin et al. Table 4: shortcut variants",
        "`scores` of every replica and test set, the variant's switches in info",
        run_variants,
        baseline=True,
    )
    _table_command(
        subparsers,
        "emelin2019-params",
        "Emelin et al. Table 5: parameters and speed",
        "`count` (count-params output) and `train_log` of each run",
        run_params,
        note=True,
        baseline=True,
    )
    _table_command(
        subparsers,
        "emelin2019-bootstrap",
        "sacreBLEU/chrF per test set, paired bootstrap against the baseline",
        "`significance` of each variant and test set",
        run_bootstrap,
        baseline=True,
    )
    probes = _table_command(
        subparsers,
        "emelin2019-probes",
        "lexical-probe accuracy by frequency bin or POS",
        "`probes` (layer-probes CSV) of each variant",
        run_probes,
        note=True,
    )
    probes.add_argument("--group-kind", required=True, help="frequency_bin, or a grouping such as pos")
    _table_command(
        subparsers,
        "emelin2019-gates",
        "shortcut gate activations per layer",
        "`gates` (gate-stats CSV) of each variant",
        run_gates,
        note=True,
    )
    _table_command(
        subparsers,
        "emelin2019-contrawsd",
        "ContraWSD accuracy by sense, class",
        "`contrawsd` JSON of each variant (rows named by its label)",
        run_contrawsd,
        note=True,
    )

    curves = add_manifest_command(
        subparsers,
        "emelin2019-curves",
        "the long CSV of a per-layer figure",
        "`probes` (accuracy) or `similarity` (cosine) CSVs",
        run_curves,
        out="figure CSV",
    )
    curves.add_argument("--value", required=True, choices=tuple(CURVE_ROLES), help="the figure's y column")
    curves.add_argument("--side", required=True, choices=("encoder", "decoder"))

    pos = subparsers.add_parser("emelin2019-pos", help="UPOS per BPE token from a parse or word tags")
    annotation = pos.add_mutually_exclusive_group(required=True)
    annotation.add_argument("--conllu", help="parse of the tokenised text (the source side)")
    annotation.add_argument("--tags", help="one tag per Moses token and line (toyworld's target .pos)")
    pos.add_argument("--bpe", required=True, help="the BPE'd text (line-parallel)")
    pos.add_argument("-o", "--output", required=True)
    pos.set_defaults(func=run_pos)
