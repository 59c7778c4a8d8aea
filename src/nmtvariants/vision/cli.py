"""`nmtvariants image-features`: a ResNet's last convolutional block for every image of a split list.

Writes F.npy (float16 [images, regions, channels], list order), F.ids.txt and F.json. Weights: a
torchvision ImageNet state_dict file, or ``random`` (a fixed-seed, untrained ResNet: the offline default,
not ImageNet features).
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

log = logging.getLogger(__name__)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "image-features", help="ResNet last-conv-block features of a split's images", description=__doc__
    )
    parser.add_argument("--images", required=True, type=Path, help="folder holding the images")
    parser.add_argument(
        "--list", required=True, type=Path, help="split list: one image file name per line, in split order"
    )
    parser.add_argument("--output", required=True, type=Path, help="features file F.npy")
    parser.add_argument("--depth", type=int, default=50, help="ResNet depth: 18, 34, 50, 101, 152 (50)")
    parser.add_argument(
        "--weights",
        default="random",
        help="torchvision ResNet state_dict file (ImageNet), or 'random' (fixed-seed, untrained; default)",
    )
    parser.add_argument("--size", type=int, default=224, help="images are resized to N x N pixels (224)")
    parser.add_argument("--batch-size", type=int, default=32, help="images per forward pass (32)")
    parser.add_argument("--seed", type=int, default=0, help="initialisation seed of 'random' weights (0)")
    parser.add_argument(
        "--standardise",
        choices=("none", "region"),
        default="none",
        help="none: the raw features, as the paper (default); region: each region's vector to mean 0, "
        "variance 1 over its channels (the scale fix for untrained ResNets)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nmtvariants.vision.features import extract

    start = time.perf_counter()
    meta = extract(
        args.images,
        args.list,
        args.output,
        depth=args.depth,
        weights=args.weights,
        size=args.size,
        batch_size=args.batch_size,
        seed=args.seed,
        standardise=args.standardise,
    )
    if not meta["imagenet"]:
        log.warning(
            "image-features: random (untrained) ResNet-%d: these are not ImageNet features", args.depth
        )
    log.info(
        "image-features: %d images -> %s [%d regions x %d channels] in %.1f s",
        meta["images"],
        args.output,
        meta["regions"],
        meta["channels"],
        time.perf_counter() - start,
    )
    return 0
