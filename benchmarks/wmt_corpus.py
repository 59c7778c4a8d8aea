"""A WMT14 EN-DE-sized parallel corpus, generated offline, served as a mirror of the WMT archives.

The data path's cost is driven by a corpus's line count, its sentence lengths, its vocabulary size
(BPE learning and truecasing scale with the word types, not only the tokens) and the characters the
Moses tokeniser treats specially. Real WMT14 EN-DE cannot be downloaded here, so this writes a corpus
with those statistics and a fixed seed:

- the line counts of WMT14 EN-DE's three archives (Europarl v7 1,920,209; CommonCrawl 2,399,123;
  News Commentary v9 201,288 = 4,520,620 pairs), scaled by ``--fraction``;
- English sentence lengths drawn from a log-normal with median 20 words (mean ~23.5 words, a long
  tail past the cleaning limit of 80), German lengths the English ones times a log-normal ratio;
- word types drawn from a Zipf law (exponent 1.2) over 1,500,000 types per side: ~87k types in a
  1% corpus, ~410k in 10% and ~1.2M in the full one (expected counts), Heaps-like growth as real text
  shows; among them hyphenated compounds (the ``-a`` tokeniser option splits them), numbers with
  separators (shared by both sides), Moses-escaped characters (``& < > ' " | [ ]``) and attached
  punctuation;
- a few bad pairs, as real crawls have: an empty side, over-long lines, length-ratio violations.

The archives have the upstream names and members (``rules/download.smk`` reads them through the
catalogue's ``wmt/training/`` mirror path), so a config with ``mirror: <folder>`` runs the real
download and preprocessing rules unchanged::

    python benchmarks/wmt_corpus.py --fraction 0.1 --mirror scale/mirror-0.1

writes ``scale/mirror-0.1/wmt/training/training-parallel-{europarl-v7,commoncrawl,nc-v9}.tgz`` and a
``wmt_corpus.json`` beside them with the counts it wrote. Text only, no semantics: the corpus is for
measuring cost, not for training a useful model.
"""

from __future__ import annotations

import argparse
import json
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# WMT14 EN-DE's training archives (catalogue `wmt14_ende`): file, member template, pairs upstream.
ARCHIVES: tuple[tuple[str, str, int], ...] = (
    ("training-parallel-europarl-v7.tgz", "training/europarl-v7.de-en.{lang}", 1_920_209),
    ("training-parallel-commoncrawl.tgz", "commoncrawl.de-en.{lang}", 2_399_123),
    ("training-parallel-nc-v9.tgz", "training/news-commentary-v9.de-en.{lang}", 201_288),
)
MIRROR_FOLDER = "wmt/training"  # nmtvariants.corpora.catalogue.WMT_TRAINING_MIRROR
TYPES = 1_500_000
ZIPF_EXPONENT = 1.2
MEDIAN_WORDS = 20.0
LENGTH_SIGMA = 0.55
MAX_WORDS = 250
RATIO_SIGMA = 0.12
BAD_RATE = 0.0005  # per kind of bad pair
CHUNK_LINES = 100_000

_EN_SYLLABLES = (
    "a an ar as at ba be bo ca co da de di el en er es fa fi ge go ha he in is it ka la le li lo ma "
    "me mi mo na ne no on or pa pe po ra re ri ro sa se si so st ta te th ti to un ve wa we"
)
_DE_SYLLABLES = (
    "a ach an au be ber da de den der die ein en er eu fa ge gu ha he ich in ist ka ke la le lich "
    "ma me mo na ne no ö or ra re sch se st ta te ung ü un ver vo wa we ß zu"
)
SYLLABLES = {"en": _EN_SYLLABLES.split(), "de": _DE_SYLLABLES.split()}
# Frequent special types, at fixed ranks (both sides): Moses escapes & < > ' " | [ ] in them.
SPECIAL_TYPES = {
    2: '"',
    31: "&",
    57: "(",
    58: ")",
    143: "'",
    402: "|",
    777: "[",
    778: "]",
    1501: "<",
    1502: ">",
}
COMPOUND_EVERY = 17  # every 17th type is a hyphenated compound of two more frequent ones
NUMBER_EVERY = 29  # every 29th type a number (the same strings on both sides)


def word_form(rank: int, lang: str) -> str:
    """The rank-th word type of ``lang``: a syllable string that grows with the rank (bijective)."""
    inventory = SYLLABLES[lang]
    digits, value = [], rank + 1
    while value:
        value, digit = divmod(value - 1, len(inventory))
        digits.append(inventory[digit])
    word = "".join(reversed(digits))
    if lang == "de" and rank % 3 == 0:  # German nouns are capitalised
        word = word[0].upper() + word[1:]
    return word


def number_form(rank: int) -> str:
    """Numbers as news text writes them: years, decimals, thousands separators."""
    kind = rank % 3
    if kind == 0:
        return str(1900 + rank % 130)
    if kind == 1:
        return f"{rank % 1000}.{rank % 10}"
    return f"{rank // 1000 % 1000},{rank % 1000:03d}"


