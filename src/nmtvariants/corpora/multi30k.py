"""Multi30k task 1: split names, languages, upstream locations and the parallelism check.

Upstream names the validation split ``val``; the pipeline calls it ``valid`` like every other
corpus. Czech exists only for train/valid/test_2016_flickr/test_2018_flickr. Each split also has an
image list (``{split}.images``: one Flickr30k/COCO file name per line, aligned with the text lines);
the images themselves are behind the Flickr30k registration and are supplied by the user.
"""

from __future__ import annotations

from pathlib import Path

from nmtvariants.errors import InputError
from nmtvariants.fileio import count_lines

COMMIT = "a3d2e0d26b56f3846f66a952536ffed4e401d05a"
UPSTREAM = f"https://raw.githubusercontent.com/multi30k/dataset/{COMMIT}/data/task1"
MIRROR = "multi30k/task1"

# our split name -> upstream split name
SPLITS: dict[str, str] = {
    "train": "train",
    "valid": "val",
    "test_2016_flickr": "test_2016_flickr",
    "test_2017_flickr": "test_2017_flickr",
    "test_2017_mscoco": "test_2017_mscoco",
    "test_2018_flickr": "test_2018_flickr",
}
LANGUAGES: dict[str, tuple[str, ...]] = {
    "train": ("en", "de", "fr", "cs"),
    "valid": ("en", "de", "fr", "cs"),
    "test_2016_flickr": ("en", "de", "fr", "cs"),
    "test_2017_flickr": ("en", "de", "fr"),
    "test_2017_mscoco": ("en", "de", "fr"),
    "test_2018_flickr": ("en", "de", "fr", "cs"),
}
# published sizes (Elliott et al. 2016/2017, Barrault et al. 2018)
LINES: dict[str, int] = {
    "train": 29000,
    "valid": 1014,
    "test_2016_flickr": 1000,
    "test_2017_flickr": 1000,
    "test_2017_mscoco": 461,
    "test_2018_flickr": 1071,
}
IMAGE_SUFFIX = "images"

IMAGES_GATE = (
    "the Flickr30k images are distributed by the University of Illinois after a request form: "
    "https://forms.illinois.edu/sec/229675 (flickr30k-images.tar.gz); the test_2017/2018 and COCO images "
    "come with the Multi30k test packages (https://github.com/multi30k/dataset, 'Images' section)"
)
FEATURES_GATE = (
    "pre-extracted ResNet-50 features (res4f_relu 14x14x1024 and avgpool 2048) are in the Google Drive "
    "folder linked from https://github.com/multi30k/dataset (README, 'Visual features'); note that the "
    "paper uses the last convolutional layer, which the vision stage extracts from the images instead"
)


def raw_text_path(split: str, lang: str) -> str:
    """Path of a raw text file relative to ``data/task1`` upstream and ``multi30k/task1`` in the mirror."""
    return f"raw/{SPLITS[split]}.{lang}.gz"


def image_list_path(split: str) -> str:
    return f"image_splits/{SPLITS[split]}.txt"


def check_parallel(folder: str | Path) -> dict[str, int]:
    """Check that every split's text files and image list have the same number of lines.

    Returns ``{split: lines}``. A mismatch means a truncated or mixed-up file, and training on it
    would silently misalign captions and images.
    """
    folder = Path(folder)
    counts: dict[str, int] = {}
    for split, languages in LANGUAGES.items():
        names = [f"{split}.{lang}" for lang in languages] + [f"{split}.{IMAGE_SUFFIX}"]
        found = {name: count_lines(folder / name) for name in names if (folder / name).exists()}
        if not found:
            continue
        if len(set(found.values())) != 1:
            raise InputError(
                f"{folder}: Multi30k split {split!r} is not parallel: "
                + ", ".join(f"{name}={lines}" for name, lines in found.items())
                + "; delete the folder and download again"
            )
        counts[split] = next(iter(found.values()))
    return counts
