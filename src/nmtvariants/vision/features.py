"""Extract a split's image features and store them: ``F.npy`` float16 [images, regions, channels] in the
order of the split's image list, ``F.ids.txt`` the image ids in that order (one per line, as in the
list, e.g. Multi30k's ``1000092795.jpg`` or MSCOCO's ``COCO_val2014_000000398076.jpg#657409``, whose
file is the part before ``#``), ``F.json`` how they were made (depth, weights, size; ``weights: random``
marks features that are not ImageNet features).

Images are resized to ``size`` x ``size`` (bilinear, PIL), scaled to [0, 1] and normalised with the
ImageNet mean and standard deviation, then run through the ResNet in eval mode (BatchNorm uses its
running statistics, so a batch gives each image's own features) in batches, on the GPU when there is
one. The array is streamed to disk batch by batch, so a split of 29k images never sits in memory.

**Standardisation** (``standardise="region"``, off by default): each region's vector is shifted and
scaled to mean 0 and variance 1 over its channels. The paper feeds the raw features to its linear
projection, and so does the default. An untrained ResNet (``weights: random``, the offline demo) gives
all-positive vectors of norm ~100, several times the text states' scale once projected, and the flat
strategy then attends almost only to the image regions and never learns its text source; standardising
here fixes the scale without a LayerNorm in the model, so the image encoder stays the paper's ``W f + b``
(models/encoders.py). Per region, so no statistic of any split is needed and every split is treated alike.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from numpy.lib import format as npy_format
from PIL import Image, UnidentifiedImageError

from nmtvariants.errors import InputError
from nmtvariants.fileio import atomic_write, read_lines, write_lines
from nmtvariants.vision import RANDOM
from nmtvariants.vision.resnet import MEAN, STD, LastConvBlock, build_resnet

log = logging.getLogger(__name__)

FLOAT16_MAX = float(np.finfo(np.float16).max)
STANDARDISE = ("none", "region")  # the standardisation modes of extract()


def sidecars(output: Path) -> tuple[Path, Path]:
    """The ids and metadata files that go with features file ``output`` (``F.npy``)."""
    if output.suffix != ".npy":
        raise InputError(f"image features: output {output} must end in .npy")
    return output.with_name(f"{output.stem}.ids.txt"), output.with_name(f"{output.stem}.json")


def image_file(image_id: str) -> str:
    """The file name of an image id: Multi30k's MSCOCO lists append ``#<caption id>`` to the file name."""
    return image_id.split("#", 1)[0]


def read_image_list(list_path: Path, images: Path) -> list[str]:
    """The image ids of a split list (one per line; files relative to ``images``), each checked to exist."""
    names = []
    for number, line in enumerate(read_lines(list_path), start=1):
        name = line.strip()
        if not name:
            raise InputError(f"{list_path}:{number}: empty line; give one image file name per line")
        if not (images / image_file(name)).is_file():
            raise InputError(
                f"{list_path}:{number}: image {image_file(name)} not found in {images}; put the split's "
                "images there"
            )
        names.append(name)
    if not names:
        raise InputError(f"{list_path}: no image names; give one image file name per line")
    return names


def load_image(path: Path, size: int, where: str) -> torch.Tensor:
    """[3, size, size] float32: RGB, bilinear resize, [0, 1], ImageNet normalisation."""
    try:
        with Image.open(path) as image:
            pixels = np.asarray(image.convert("RGB").resize((size, size), Image.BILINEAR), dtype=np.float32)
    except (UnidentifiedImageError, OSError) as error:
        raise InputError(f"{where}: cannot read image {path} ({error}); replace or remove it") from None
    normalised = (pixels / 255.0 - np.asarray(MEAN, dtype=np.float32)) / np.asarray(STD, dtype=np.float32)
    return torch.from_numpy(normalised).permute(2, 0, 1)


