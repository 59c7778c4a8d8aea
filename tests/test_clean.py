"""clean-corpus-n semantics against a naive transcription of the perl loop, on real + edge-case pairs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from data_sources import RealData

from nmtvariants.errors import InputError
from nmtvariants.fileio import read_lines, write_lines
from nmtvariants.text.clean import CleanSettings, clean_files

PERL_WS = re.compile(r"[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")


def perl_clean(f_lines: list[str], e_lines: list[str], lo: int, hi: int, ratio: float):
    """clean-corpus-n.perl's while loop (no -lc, no -ignore-xml), written out naively."""
    kept_f, kept_e = [], []
    factored = None
    for f, e in zip(f_lines, e_lines, strict=True):
        if factored is None:
            factored = "|" in e or "|" in f
        if not factored:
            e, f = e.replace("|", ""), f.replace("|", "")
        e = PERL_WS.sub(" ", e).removeprefix(" ").removesuffix(" ")
        f = PERL_WS.sub(" ", f).removeprefix(" ").removesuffix(" ")
        if f == "" or e == "":
            continue
        ec, fc = len(e.split(" ")), len(f.split(" "))
        if ec > hi or fc > hi or ec < lo or fc < lo:
            continue
        if ec / fc > ratio or fc / ec > ratio:
            continue
        if re.search(r"[^\s|]{1001}", e) or re.search(r"[^\s|]{1001}", f):
            continue
        kept_f.append(f)
        kept_e.append(e)
    return kept_f, kept_e


EDGE_CASES = [  # (source, target, reason or None)
    ("", "Ein Satz .", "empty"),
    ("A sentence .", "   \t ", "empty"),
    (" ".join(["w"] * 81), " ".join(["w"] * 80), "too_long"),
    (" ".join(["w"] * 80), " ".join(["w"] * 80), None),
    ("one", " ".join(["w"] * 10), "ratio"),
    ("one", " ".join(["w"] * 9), None),
    ("x" * 1001 + " y", "a b", "word_too_long"),
    ("a  |  b\tc", "d\u00a0e", None),  # pipes go, perl whitespace (incl. NBSP) is squeezed
    ("a\x1cb", "c", None),  # U+001C is not perl whitespace: one token
]


@pytest.fixture
def corpus(real_data: RealData, tmp_path: Path) -> tuple[Path, Path, list[str], list[str]]:
    tok = (
        real_data("multi30k/task1/tok/val.lc.norm.tok.en.gz", "multi30k/task1/tok/val.lc.norm.tok.de.gz")
        / "multi30k/task1/tok"
    )
    src = list(read_lines(tok / "val.lc.norm.tok.en.gz"))
    tgt = list(read_lines(tok / "val.lc.norm.tok.de.gz"))
    for index, (s, t, _) in enumerate(EDGE_CASES):
        src.insert(7 * index + 3, s)
        tgt.insert(7 * index + 3, t)
    write_lines(tmp_path / "c.en", src)
    write_lines(tmp_path / "c.de", tgt)
    return tmp_path / "c.en", tmp_path / "c.de", src, tgt


def test_clean_equals_perl_loop(corpus, tmp_path: Path) -> None:
    src_path, tgt_path, src, tgt = corpus
    report = clean_files(
        src_path, tgt_path, tmp_path / "o.en", tmp_path / "o.de", report_path=tmp_path / "r.json"
    )
    expected_src, expected_tgt = perl_clean(src, tgt, 1, 80, 9)
    assert list(read_lines(tmp_path / "o.en")) == expected_src
    assert list(read_lines(tmp_path / "o.de")) == expected_tgt
    # The reasons of the injected cases (the real Multi30k val pairs all pass 1-80, ratio 9).
    expected_drops = {"empty": 2, "too_long": 1, "too_short": 0, "ratio": 1, "word_too_long": 1}
    assert report["dropped"] == expected_drops
    assert report["input_pairs"] == len(src) == 1014 + len(EDGE_CASES)
    assert report["kept"] == len(expected_src) == len(src) - 5
    assert json.loads((tmp_path / "r.json").read_text()) == report
    assert report["examples"]["ratio"] == [7 * 4 + 3 + 1]  # 1-based line number
    assert "a b c" in expected_src and "a\x1cb" in expected_src


def test_min_max_ratio_settings(tmp_path: Path) -> None:
    write_lines(tmp_path / "a", ["a b c", "a", "a b c d e f"])
    write_lines(tmp_path / "b", ["x", "x y", "x"])
    settings = CleanSettings(min_tokens=2, max_tokens=5, ratio=2.5)
    report = clean_files(tmp_path / "a", tmp_path / "b", tmp_path / "oa", tmp_path / "ob", settings)
    assert report["dropped"]["too_short"] == 2 and report["dropped"]["too_long"] == 1
    settings = CleanSettings(min_tokens=1, max_tokens=80, ratio=2.5)
    report = clean_files(tmp_path / "a", tmp_path / "b", tmp_path / "oa", tmp_path / "ob", settings)
    assert report["dropped"]["ratio"] == 2 and report["kept"] == 1
    assert list(read_lines(tmp_path / "oa")) == ["a"]


def test_factored_corpus_keeps_pipes_and_rejects_blank_factors(tmp_path: Path) -> None:
    write_lines(tmp_path / "a", ["a|DT b|NN", "c|NN"])
    write_lines(tmp_path / "b", ["x|DT", "y||NN"])
    with pytest.raises(InputError, match=r"b:2: empty factor"):
        clean_files(tmp_path / "a", tmp_path / "b", tmp_path / "oa", tmp_path / "ob")
    assert not (tmp_path / "oa").exists()  # atomic: nothing half-written


def test_different_line_counts_name_both_files(tmp_path: Path) -> None:
    write_lines(tmp_path / "train.en", ["a", "b", "c"])
    write_lines(tmp_path / "train.de", ["x", "y"])
    with pytest.raises(InputError) as error:
        clean_files(tmp_path / "train.en", tmp_path / "train.de", tmp_path / "o1", tmp_path / "o2")
    message = str(error.value)
    assert "train.en has 3 lines" in message and "train.de has 2 lines" in message


def test_invalid_utf8_names_file_line_and_offset(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"ok\nbad \xe9t\xe9\n")
    (tmp_path / "b").write_bytes(b"ok\nfine\n")
    with pytest.raises(InputError, match=r"a:2: invalid UTF-8 at byte offset 4"):
        clean_files(tmp_path / "a", tmp_path / "b", tmp_path / "o1", tmp_path / "o2")
