"""Sub-command ``composition-table``: the composed model beside each mechanism alone and the baseline
(:mod:`nmtvariants.studies.composition.tables`); rules/studies/composition.smk writes its manifest."""

from __future__ import annotations

import argparse
from pathlib import Path

from nmtvariants.reporting.tables import write_table


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    table = subparsers.add_parser(
        "composition-table", help="a composed variant beside its parts and the baseline, over seeds"
    )
    table.add_argument(
        "--manifest", type=Path, required=True, help="manifest file (nmtvariants.reporting.manifest)"
    )
    table.add_argument("--reference", required=True, help="the baseline variant (Δ and p against it)")
    table.add_argument("--title", required=True)
    table.add_argument("--out", type=Path, required=True, help="markdown table (CSV beside it)")
    table.set_defaults(func=run_composition_table)


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
