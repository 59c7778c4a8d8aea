"""`nmtvariants toyworld`: generate the embedded default corpus.

Text in four languages, gold trees and alignments, images and a ContraWSD set, from a fixed seed.
"""

from __future__ import annotations

import argparse
import logging
import time

log = logging.getLogger(__name__)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "toyworld", help="generate the toyworld corpus from a fixed seed", description=__doc__
    )
    parser.add_argument("--outdir", required=True, help="output folder, e.g. data/toyworld")
    parser.add_argument("--seed", type=int, default=1234, help="random seed (default 1234)")
    parser.add_argument("--train", type=int, default=20000, help="training sentences (default 20000)")
    parser.add_argument("--valid", type=int, default=500, help="validation sentences (default 500)")
    parser.add_argument("--test", type=int, default=500, help="test sentences (default 500)")
    parser.add_argument(
        "--image-size", type=int, default=64, help="image width and height in pixels (default 64)"
    )
    parser.add_argument("--contrawsd", type=int, default=300, help="ContraWSD test items (default 300)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nmtvariants.corpora.toyworld import generate

    start = time.perf_counter()
    manifest = generate(
        args.outdir,
        seed=args.seed,
        train=args.train,
        valid=args.valid,
        test=args.test,
        image_size=args.image_size,
        contrawsd=args.contrawsd,
    )
    log.info(
        "toyworld: %d files under %s in %.1f s",
        len(manifest["files"]),
        args.outdir,
        time.perf_counter() - start,
    )
    return 0
