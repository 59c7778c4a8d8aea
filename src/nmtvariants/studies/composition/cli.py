"""Sub-command ``composition-table``: the composed model beside each mechanism alone and the baseline
(:mod:`nmtvariants.studies.composition.tables`); rules/studies/composition.smk writes its manifest."""

from __future__ import annotations

import argparse

from nmtvariants.reporting.manifest import add_manifest_command
from nmtvariants.reporting.tables import write_table


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    table = add_manifest_command(
        subparsers,
        "composition-table",
        "a composed variant beside its parts and the baseline, over seeds",
        "`scores`, `run`, `train_log` and `checkpoint` per variant, seed and test set;"
        " `significance` but for the reference",
        run_composition_table,
    )
    table.add_argument("--reference", required=True, help="the baseline variant (Δ and p against it)")
    table.add_argument("--title", required=True)


def run_composition_table(args: argparse.Namespace) -> None:
    from nmtvariants.reporting.manifest import read_manifest
    from nmtvariants.studies.composition.tables import ROLES, composition_table, parts

    entries = read_manifest(args.manifest, roles=ROLES, names=("variant", "seed", "testset"))
    composed = parts({entry.variant: entry.info.get("switches") for entry in entries})
    csv, markdown, notes = composition_table(entries, args.reference, composed)
    sources = [path for entry in entries for path in entry.files.values()]
    p_columns = {column: ".3f" for column in csv.columns if column.endswith(" p")}
    write_table(
        csv,
        args.out,
        title=args.title,
        notes="\n\n".join(notes),
        sources=list(dict.fromkeys(sources)),
        markdown=markdown,
        floatfmt=p_columns,
    )
