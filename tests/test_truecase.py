"""Truecasing: sacremoses through our wrapper against naive transcriptions of Moses' perl scripts.

The reference functions below follow ``train-truecaser.perl`` and ``truecase.perl`` (mosesdecoder,
scripts/recaser) statement by statement, for plain tokenised text without XML markup.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from data_sources import RealData
from sacremoses import MosesTruecaser

from nmtvariants.errors import InputError, MissingResourceError
from nmtvariants.fileio import read_lines
from nmtvariants.text import truecase
from nmtvariants.text.moses import NormalizeTokenize
from nmtvariants.text.truecase import Detruecaser, Truecaser, load_truecase_model, train_truecaser

SENTENCE_END = {".", ":", "?", "!"}
DELAYED_START_TRAIN = {"(", "[", '"', "'", "&apos;", "&quot;", "&#91;", "&#93;"}
DELAYED_START_APPLY = {"(", "[", '"', "'"}


def perl_train(lines: list[str]) -> dict[str, dict[str, float]]:
    """train-truecaser.perl without --possiblyUseFirstToken."""
    casing: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for line in lines:
        words = line.split()
        start = 0
        while start < len(words) and words[start] in DELAYED_START_TRAIN:
            start += 1
        first = True
        for i in range(start, len(words)):
            if not first and words[i - 1] in SENTENCE_END:
                first = True
            if not first:
                casing[words[i].lower()][words[i]] += 1
            first = False
    return casing


def perl_load(model_path: Path) -> tuple[dict[str, str], set[str]]:
    """truecase.perl's model reading: BEST per lower-cased word, KNOWN surface forms."""
    best, known = {}, set()
    for model_line in model_path.read_text(encoding="utf-8").splitlines():
        word, *options = model_line.split()
        best[word.lower()] = word
        known.add(word)
        known.update(options[1::2])
    return best, known


def perl_apply(best: dict[str, str], known: set[str], line: str) -> str:
    """truecase.perl's main loop."""
    out, sentence_start = [], True
    for word in line.split():
        if sentence_start and word.lower() in best:
            out.append(best[word.lower()])
        elif word in known:
            out.append(word)
        elif word.lower() in best:
            out.append(best[word.lower()])
        else:
            out.append(word)
        if word in SENTENCE_END:
            sentence_start = True
        elif word not in DELAYED_START_APPLY:
            sentence_start = False
    return " ".join(out)


@pytest.fixture(scope="module")
def corpus(real_data: RealData) -> dict[str, list[str]]:
    step = NormalizeTokenize("de", aggressive_dash_splits=True)
    raw = (
        real_data("multi30k/task1/raw/val.de.gz", "multi30k/task1/raw/test_2016_flickr.de.gz")
        / "multi30k/task1/raw"
    )
    return {
        "train": [step(line) for line in read_lines(raw / "val.de.gz")]
        + [step(line) for line in read_lines(real_data.file("wmt/newstest2013/newstest2013.de.gz"))],
        "test": [step(line) for line in read_lines(raw / "test_2016_flickr.de.gz")],
    }


