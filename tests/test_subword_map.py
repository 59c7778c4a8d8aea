"""The subword -> word map against a string-level join and against real Moses -a / subword-nmt output."""

from __future__ import annotations

import gzip
import itertools
import re
from pathlib import Path

import pytest
from sacremoses import MosesTokenizer

from nmtvariants.text.bpe import BPESegmenter, learn_joint_bpe
from nmtvariants.text.subword_map import joined_tokens, token_ids, word_ids, word_ids_from_subwords, words


def test_hand_examples() -> None:
    assert token_ids(["new@@", "s", "are", "good"]) == [0, 0, 1, 2]
    assert word_ids_from_subwords(["new@@", "s", "are", "good"]) == [0, 0, 1, 2]
    pieces = ["the", "dar@@", "k", "@-@", "blue", "ball"]
    assert word_ids(pieces) == [0, 1, 1, 1, 1, 2]
    assert words(pieces) == ["the", "dark-blue", "ball"]
    # a segmented marker still glues; without gluing it is a word of its own
    assert word_ids(["a", "@@@", "-@@", "@", "b", "c"]) == [0, 0, 0, 0, 0, 1]
    assert word_ids(["a", "@-@", "b"], hyphen=None) == [0, 1, 2]
    assert joined_tokens(["Hau@@", "s", "@-@", "Tür"]) == ["Haus", "@-@", "Tür"]
    assert words(["chauve", "@-@", "souris", "@-@", "x", "."]) == ["chauve-souris-x", "."]


def _naive_words(line: str) -> list[str]:
    """Independent: undo BPE and the hyphen marker on the whole string, then split on spaces."""
    return re.sub(r"@@( |$)", "", line).replace(" @-@ ", "-").split()


@pytest.fixture(scope="module")
def newstest(real_data) -> list[str]:
    name = "wmt/en-de/newstest2014.en.gz"
    with gzip.open(real_data(name) / name, "rt", encoding="utf-8") as handle:
        return [line.rstrip("\n") for line, _ in zip(handle, range(600), strict=False)]


def test_real_moses_aggressive_split_maps_back_to_plain_tokens(newstest: list[str], tmp_path: Path) -> None:
    """On real news text: words(tokenize -a, then BPE) == tokenize without -a, line by line."""
    moses = MosesTokenizer("en")
    plain = [moses.tokenize(line, escape=False) for line in newstest]
    split = [" ".join(moses.tokenize(line, escape=False, aggressive_dash_splits=True)) for line in newstest]
    train = tmp_path / "train.en"
    train.write_text("\n".join(split) + "\n", encoding="utf-8")
    learned = learn_joint_bpe({"en": train}, 300, tmp_path / "codes", tmp_path)
    segment = BPESegmenter(learned.codes["en"], learned.vocab["en"], threshold=2)
    hyphenated = 0
    for tokens, line in zip(plain, split, strict=True):
        pieces = segment(line).split()
        assert words(pieces) == tokens == _naive_words(" ".join(pieces))
        ids = word_ids(pieces)
        assert ids[0] == 0 and ids[-1] == len(tokens) - 1
        assert all(b - a in (0, 1) for a, b in itertools.pairwise(ids))
        hyphenated += "@-@" in line
    assert hyphenated > 50
