"""Corpus statistics per split and language: sentences, tokens, types (whitespace tokens)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd

from nmtvariants.errors import InputError
from nmtvariants.fileio import read_lines

SPLIT_ORDER = {"train": 0, "valid": 1, "test": 2}


def split_and_language(path: Path) -> tuple[str, str]:
    """``data/x/train.en`` -> ("train", "en"); the naming convention of every corpus folder."""
    split, _, language = path.name.rpartition(".")
    if not split or not language:
        raise InputError(f"{path}: expected a file named <split>.<lang>, e.g. train.en")
    return split, language


def corpus_name(path: Path) -> str:
    """``data/<corpus>/raw/<split>.<lang>`` -> ``<corpus>``; otherwise the file's folder name."""
    return path.parent.parent.name if path.parent.name == "raw" else path.parent.name


def text_statistics(paths: list[Path]) -> pd.DataFrame:
    rows = []
    for path in paths:
        split, language = split_and_language(path)
        types: Counter[str] = Counter()
        sentences = tokens = 0
        for line in read_lines(path):
            words = line.split()
            sentences += 1
            tokens += len(words)
            types.update(words)
        rows.append(
            {
                "corpus": corpus_name(path),
                "split": split,
                "language": language,
                "sentences": sentences,
                "tokens": tokens,
                "types": len(types),
                "tokens/sentence": tokens / max(sentences, 1),
            }
        )
    frame = pd.DataFrame(rows)
    frame["_order"] = frame["split"].map(SPLIT_ORDER).fillna(len(SPLIT_ORDER))
    frame = frame.sort_values(["corpus", "_order", "split", "language"], kind="stable")
    return frame.drop(columns="_order").reset_index(drop=True)
