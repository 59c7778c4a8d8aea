"""Commands of the Libovický et al. (2018) study (rules/studies/libovicky2018.smk).

``libovicky2018-attention``   each memory's share of every decoder layer's cross-attention -> CSV
``libovicky2018-join``        long CSVs joined under ``series`` and ``label`` columns (the figure's input)
``libovicky2018-table``       Table 1 or 2 from score and adversarial-summary JSONs
``libovicky2018-images``      user-supplied images in place, or where to get them

The table and the join read their inputs from a manifest (``--manifest FILE``,
:mod:`nmtvariants.reporting.manifest`, written by the rule from
:class:`nmtvariants.studies.libovicky2018.plan.Libovicky2018Plan`): the table one entry per replica (training
seed) of each row with its ``clean`` scores, a multi-input system's ``adversarial`` summary and the
row's ``label``; the join one entry per ``attention`` CSV, labelled with its series.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from nmtvariants.reporting.manifest import add_manifest_command

log = logging.getLogger(__name__)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "libovicky2018-attention", help="each memory's share of the decoder layers' cross-attention -> CSV"
    )
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--vocab", type=Path, required=True)
    p.add_argument("--source", type=Path, required=True, help="BPE'd test source")
    p.add_argument("--target", type=Path, required=True, help="BPE'd test target (teacher forcing)")
    p.add_argument("--extra-source", type=Path, action="append", default=[], help="further BPE source")
    p.add_argument("--features", type=Path, default=None, help="feature grid F.npy of the test set")
    p.add_argument("--memories", required=True, help="comma list naming the memories in order (en,fr,image)")
    p.add_argument("--max-sentences", type=int, default=200, help="first N test pairs (200)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--csv", type=Path, required=True)
    p.set_defaults(func=run_attention)

    add_manifest_command(
        subparsers,
        "libovicky2018-join",
        "long CSVs joined under a series column",
        "`attention` CSVs, each labelled",
        run_join,
        out="the joined CSV",
    )

    p = add_manifest_command(
        subparsers,
        "libovicky2018-table",
        "Table 1 or 2: clean and adversarial scores",
        "per replica (training seed) of each row, `clean` scores and for a multi-input system the "
        "`adversarial` summary; the replicas of one system share its row",
        run_table,
    )
    p.add_argument(
        "--table",
        required=True,
        choices=("table1_mmt", "table2_multisource"),
        help="which table: the deviations from the paper written under it depend on it",
    )
    p.add_argument(
        "--condition",
        action="append",
        default=[],
        help="a condition of the study's conditional deviations that the data meet (repeat; e.g. "
        "toyworld, untrained_image_features)",
    )
    p.add_argument("--title", required=True)
    p.add_argument("--notes", default="")
    add_images_parser(subparsers)


def run_attention(args: argparse.Namespace) -> int:
    import torch

    from nmtvariants.analysis.extract import cap_pairs
    from nmtvariants.data.dataset import binarize
    from nmtvariants.data.extra_inputs import ExtraInputFiles, model_feature_channels
    from nmtvariants.data.vocab import Vocabulary
    from nmtvariants.models import load_model
    from nmtvariants.studies.libovicky2018.tables import source_attention, write_csv

    torch.set_num_threads(args.threads)
    model = load_model(args.checkpoint)
    vocab = Vocabulary.load(args.vocab)
    extras = ExtraInputFiles(
        sources=args.extra_source, features=args.features, feature_channels=model_feature_channels(model)
    )
    data = binarize(args.source, args.target, vocab, extras=extras if extras else None)
    kept = cap_pairs(data, max_sentences=args.max_sentences)
    # cap_pairs keeps the first pairs' tokens only; the extra inputs follow the same rows
    kept.sources = [_first_rows(source, len(kept)) for source in data.sources]
    if data.feature_rows is not None:
        kept.feature_rows, kept.features = data.feature_rows[: len(kept)], data.features
    shares = source_attention(model, kept, args.memories.split(","))
    write_csv(shares, args.csv)
    return 0


def _first_rows(source: tuple, count: int) -> tuple:
    tokens, offsets = source
    return tokens[: offsets[count]], offsets[: count + 1]


def run_join(args: argparse.Namespace) -> int:
    import pandas as pd

    from nmtvariants.reporting.manifest import read_manifest
    from nmtvariants.studies.libovicky2018.tables import write_csv

    entries = read_manifest(args.manifest, roles=["attention"], names=["label"])
    joined = pd.concat(
        [
            pd.read_csv(entry.file("attention")).assign(series=entry.label, seed=entry.seed)
            for entry in entries
        ],
        ignore_index=True,
    )
    if "memory" in joined.columns:  # the figure draws one line per series and memory
        joined["label"] = joined["series"] + ": " + joined["memory"].astype(str)
    write_csv(joined, args.out)
    return 0


def run_table(args: argparse.Namespace) -> int:
    from nmtvariants.errors import ConfigError
    from nmtvariants.evaluation.results import read_scores_json
    from nmtvariants.reporting.deviations import applicable
    from nmtvariants.reporting.manifest import groups, read_manifest, toy_runs
    from nmtvariants.reporting.replicas import seeds_note
    from nmtvariants.reporting.results import UNRECORDED_SEED
    from nmtvariants.reporting.tables import write_table
    from nmtvariants.studies.libovicky2018.tables import DEVIATIONS, System, adversarial_table

    known = {deviation.when for deviation in DEVIATIONS if deviation.when}
    unknown = sorted(set(args.condition) - known)
    if unknown:
        raise ConfigError(f"--condition {', '.join(unknown)}: not one of {', '.join(sorted(known))}")
    entries = read_manifest(
        args.manifest, roles=["clean"], names=["experiment", "pair", "variant", "testset"]
    )
    rows = {system: row for row, system in enumerate(groups(entries))}
    systems = [
        System(
            str(entry.pair),
            str(entry.testset),
            entry.label or str(entry.variant),
            read_scores_json(entry.file("clean")),
            _read_summary(entry.files.get("adversarial")),
            UNRECORDED_SEED if entry.seed is None else entry.seed,
            rows[entry.system],
        )
        for entry in entries
    ]
    clean = [entry.file("clean") for entry in entries]
    frame, markdown, seen = adversarial_table(systems, where=clean)
    write_table(
        frame,
        args.out,
        args.title,
        f"{args.notes} {seeds_note(seen, toy_runs(entries))}".strip(),
        sources=[*clean, *(entry.files["adversarial"] for entry in entries if "adversarial" in entry.files)],
        deviations=applicable(DEVIATIONS, args.table, args.condition),
        markdown=markdown,
    )
    return 0


def _read_summary(path: str | None) -> dict | None:
    """A multi-input system's adversarial summary (``adversarial-summary --json``), or None."""
    return None if path is None else json.loads(Path(path).read_text(encoding="utf-8"))


def add_images_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "libovicky2018-images", help="check that a split list's user-supplied images are in place"
    )
    p.add_argument("--images", type=Path, required=True, help="folder of the user-supplied images")
    p.add_argument("--list", type=Path, required=True, help="split list: one image file name per line")
    p.set_defaults(func=run_images)


def run_images(args: argparse.Namespace) -> int:
    from nmtvariants.corpora.multi30k import IMAGES_GATE
    from nmtvariants.studies.libovicky2018.tables import check_user_images

    count = check_user_images(args.images, args.list, IMAGES_GATE)
    log.info("libovicky2018-images: %d images of %s in %s", count, args.list, args.images)
    return 0
