"""Commands of the Libovický et al. (2018) study (rules/studies/libovicky2018.smk).

``libovicky2018-attention``   each memory's share of every decoder layer's cross-attention -> CSV
``libovicky2018-join``        long CSVs joined under ``series`` and ``label`` columns (the figure's input)
``libovicky2018-table``       Table 1 or 2 from score and adversarial-summary JSONs
``libovicky2018-images``      user-supplied images in place, or where to get them
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

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

    p = subparsers.add_parser("libovicky2018-join", help="long CSVs joined under a series column")
    p.add_argument("--input", action="append", required=True, help="SERIES=FILE.csv (repeat)")
    p.add_argument("--csv", type=Path, required=True)
    p.set_defaults(func=run_join)

    p = subparsers.add_parser("libovicky2018-table", help="Table 1 or 2: clean and adversarial scores")
    p.add_argument("--system", action="append", required=True, help="PAIR:TESTSET=LABEL (repeat, row order)")
    p.add_argument("--clean", action="append", required=True, help="score JSON per system, in order")
    p.add_argument(
        "--row",
        action="append",
        type=int,
        default=[],
        help="the table row (1-based) of the N-th --system: the replicas (training seeds) of one system "
        "share a row and are averaged; give one per --system or none (each --system its own row)",
    )
    p.add_argument(
        "--seed",
        action="append",
        default=[],
        help="the training seed of the N-th --system (one per --system, or none: seed '?')",
    )
    p.add_argument(
        "--adversarial",
        action="append",
        default=[],
        help="N=SUMMARY.json: the adversarial summary of the N-th system (1-based)",
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
    p.add_argument("--output", type=Path, required=True, help="table .md (CSV and provenance beside it)")
    p.set_defaults(func=run_table)
    add_images_parser(subparsers)


def run_attention(args: argparse.Namespace) -> int:
    import torch

    from nmtvariants.analysis.extract import cap_pairs
    from nmtvariants.data.dataset import binarize
    from nmtvariants.data.extra_inputs import ExtraInputFiles, model_feature_channels
    from nmtvariants.data.vocab import Vocabulary
    from nmtvariants.models import load_model
    from nmtvariants.studies.libovicky2018 import source_attention, write_csv

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

    from nmtvariants.data.extra_inputs import parse_named
    from nmtvariants.studies.libovicky2018 import write_csv

    named = parse_named(args.input, "--input")
    joined = pd.concat(
        [pd.read_csv(path).assign(series=name) for name, path in named.items()], ignore_index=True
    )
    if "memory" in joined.columns:  # the figure draws one line per series and memory
        joined["label"] = joined["series"] + ": " + joined["memory"].astype(str)
    write_csv(joined, args.csv)
    return 0


def run_table(args: argparse.Namespace) -> int:
    from nmtvariants.errors import ConfigError
    from nmtvariants.evaluation.results import read_scores_json
    from nmtvariants.reporting.deviations import applicable
    from nmtvariants.reporting.replicas import seeds_note
    from nmtvariants.reporting.results import UNRECORDED_SEED
    from nmtvariants.reporting.tables import write_table
    from nmtvariants.studies.libovicky2018 import DEVIATIONS, System, adversarial_table

    for option, given in (("--clean", args.clean), ("--row", args.row), ("--seed", args.seed)):
        if given and len(given) != len(args.system):
            raise ConfigError(f"libovicky2018-table: {len(args.system)} --system but {len(given)} {option}")
    rows = args.row or [None] * len(args.system)
    seeds = [int(seed) if seed.isdigit() else seed for seed in args.seed]
    seeds = seeds or [UNRECORDED_SEED] * len(args.system)
    summaries: dict[int, Path] = {}
    for item in args.adversarial:
        index, sep, path = item.partition("=")
        if not sep or not index.isdigit() or not 1 <= int(index) <= len(args.system):
            raise ConfigError(
                f"--adversarial {item!r}: expected N=SUMMARY.json with 1 <= N <= {len(args.system)}"
            )
        summaries[int(index) - 1] = Path(path)
    systems = []
    for k, (system, clean) in enumerate(zip(args.system, args.clean, strict=True)):
        where, sep, label = system.partition("=")
        pair, colon, testset = where.partition(":")
        if not sep or not colon:
            raise ConfigError(f"--system {system!r}: expected PAIR:TESTSET=LABEL")
        adversarial = json.loads(summaries[k].read_text(encoding="utf-8")) if k in summaries else None
        systems.append(System(pair, testset, label, read_scores_json(clean), adversarial, seeds[k], rows[k]))
    frame, markdown, seen = adversarial_table(systems, where=args.clean)
    known = {deviation.when for deviation in DEVIATIONS if deviation.when}
    unknown = sorted(set(args.condition) - known)
    if unknown:
        raise ConfigError(f"--condition {', '.join(unknown)}: not one of {', '.join(sorted(known))}")
    write_table(
        frame,
        args.output,
        args.title,
        f"{args.notes} {seeds_note(seen)}".strip(),
        sources=[*args.clean, *summaries.values()],
        deviations=applicable(DEVIATIONS, args.table, args.condition),
        markdown=markdown,
    )
    return 0


def add_images_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "libovicky2018-images", help="check that a split list's user-supplied images are in place"
    )
    p.add_argument("--images", type=Path, required=True, help="folder of the user-supplied images")
    p.add_argument("--list", type=Path, required=True, help="split list: one image file name per line")
    p.set_defaults(func=run_images)


def run_images(args: argparse.Namespace) -> int:
    from nmtvariants.corpora.multi30k import IMAGES_GATE
    from nmtvariants.studies.libovicky2018 import check_user_images

    count = check_user_images(args.images, args.list, IMAGES_GATE)
    log.info("libovicky2018-images: %d images of %s in %s", count, args.list, args.images)
    return 0
