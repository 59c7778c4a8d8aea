"""METEOR through Debian's WordNet (A7 recipe), RIBES, and BLEU by source length."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from sacrebleu.metrics import BLEU

from nmtvariants.errors import ConfigError, MissingResourceError
from nmtvariants.evaluation.length_buckets import bleu_by_source_length, length_buckets
from nmtvariants.evaluation.meteor_ribes import (
    LEXNAMES_MAN_PAGE,
    LEXNAMES_WN30,
    lexnames_lines,
    load_wordnet,
    meteor,
    prepare_wordnet,
    ribes,
)


@pytest.fixture(scope="module")
def nltk_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepare_wordnet(tmp_path_factory.mktemp("nltk_data"))


def test_wordnet_copy_is_wordnet_30_with_synonyms(nltk_dir: Path) -> None:
    wordnet = load_wordnet(nltk_dir)
    assert wordnet.get_version() == "3.0"
    lemmas = {lemma.name() for synset in wordnet.synsets("dog") for lemma in synset.lemmas()}
    assert "hound" in lemmas
    assert not (nltk_dir / "corpora" / "wordnet").is_symlink()


def test_meteor_uses_synonyms_as_in_the_feasibility_trial(nltk_dir: Path) -> None:
    # A7: "dog is big" vs "hound is large" 0.736, unrelated words 0.25
    synonyms = meteor(["the dog is big"], [["the hound is large"]], "en", data_dir=nltk_dir)["score"]
    unrelated = meteor(["the dog is big"], [["the cat is tiny"]], "en", data_dir=nltk_dir)["score"]
    assert synonyms == pytest.approx(73.6, abs=0.1)
    assert unrelated == pytest.approx(25.0, abs=0.1)
    assert meteor(["a b c d"], [["a b c d"]], "en", data_dir=nltk_dir)["score"] > 99


def test_the_reader_without_the_omw_map_scores_as_nltks_own_reader(nltk_dir: Path) -> None:
    """The skipped 3.0 -> loaded-version map is for the Open Multilingual Wordnet only: NLTK's stock
    reader gives the same synonyms and the same METEOR."""
    from nltk.corpus.reader.wordnet import WordNetCorpusReader
    from nltk.translate.meteor_score import meteor_score

    ours = load_wordnet(nltk_dir)
    stock = WordNetCorpusReader(str(nltk_dir / "corpora" / "wordnet"), None)
    assert ours.map30 is None and stock.map30 is not None  # the stock reader built the map
    for word in ("dog", "big", "run", "large", "bank", "left"):
        assert [s.name() for s in ours.synsets(word)] == [s.name() for s in stock.synsets(word)]
    hyp = ["the", "big", "dog", "ran", "to", "the", "bank"]
    ref = ["a", "large", "hound", "runs", "to", "the", "shore"]
    assert meteor_score([ref], hyp, wordnet=ours) == meteor_score([ref], hyp, wordnet=stock)


def test_meteor_corpus_score_is_the_mean_of_sentence_scores(nltk_dir: Path) -> None:
    hyps, refs = ["the dog is big", "the dog is big"], [["the hound is large", "the cat is tiny"]]
    corpus = meteor(hyps, refs, "en", data_dir=nltk_dir)["score"]
    assert corpus == pytest.approx((73.611 + 25.0) / 2, abs=0.01)


def test_missing_wordnet_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(MissingResourceError, match="apt-get install wordnet-base wordnet-sense-index"):
        prepare_wordnet(tmp_path / "nltk", wordnet_dir=tmp_path / "no-wordnet")


def test_builtin_lexnames_equal_the_debian_man_page() -> None:
    assert LEXNAMES_MAN_PAGE.is_file(), "wordnet-base man page missing: apt-get install wordnet-base"
    with gzip.open(LEXNAMES_MAN_PAGE, "rt", errors="replace") as handle:
        from_man = [m.group(1) for line in handle if (m := re.match(r"^\d{2}\s+(\S+)", line))]
    assert from_man == LEXNAMES_WN30
    assert lexnames_lines()[3] == "03\tnoun.Tops\t1"
    assert lexnames_lines(Path("/nonexistent"))[44] == "44\tadj.ppl\t3"


def test_ribes_reproduces_the_nltk_documented_value() -> None:
    # nltk.translate.ribes_score.corpus_ribes doctest: 0.633 for these two pre-tokenised segments
    hyp1 = "It is a guide to action which ensures that the military always obeys the commands of the party"
    ref1 = [
        "It is a guide to action that ensures that the military will forever heed Party commands",
        "It is the guiding principle which guarantees the military forces always being under the "
        "command of the Party",
        "It is the practical guide for the army always to heed the directions of the party",
    ]
    hyp2 = "he read the book because he was interested in world history"
    ref2 = "he was interested in world history because he read the book"
    # pad the second segment's references so each "reference file" has two lines
    refs = [[ref1[0], ref2], [ref1[1], ref2], [ref1[2], ref2]]
    score = ribes([hyp1, hyp2], refs, "en", tokenize="none")["score"]
    assert round(score / 100, 4) == 0.633


def test_ribes_japanese_uses_mecab_tokens() -> None:
    result = ribes(["今日は良い天気です"], [["今日はいい天気です"]], "ja")
    assert "tok:ja-mecab" in result["signature"]
    assert result["score"] == pytest.approx(94.57, abs=0.01)  # A7 toy pair


def test_length_buckets_are_half_open_and_labelled_inclusively() -> None:
    buckets = length_buckets([1, 9, 10, 19, 20, 55], edges=[10, 20])
    assert buckets == [("0-9", [0, 1]), ("10-19", [2, 3]), (">=20", [4, 5])]
    with pytest.raises(ConfigError, match="increasing"):
        length_buckets([1], edges=[20, 10])


def test_bleu_by_length_equals_bleu_of_each_subset() -> None:
    sources = ["a " * 5, "a " * 15, "a " * 12, "a " * 3, "a " * 40]
    refs = [
        "the cat sat on the mat",
        "a dog ran in the park today",
        "it is raining again here",
        "hello there my friend",
        "this is a long one indeed",
    ]
    hyps = [
        "the cat sat on a mat",
        "a dog ran in the park",
        "it is raining here",
        "hello friend",
        "this is a long one indeed",
    ]
    result = bleu_by_source_length(sources, hyps, [refs], "en", edges=[10, 20])
    by_label = {row["bucket"]: row for row in result["buckets"]}
    short = BLEU().corpus_score([hyps[0], hyps[3]], [[refs[0], refs[3]]]).score
    middle = BLEU().corpus_score([hyps[1], hyps[2]], [[refs[1], refs[2]]]).score
    assert by_label["0-9"]["bleu"] == pytest.approx(short)
    assert by_label["10-19"]["bleu"] == pytest.approx(middle)
    assert by_label[">=20"]["n_sentences"] == 1 and by_label[">=20"]["bleu"] == pytest.approx(100.0)
    empty = bleu_by_source_length(sources, hyps, [refs], "en", edges=[10, 20, 100])
    assert {row["bucket"]: row["bleu"] for row in empty["buckets"]}[">=100"] is None
