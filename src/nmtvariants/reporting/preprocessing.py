"""The preprocessing table: what cleaning dropped and why, what BPE did to the token counts, the
network vocabulary, and how exactly the inverse chain restores raw text (round-trip exactness)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from nmtvariants.fileio import read_lines


@dataclass
class PairFiles:
    """The files one (corpus, language pair) preprocessing produced."""

    corpus: str
    pair: str
    drops_json: Path
    vocab: Path
    tokenized_train: dict[str, Path]  # before cleaning
    bpe_train: dict[str, Path]
    truecased_train: dict[str, Path]
    roundtrip_json: dict[str, list[Path]] = field(default_factory=dict)


def token_count(path: Path) -> tuple[int, int]:
    """(tokens, types) of a whitespace-tokenised file."""
    tokens = 0
    types: set[str] = set()
    for line in read_lines(path):
        words = line.split()
        tokens += len(words)
        types.update(words)
    return tokens, len(types)


def _load_json(path: Path) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def pair_rows(files: PairFiles) -> list[dict]:
    drops = _load_json(files.drops_json)
    dropped = drops.get("dropped", {})
    vocab_size = sum(1 for _ in read_lines(files.vocab))
    rows = []
    for lang in files.pair.split("-"):
        tok_tokens, _ = token_count(files.tokenized_train[lang])
        words, word_types = token_count(files.truecased_train[lang])
        subwords, subword_types = token_count(files.bpe_train[lang])
        row = {
            "corpus": files.corpus,
            "pair": files.pair,
            "lang": lang,
            "train pairs in": drops.get("input_pairs"),
            "kept": drops.get("kept"),
            "dropped": ", ".join(f"{reason} {count}" for reason, count in sorted(dropped.items()) if count)
            or "none",
            "tokens (tokenised)": tok_tokens,
            "tokens after clean": words,
            "word types": word_types,
            "subwords after BPE": subwords,
            "subword types": subword_types,
            "subwords/token": subwords / max(words, 1),
            "network vocab": vocab_size,
        }
        reports = [_load_json(path) for path in files.roundtrip_json.get(lang, [])]
        if reports:
            lines = sum(report["lines"] for report in reports)
            exact = sum(report["inverse"]["identical"] for report in reports)
            row["round-trip exact %"] = 100.0 * exact / max(lines, 1)
            classes: dict[str, int] = {}
            for report in reports:
                for kind, count in report["inverse"]["classes"].items():
                    classes[kind] = classes.get(kind, 0) + count
            row["round-trip mismatches"] = (
                ", ".join(f"{kind} {count}" for kind, count in sorted(classes.items())) or "none"
            )
        rows.append(row)
    return rows


def preprocessing_table(pairs: list[PairFiles]) -> pd.DataFrame:
    return pd.DataFrame([row for files in pairs for row in pair_rows(files)])


NOTES = """
Cleaning follows Moses `clean-corpus-n.perl` (training data only; dev/test keep every line).
Round-trip exactness: the workflow's own BPE file of each test set, post-processed as the
hypotheses are (de-BPE -> detruecase if the corpus truecases -> detokenise), compared with the
normalised raw line (`inverse` in the JSON reports under results/<corpus>/<pair>/roundtrip/, which
also list examples of each mismatch class and the stage that broke the line).
"""
