"""External resources a config needs that pip cannot install, checked before the first job runs.

WordNet (NLTK's METEOR), a Meteor 1.5 release, ImageNet ResNet weights, the user's images, Stanza
models for languages the workflow cannot train a parser for, and a local mirror are files outside
the project: a missing one used to stop a run minutes or hours in, in the job that first read it.
:func:`missing_resources` lists every one the enabled experiments will read, so the workflow stops at
start-up (``onstart:`` in the Snakefile, i.e. before any job of a real run; dry runs plan without
them) with one line that names each missing resource, who needs it, and what to do.

Each entry's path comes from the config (``meteor.wordnet``, ``meteor.home``,
``image_features.weights`` / ``images``, ``studies.bugliarello2020.parser_models``, ``mirror``), so
pointing one at an empty folder hides it, which is how the tests exercise each entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nmtvariants.corpora.download import is_url
from nmtvariants.evaluation.meteor15 import GET_IT as GET_METEOR15
from nmtvariants.evaluation.meteor15 import missing_release_files
from nmtvariants.evaluation.meteor_ribes import (
    DEBIAN_WORDNET_DIR,
    INSTALL_HINT,
    WORDNET_FILES,
    nltk_data_dir,
)
from nmtvariants.vision import RANDOM

# Studies whose rules score METEOR whatever the experiment's `evaluate.metrics` say (the paper's metric).
METEOR_STUDIES = ("libovicky2018",)
PARSER_STUDY = "bugliarello2020"
DEFAULT_PARSER_MODELS = "models/stanza"
DEFAULT_PARSER_TREEBANKS = {"en": "ud_ewt"}
DEFAULT_IMAGES = "data/multi30k_images"


@dataclass(frozen=True)
class Missing:
    """One missing resource: what it is, which experiments need it, and the one thing to do."""

    what: str
    needed_by: tuple[str, ...]
    fix: str

    def line(self) -> str:
        return f"{self.what} (needed by {', '.join(self.needed_by)}): {self.fix}"


def _experiments(config: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return dict(config.get("experiments") or {})


def _is_toyworld(config: Mapping[str, Any], corpus: str) -> bool:
    return (config.get("corpora") or {}).get(corpus, {}).get("source") == "toyworld"


def wordnet_available(wordnet_dir: str | Path, nltk_data: str | Path | None = None) -> bool:
    """True when METEOR can load WordNet: a prepared copy in the NLTK data folder, or the source files
    (Debian's ``wordnet-base`` + ``wordnet-sense-index``) to prepare it from."""
    prepared = nltk_data_dir(nltk_data) / "corpora" / "wordnet"
    if all((prepared / name).is_file() for name in [*WORDNET_FILES, "lexnames"]):
        return True
    return all((Path(wordnet_dir) / name).is_file() for name in WORDNET_FILES)


def meteor_experiments(config: Mapping[str, Any]) -> dict[str, list[str]]:
    """Experiment -> target languages, for the experiments whose scores include METEOR."""
    needed = {}
    for name, spec in _experiments(config).items():
        metrics = (spec.get("evaluate") or {}).get("metrics") or []
        if "meteor" in metrics or spec.get("study") in METEOR_STUDIES:
            needed[name] = [pair.split("-")[1] for pair in spec["pairs"]]
    return needed


def _missing_meteor(config: Mapping[str, Any]) -> list[Missing]:
    needed = meteor_experiments(config)
    if not needed:
        return []
    settings = config.get("meteor") or {}
    users = tuple(needed)
    if settings.get("home"):
        langs = sorted({lang for langs in needed.values() for lang in langs})
        missing = missing_release_files(settings["home"], langs)
        if missing:
            return [Missing(f"Meteor 1.5 release ({', '.join(missing)})", users, GET_METEOR15)]
        return []
    wordnet = settings.get("wordnet", str(DEBIAN_WORDNET_DIR))
    if wordnet_available(wordnet):
        return []
    fix = f"run `{INSTALL_HINT}` (or set meteor.wordnet to a WordNet 3.0 dict folder)"
    return [Missing(f"WordNet 3.0 files in {wordnet} for METEOR (NLTK)", users, fix)]


def _image_experiments(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(experiment, corpus) of the experiments with image features."""
    found = []
    for name, spec in _experiments(config).items():
        if any((inputs or {}).get("features") for inputs in (spec.get("inputs") or {}).values()):
            found.append((name, spec["corpus"]))
    return found


def _missing_images(config: Mapping[str, Any]) -> list[Missing]:
    users = _image_experiments(config)
    if not users:
        return []
    settings = config.get("image_features") or {}
    missing = []
    weights = str(settings.get("weights", RANDOM))
    if weights != RANDOM and not Path(weights).is_file():
        missing.append(
            Missing(
                f"ImageNet ResNet weights {weights} (image_features.weights)",
                tuple(name for name, _ in users),
                "download torchvision's ResNet state_dict on a machine with internet and copy it there, "
                "or set image_features.weights: random",
            )
        )
    photographs = tuple(name for name, corpus in users if not _is_toyworld(config, corpus))
    images = Path(settings.get("images", DEFAULT_IMAGES))
    if photographs and not (images.is_dir() and any(images.iterdir())):
        missing.append(
            Missing(
                f"the corpus images in {images} (image_features.images)",
                photographs,
                "get the Flickr30k images (registration at the Flickr30k site) and unpack them there",
            )
        )
    return missing


def _missing_parsers(config: Mapping[str, Any]) -> list[Missing]:
    """Stanza models of source languages without gold trees and without a treebank to train on."""
    settings = (config.get("studies") or {}).get(PARSER_STUDY) or {}
    folder = Path(settings.get("parser_models", DEFAULT_PARSER_MODELS))
    trained = settings.get("parser_treebanks", DEFAULT_PARSER_TREEBANKS)
    users: dict[str, list[str]] = {}
    for name, spec in _experiments(config).items():
        if spec.get("study") != PARSER_STUDY or _is_toyworld(config, spec["corpus"]):
            continue
        for pair in spec["pairs"]:
            lang = pair.split("-")[0]
            if lang not in trained:
                users.setdefault(lang, []).append(name)
    missing = []
    for lang, names in users.items():
        files = [folder / f"{lang}_{kind}.pt" for kind in ("tagger", "parser")]
        absent = [str(path) for path in files if not path.is_file()]
        if absent:
            missing.append(
                Missing(
                    f"Stanza models {', '.join(absent)}",
                    tuple(dict.fromkeys(names)),
                    f"train them with `nmtvariants stanza-train` on a {lang} treebank, or add "
                    f"studies.{PARSER_STUDY}.parser_treebanks.{lang}",
                )
            )
    return missing


def _missing_mirror(config: Mapping[str, Any]) -> list[Missing]:
    mirror = config.get("mirror")
    downloaded = [
        name for name, spec in (config.get("corpora") or {}).items() if spec.get("source") != "toyworld"
    ]
    if not mirror or is_url(str(mirror)) or not downloaded or Path(mirror).is_dir():
        return []
    return [
        Missing(
            f"the mirror folder {mirror}",
            tuple(f"corpora.{name}" for name in downloaded),
            "fix the `mirror:` path (a folder laid out like shared/data, or a URL prefix), or set it to null",
        )
    ]


CHECKS = (_missing_meteor, _missing_images, _missing_parsers, _missing_mirror)


def missing_resources(config: Mapping[str, Any], checks: Iterable = CHECKS) -> list[Missing]:
    """Every external resource the config's experiments will read and that is not there."""
    return [missing for check in checks for missing in check(config)]


def missing_resources_message(config: Mapping[str, Any]) -> str | None:
    """The one line the workflow stops with, or None when everything is there."""
    missing = missing_resources(config)
    if not missing:
        return None
    return "missing external resources: " + "; ".join(entry.line() for entry in missing)