@pytest.fixture(scope="module")
def model(corpus: dict[str, list[str]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("truecase") / "model.de"
    types = train_truecaser(corpus["train"], path)
    assert types == len(path.read_text(encoding="utf-8").splitlines())
    return path


def test_model_agrees_with_perl_training(corpus: dict[str, list[str]], model: Path) -> None:
    expected = perl_train(corpus["train"])
    ours = {}
    for line in model.read_text(encoding="utf-8").splitlines():
        best, count_total, *_ = line.split()
        ours[best.lower()] = best
        count, total = count_total.strip("()").split("/")
        assert 0 < float(count) <= float(total)
    # sacremoses skips every quote/bracket token and resets the sentence start differently around
    # them, so a few rare types differ in counts; the chosen casing must agree almost everywhere.
    shared = [t for t in ours if t in expected]
    agree = sum(ours[t] == max(expected[t].items(), key=lambda kv: kv[1])[0] for t in shared)
    assert len(shared) >= 0.95 * len(ours)
    assert agree / len(shared) >= 0.99
    # Hand-checked: German nouns keep their capital, function words are lower-cased.
    assert ours["mann"] == "Mann" and ours["und"] == "und"


def test_streamed_training_writes_sacremoses_own_model(
    corpus: dict[str, list[str]], model: Path, tmp_path: Path
) -> None:
    """train_truecaser counts casing line by line instead of calling MosesTruecaser.train (which
    holds every token's weight of the corpus at once); the model file must be the one train() makes."""
    truecaser = MosesTruecaser()
    reference = truecaser.train([line.split() for line in corpus["train"]])
    path = tmp_path / "reference.de"
    with path.open("w", encoding="utf-8") as out:
        truecaser._write_casing(reference["casing"], out)
    assert model.read_text(encoding="utf-8") == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("chunk_lines", [1, 7, 10_000])
def test_chunked_model_loading_gives_sacremoses_own_model(
    model: Path, chunk_lines: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """load_truecase_model converts the file a chunk at a time; the model must be the one sacremoses'
    own loader builds (its `best` and `known`), whatever the chunk size."""
    monkeypatch.setattr(truecase, "MODEL_CHUNK_LINES", chunk_lines)
    reference = MosesTruecaser(load_from=str(model)).model
    loaded = load_truecase_model(model, MosesTruecaser())
    assert loaded["best"] == reference["best"]
    assert loaded["known"] == reference["known"]
    assert len(loaded["best"]) > 1000


def test_a_type_spread_over_two_chunks_is_merged_as_sacremoses_merges_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not what Moses or sacremoses write (one line per type), but a valid file: sacremoses merges the
    counts of both lines, and so must the loader when the lines fall in different chunks."""
    path = tmp_path / "model"
    path.write_text("Haus (1/3) haus (2)\nBaum (5/5)\nHAUS (9)\n", encoding="utf-8")
    monkeypatch.setattr(truecase, "MODEL_CHUNK_LINES", 1)
    reference = MosesTruecaser(load_from=str(path)).model
    loaded = load_truecase_model(path, MosesTruecaser())
    assert loaded["best"] == reference["best"] == {"haus": "HAUS", "baum": "Baum"}
    assert loaded["known"] == reference["known"]


def test_apply_equals_truecase_perl(corpus: dict[str, list[str]], model: Path) -> None:
    truecaser = Truecaser(model)
    best, known = perl_load(model)
    changed = 0
    for line in corpus["test"]:
        expected = perl_apply(best, known, line)
        assert truecaser(line) == expected, line
        changed += expected != line
    assert changed > 100  # the test exercises real recasing, not only identity


def test_known_surface_forms_are_kept(tmp_path: Path) -> None:
    """Moses keeps a seen casing ("Apple" the company) even if another one is more frequent."""
    path = tmp_path / "m"
    train_truecaser(["I ate an apple .", "I ate an apple .", "He works at Apple ."], path)
    truecase = Truecaser(path)
    assert truecase("An apple and Apple .") == "an apple and Apple ."
    assert truecase("APPLE") == "apple"  # unknown surface form: most frequent casing


def test_detruecase_capitalises_sentence_starts() -> None:
    undo = Detruecaser()
    assert undo("the man . &quot; he said : ( yes ) ok") == "The man . &quot; He said : ( Yes ) ok"
    assert undo("") == ""
    assert Detruecaser(is_headline=True)("the end of the world") == "The End of the World"


def test_empty_lines_are_kept(model: Path) -> None:
    assert Truecaser(model)("") == ""


def test_missing_and_broken_model(tmp_path: Path) -> None:
    with pytest.raises(MissingResourceError, match="truecase train"):
        Truecaser(tmp_path / "absent")
    broken = tmp_path / "broken"
    broken.write_text("word (3/3) odd\n", encoding="utf-8")
    with pytest.raises(InputError, match="broken"):
        Truecaser(broken)
    broken.write_text("word (3/3)\nother (x/3)\n", encoding="utf-8")
    with pytest.raises(InputError, match="broken:2: count '\\(x/3\\)' is not an integer"):
        Truecaser(broken)