def vocabulary(lang: str, types: int = TYPES) -> list[str]:
    """``types`` distinct forms ordered by frequency rank."""
    forms = [word_form(rank, lang) for rank in range(types)]
    for rank in range(types):
        if rank in SPECIAL_TYPES:
            forms[rank] = SPECIAL_TYPES[rank]
        elif rank > 1000 and rank % NUMBER_EVERY == 0:
            forms[rank] = number_form(rank)
        elif rank > 1000 and rank % COMPOUND_EVERY == 0:
            forms[rank] = f"{forms[rank // 7]}-{forms[rank // 3]}"
    forms[1] = ","
    seen: set[str] = set()
    for rank, form in enumerate(forms):  # a compound may equal a plain form: keep types distinct
        while form in seen:
            form += "x"
        seen.add(form)
        forms[rank] = form
    return forms


def zipf_cdf(types: int = TYPES, exponent: float = ZIPF_EXPONENT) -> np.ndarray:
    weights = 1.0 / np.arange(1, types + 1, dtype=np.float64) ** exponent
    cdf = np.cumsum(weights)
    return cdf / cdf[-1]


@dataclass(frozen=True)
class Counts:
    pairs: int
    tokens_en: int
    tokens_de: int
    empty: int
    overlong: int
    ratio: int


def _lines(words: list[str], ids: np.ndarray, lengths: np.ndarray) -> list[str]:
    tokens = [words[i] for i in ids.tolist()]
    out, start = [], 0
    for length in lengths.tolist():
        line = " ".join(tokens[start : start + length]).replace(" ,", ",")
        out.append(line + "." if line else line)
        start += length
    return out


def pairs(
    count: int, rng: np.random.Generator, vocab: dict[str, list[str]], cdf: np.ndarray, stats: dict[str, int]
) -> Iterator[tuple[list[str], list[str]]]:
    """Chunks of (English lines, German lines), ``count`` pairs in all."""
    for start in range(0, count, CHUNK_LINES):
        n = min(CHUNK_LINES, count - start)
        en_len = np.clip(np.rint(rng.lognormal(np.log(MEDIAN_WORDS), LENGTH_SIGMA, n)), 1, MAX_WORDS)
        de_len = np.clip(np.rint(en_len * rng.lognormal(0.0, RATIO_SIGMA, n)), 1, MAX_WORDS)
        en_len, de_len = en_len.astype(np.int64), de_len.astype(np.int64)
        bad = rng.random(n)
        empty = bad < BAD_RATE
        overlong = (bad >= BAD_RATE) & (bad < 2 * BAD_RATE)
        ratio = (bad >= 2 * BAD_RATE) & (bad < 3 * BAD_RATE)
        de_len[empty] = 0
        en_len[overlong] = de_len[overlong] = 300
        en_len[ratio], de_len[ratio] = 2, 60
        stats["empty"] += int(empty.sum())
        stats["overlong"] += int(overlong.sum())
        stats["ratio"] += int(ratio.sum())
        lines = {}
        for lang, lengths in (("en", en_len), ("de", de_len)):
            ids = np.searchsorted(cdf, rng.random(int(lengths.sum())), side="right")
            lines[lang] = _lines(vocab[lang], np.minimum(ids, len(cdf) - 1), lengths)
            stats[f"tokens_{lang}"] += int(lengths.sum())
        yield lines["en"], lines["de"]


def write_archive(path: Path, member: str, count: int, rng, vocab, cdf, stats) -> None:
    """One upstream-named .tgz with the member's .en and .de, written under a temporary name."""
    with tempfile.TemporaryDirectory(dir=path.parent) as scratch:
        files = {lang: Path(scratch) / f"{lang}.txt" for lang in ("en", "de")}
        handles = {lang: file.open("w", encoding="utf-8") for lang, file in files.items()}
        try:
            for en, de in pairs(count, rng, vocab, cdf, stats):
                handles["en"].write("\n".join(en) + "\n")
                handles["de"].write("\n".join(de) + "\n")
        finally:
            for handle in handles.values():
                handle.close()
        partial = path.with_name(f".{path.name}.part")
        with tarfile.open(partial, "w:gz", compresslevel=1) as archive:
            for lang, file in files.items():
                archive.add(file, arcname=member.format(lang=lang))
        partial.replace(path)


def generate(fraction: float, mirror: Path, seed: int = 1234) -> dict:
    """Write the three archives at ``fraction`` of WMT14 EN-DE's size; return what was written."""
    folder = mirror / MIRROR_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    vocab = {lang: vocabulary(lang) for lang in ("en", "de")}
    cdf = zipf_cdf()
    stats = {"tokens_en": 0, "tokens_de": 0, "empty": 0, "overlong": 0, "ratio": 0}
    archives = {}
    for name, member, upstream in ARCHIVES:
        count = max(1, round(upstream * fraction))
        write_archive(folder / name, member, count, rng, vocab, cdf, stats)
        archives[name] = count
    record = {"fraction": fraction, "seed": seed, "pairs": sum(archives.values()), "archives": archives}
    record.update(stats)
    record.update(types=TYPES, zipf_exponent=ZIPF_EXPONENT, median_words=MEDIAN_WORDS, sigma=LENGTH_SIGMA)
    (mirror / "wmt_corpus.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fraction", type=float, default=1.0, help="of WMT14 EN-DE's 4,520,620 pairs")
    parser.add_argument("--mirror", type=Path, required=True, help="mirror folder to write into")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    print(json.dumps(generate(args.fraction, args.mirror, args.seed)))


if __name__ == "__main__":
    main()
