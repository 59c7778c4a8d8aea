"""The inverse chain and the round-trip exactness report on real test sets."""

from __future__ import annotations

import io

import pytest
from data_sources import RealData
from subword_nmt.apply_bpe import BPE
from subword_nmt.learn_bpe import learn_bpe

from nmtvariants.errors import ConfigError
from nmtvariants.fileio import read_lines
from nmtvariants.text.moses import Tokenizer
from nmtvariants.text.postprocess import (
    InverseChain,
    join_split_apostrophes,
    load_callable,
    remove_bpe,
    repair_detokenized,
)
from nmtvariants.text.roundtrip import classify_mismatch, roundtrip_report


def learned_bpe(lines: list[str], merges: int) -> BPE:
    codes = io.StringIO()
    learn_bpe(io.StringIO("\n".join(lines)), codes, merges)
    codes.seek(0)
    return BPE(codes)


def naive_unbpe(line: str) -> str:
    """Join tokens by hand: a token ending in @@ continues into the next one."""
    words, current = [], ""
    for token in line.split(" "):
        if token.endswith("@@"):
            current += token[:-2]
        else:
            words.append(current + token)
            current = ""
    if current:
        words.append(current)
    return " ".join(words)


def test_remove_bpe_inverts_subword_nmt(real_data: RealData) -> None:
    tokenizer = Tokenizer("de")
    lines = [tokenizer(line) for line in read_lines(real_data.file("multi30k/task1/raw/val.de.gz"))]
    bpe = learned_bpe(lines, 400)
    segmented = [bpe.process_line(line) for line in lines]
    assert sum("@@ " in line for line in segmented) > 500
    for line, seg in zip(lines, segmented, strict=True):
        assert remove_bpe(seg) == line == naive_unbpe(seg)
    assert remove_bpe("Hau@@ s@@") == "Haus"


def test_inverse_chain_order_and_switches() -> None:
    calls = []

    def translit(line: str) -> str:  # plug-in: must see de-BPE'd, still truecased tokens
        calls.append(line)
        return line.replace("dom", "дом")

    chain = InverseChain("ru", truecased=True, translit_reverse=translit)
    assert chain("это do@@ m &quot; 10 : 00 &quot; .") == 'Это дом "10:00".'
    assert calls == ["это dom &quot; 10 : 00 &quot; ."]
    only_bpe = InverseChain("de", truecased=False, detokenize=False)
    assert only_bpe("ein mann@@ es &quot; .") == "ein mannes &quot; ."
    plain = InverseChain("en", bpe=False, truecased=False, repair=False)
    assert plain("he / she at 10 : 00") == "he / she at 10: 00"


def test_repair_joins_slashes_and_clock_times() -> None:
    assert repair_detokenized("Sulzbachweg / Kirchstraße at 10: 30, 2012 / 13") == (
        "Sulzbachweg/Kirchstraße at 10:30, 2012/13"
    )
    assert repair_detokenized("ratio: 3 to 1") == "ratio: 3 to 1"


def test_split_apostrophes_rejoined_outside_english() -> None:
    raw = "Es gibt's, sagt O'Malley: 'Hallo' und Paddy's Bar."
    for lang in ("de", "cs"):
        tokens = Tokenizer(lang)(raw)
        assert "gibt &apos; s" in tokens and "O &apos; Malley" in tokens
        assert join_split_apostrophes(tokens).count("&apos;s") == 2
        assert InverseChain(lang, bpe=False, truecased=False)(tokens) == raw
        # plain Moses cannot tell these apostrophes from quotation marks
        assert InverseChain(lang, bpe=False, truecased=False, repair=False)(tokens) != raw


def test_load_callable() -> None:
    assert load_callable("os.path:basename")("/a/b") == "b"
    with pytest.raises(ConfigError, match="expected"):
        load_callable("nocolon")
    with pytest.raises(ConfigError, match="cannot import"):
        load_callable("no_such_module_xyz:f")


def test_classify_mismatch() -> None:
    assert classify_mismatch("The Town Hall", "The Town hall") == "case"
    assert classify_mismatch("a/b", "a / b") == "spacing"
    assert classify_mismatch("„Ja“", '"Ja"') == "quotes"
    assert classify_mismatch("a – b", "a - b") == "dashes"
    assert classify_mismatch("so…", "so...") == "ellipsis"


ROUNDTRIP_SETS = {
    # name: (path under shared/data, language)
    "newstest2014.en": ("wmt/en-de/newstest2014.en.gz", "en"),
    "newstest2014.de": ("wmt/en-de/newstest2014.de.gz", "de"),
    "multi30k.test2016.en": ("multi30k/task1/raw/test_2016_flickr.en.gz", "en"),
    "multi30k.test2016.de": ("multi30k/task1/raw/test_2016_flickr.de.gz", "de"),
    "multi30k.test2016.fr": ("multi30k/task1/raw/test_2016_flickr.fr.gz", "fr"),
    "multi30k.test2016.cs": ("multi30k/task1/raw/test_2016_flickr.cs.gz", "cs"),
}


# Learning BPE on 3003 news sentences takes ~8 s here: the news sets run with BPE only under -m slow.
ROUNDTRIP_CASES = [
    pytest.param(name, with_bpe, marks=[pytest.mark.slow] if with_bpe and "news" in name else [])
    for name in sorted(ROUNDTRIP_SETS)
    for with_bpe in ((False, True) if "news" in name else (True,))
]


@pytest.mark.parametrize(("name", "with_bpe"), ROUNDTRIP_CASES)
def test_roundtrip_at_least_98_percent(real_data: RealData, name: str, with_bpe: bool) -> None:
    path, lang = ROUNDTRIP_SETS[name]
    lines = list(read_lines(real_data.file(path)))
    bpe = None
    if with_bpe:
        tokenizer = Tokenizer(lang)
        bpe = learned_bpe([tokenizer(line) for line in lines], 300).process_line
    report = roundtrip_report(lines, lang, bpe=bpe)
    assert report["settings"]["bpe"] is with_bpe
    inverse = report["inverse"]
    assert report["lines"] == len(lines)
    assert report["bpe_lines_not_reversible"] == 0
    assert inverse["identical_fraction"] >= 0.98, inverse["classes"]
    assert inverse["identical"] + inverse["mismatches"] == len(lines)
    assert sum(inverse["classes"].values()) == inverse["mismatches"] == sum(inverse["stages"].values())
    # BPE is reversible by construction: no mismatch is attributed to it.
    assert "bpe" not in inverse["stages"]
    # End to end (against the raw line) can only be worse: normalisation is many-to-one.
    assert report["end_to_end"]["identical"] <= inverse["identical"]
    assert report["end_to_end"]["stages"].get("normalize", 0) <= report["normalization_changed_lines"]


def test_roundtrip_normalization_classes_on_german_news(real_data: RealData) -> None:
    lines = list(read_lines(real_data.file("wmt/en-de/newstest2014.de.gz")))[:600]
    report = roundtrip_report(lines, "de")
    end_to_end = report["end_to_end"]
    # German news uses „…“ quotes, which normalisation maps to '"' for good.
    assert end_to_end["classes"]["quotes"] > 20
    example = end_to_end["examples"]["quotes"][0]
    assert "„" in example["reference"] and "„" not in example["output"]
    no_norm = roundtrip_report(lines, "de", normalize=False)
    assert "end_to_end" not in no_norm
    assert no_norm["inverse"]["identical_fraction"] >= 0.97