def standardise_regions(features: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """[images, regions, channels] -> each region's vector with mean 0 and variance 1 over its channels
    (a constant vector becomes 0): the scale fix of untrained features (module docstring)."""
    mean = features.mean(axis=-1, keepdims=True)
    std = features.std(axis=-1, keepdims=True)
    return (features - mean) / (std + eps)


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@torch.inference_mode()
def extract(
    images: Path,
    list_path: Path,
    output: Path,
    depth: int = 50,
    weights: str | Path = RANDOM,
    size: int = 224,
    batch_size: int = 32,
    seed: int = 0,
    device: torch.device | None = None,
    standardise: str = "none",
) -> dict[str, object]:
    """Write ``output`` (.npy) and its sidecars for the images of ``list_path``; returns the metadata.

    ``standardise``: ``none`` (the paper's raw features) or ``region`` (:func:`standardise_regions`)."""
    if standardise not in STANDARDISE:
        raise InputError(f"image features: standardise {standardise!r}; choose from {', '.join(STANDARDISE)}")
    if size < 32:
        raise InputError(f"image features: size {size}; a ResNet needs at least 32 pixels")
    if batch_size < 1:
        raise InputError(f"image features: batch size {batch_size}; give a positive number")
    ids_path, meta_path = sidecars(output)
    names = read_image_list(list_path, images)
    device = device or default_device()
    # channels-last: oneDNN's CPU convolutions (and cuDNN's) are faster on it; the whole command takes
    # 0.90x the time (3,000 images, ResNet-18 at 64 px, one thread: benchmarks/results/
    # ab_image_features_channels_last.md); features within the tests' tolerance of the NCHW ones
    network = LastConvBlock(build_resnet(depth, weights, seed)).to(device, memory_format=torch.channels_last)
    shape: tuple[int, int, int] | None = None
    with atomic_write(output, "wb") as handle:
        for start in range(0, len(names), batch_size):
            chunk = names[start : start + batch_size]
            batch = torch.stack(
                [
                    load_image(images / image_file(name), size, f"{list_path}:{start + k + 1}")
                    for k, name in enumerate(chunk)
                ]
            )
            features = network(batch.to(device, memory_format=torch.channels_last)).float().cpu().numpy()
            if standardise == "region":
                features = standardise_regions(features)
            peak = float(np.abs(features).max())
            if not np.isfinite(peak) or peak > FLOAT16_MAX:
                raise InputError(
                    f"{list_path}:{start + 1}: features of this batch reach {peak:g}, beyond float16; "
                    "check the weights file"
                )
            if shape is None:
                shape = (len(names), features.shape[1], features.shape[2])
                header = {"descr": np.dtype("<f2").str, "fortran_order": False, "shape": shape}
                npy_format.write_array_header_1_0(handle, header)
            handle.write(features.astype("<f2").tobytes())
            log.info("image features: %d/%d images", start + len(chunk), len(names))
    write_lines(ids_path, names)
    assert shape is not None
    meta = {
        "images": len(names),
        "regions": shape[1],
        "channels": shape[2],
        "dtype": "float16",
        "depth": depth,
        "weights": RANDOM if str(weights) == RANDOM else str(weights),
        "imagenet": str(weights) != RANDOM,
        "seed": seed if str(weights) == RANDOM else None,
        "size": size,
        "standardise": standardise,
        "list": str(list_path),
    }
    with atomic_write(meta_path) as handle:
        json.dump(meta, handle, indent=2, sort_keys=True)
        handle.write("\n")
    return meta


def load_features(path: Path, expected_ids: Sequence[str] | None = None) -> tuple[np.ndarray, list[str]]:
    """The feature array (memory-mapped) and its ids; ``expected_ids``: the order a corpus needs."""
    ids_path, _ = sidecars(path)
    if not path.is_file() or not ids_path.is_file():
        raise InputError(f"{path}: image features or their ids ({ids_path}) missing; run image-features")
    array = np.load(path, mmap_mode="r")
    ids = list(read_lines(ids_path))
    if array.ndim != 3 or array.shape[0] != len(ids):
        raise InputError(
            f"{path}: shape {list(array.shape)} does not match {len(ids)} ids in {ids_path}; re-extract"
        )
    if expected_ids is not None and list(expected_ids) != ids:
        expected = list(expected_ids)
        pairs = enumerate(zip(ids, expected, strict=False))
        first = next((i for i, (a, b) in pairs if a != b), min(len(ids), len(expected)))
        raise InputError(
            f"{ids_path}:{first + 1}: image ids differ from the split's image list there; re-extract "
            "the features for this split"
        )
    return array, ids
