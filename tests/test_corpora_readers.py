"""Multi30k extraction, ContraWSD, gold alignments and the Europarl pivot intersection."""

from __future__ import annotations

from pathlib import Path

import pytest
from data_sources import RealData

from nmtvariants.cli import main
from nmtvariants.corpora import multi30k
from nmtvariants.corpora.alignments import (
    out_of_range,
    read_alignments,
    read_bar_bitext,
    read_snum_sentences,
    read_wpt,
)
from nmtvariants.corpora.contrawsd import read_wmt18_suite
from nmtvariants.corpora.download import download_corpus
from nmtvariants.corpora.europarl import intersect_files, pivot_intersection
from nmtvariants.errors import InputError
from nmtvariants.fileio import read_lines

HANSARDS = "alignments/en-fr-hansards-naacl2003"
HANSARDS_FILES = [
    f"{HANSARDS}/{name}"
    for name in (
        "test.e",
        "test.f",
        "test.align",
        "trial.align",
        "crossalign.enfr.talp",
        "crossalign.test.en-fr",
    )
]


def test_multi30k_extraction_line_counts(tmp_path: Path, real_data: RealData) -> None:
    download_corpus("multi30k", tmp_path, mirror=str(real_data.corpus("multi30k")))
    published = {
        "train": 29000,
        "valid": 1014,
        "test_2016_flickr": 1000,
        "test_2017_flickr": 1000,
        "test_2017_mscoco": 461,
        "test_2018_flickr": 1071,
    }
    for split, lines in published.items():
        for lang in ("en", "de", "fr", "cs", "images"):
            path = tmp_path / f"{split}.{lang}"
            if lang == "cs" and split in ("test_2017_flickr", "test_2017_mscoco"):
                assert not path.exists()  # no Czech upstream for these
                continue
            assert len(path.read_bytes().split(b"\n")) - 1 == lines, path
    first_images = (tmp_path / "test_2016_flickr.images").read_text(encoding="utf-8").split("\n")[:2]
    assert (
        first_images
        == (real_data.file("multi30k/task1/image_splits/test_2016_flickr.txt"))
        .read_text(encoding="utf-8")
        .split("\n")[:2]
    )
    assert all(name.endswith(".jpg") for name in first_images)


CONTRAWSD = [
    {
        "source": "Die Schlange ist lang.",
        "reference": "The queue is long.",
        "errors": [{"contrastive": "The snake is long."}, {"contrastive": "The serpent is long."}],
        "ambig word": "Schlange",
        "sense": "queue|line",
        "original translation": "queue",
        "frequency of sense/ambig word in wmt16": "120/900",
    },
    {
        "source": "Er sitzt auf der Bank.",
        "reference": "He sits on the bench.",
        "errors": [{"contrastive": "He sits on the bank."}],
        "ambig word": "Bank",
        "sense": "bench",
        "original translation": "bench",
        "frequency of sense/ambig word in europarl-v7 and nc11": "15/3000",
        "origin": "newstest2012",
    },
]


def test_wmt18_suite_reader_on_real_files(real_data: RealData) -> None:
    lines = read_wmt18_suite(
        real_data(
            *(
                f"contrawsd/testsuite_wmt18/de-en.wsd.task.{name}.gz"
                for name in ("de", "en", "en.detok", "doc_ids.de")
            )
        )
        / "contrawsd/testsuite_wmt18"
    )
    assert len(lines) == 3249
    origins = {line.origin for line in lines}
    assert "doc_Books.de-en" in origins and "doc_EUbookshop.de-en" in origins
    differing = sum(line.reference != line.reference_detok for line in lines)
    assert differing == 695  # README: the detokenized references differ on 695 lines


def test_hansards_gold_counts_and_formats_agree(real_data: RealData) -> None:
    folder = real_data(*HANSARDS_FILES) / HANSARDS
    naacl = read_alignments(folder / "test.align", "berkeley")  # (French, English), 0-based
    talp = read_alignments(
        folder / "crossalign.enfr.talp", "talp", one_based=True, reverse=True
    )  # (English, French) -> swap
    assert len(naacl) == len(talp) == 447
    assert naacl == talp
    sure = sum(len(gold.sure) for gold in naacl)
    possible = sum(len(gold.possible) for gold in naacl)
    assert (sure, possible - sure, possible) == (4038, 13400, 17438)  # the published S / P counts
    french, english = read_snum_sentences(folder / "test.f"), read_snum_sentences(folder / "test.e")
    assert out_of_range(naacl, map(len, french), map(len, english)) == []
    pairs = read_bar_bitext(folder / "crossalign.test.en-fr")
    assert [len(e) for e, _ in pairs] == [len(e) for e in english]
    assert len(read_alignments(folder / "trial.align", "berkeley")) == 37


def test_wpt_answer_format_equals_naacl_links(tmp_path: Path, real_data: RealData) -> None:
    naacl = read_alignments(real_data.file(f"{HANSARDS}/test.align"), "berkeley")[:20]
    lines = []
    for snum, gold in enumerate(naacl, start=1):  # write the 2003 answer format by hand: 1-based, e first
        for f, e in sorted(gold.possible):
            lines.append(f"{snum:04d} {e + 1} {f + 1} {'S' if (f, e) in gold.sure else 'P'}")
        lines.append(f"{snum:04d} 0 1 S")  # a NULL link, dropped
    answers = tmp_path / "test.wa.nonullalign"
    answers.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert read_wpt(answers, reverse=True) == naacl


def test_wpt_numbering_padding_and_errors(tmp_path: Path) -> None:
    """Sentence numbers fix the position: a link-less sentence 1 or trailing sentences stay in place."""
    answers = tmp_path / "test.wa"
    answers.write_text("0002 1 2 S\n0002 3 1 p\n0002 0 4 S\n0003 2 2\n", encoding="utf-8")
    expected = [set(), {(0, 1)}, {(1, 1)}]  # sure links by hand, 1-based -> 0-based, NULL dropped
    gold = read_wpt(answers)
    assert [set(g.sure) for g in gold] == expected
    assert gold[1].possible == {(0, 1), (2, 0)}
    assert read_alignments(answers, "hansards", n_sentences=5) == [*gold, gold[0], gold[0]]
    assert read_wpt(answers, first_id=2) == gold[1:]
    with pytest.raises(InputError, match=r"test.wa:4: sentence number 3 outside 1..2"):
        read_wpt(answers, 2)
    (tmp_path / "empty.wa").write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="no alignment lines found"):
        read_wpt(tmp_path / "empty.wa")
    (tmp_path / "bad.wa").write_text("0001 -1 2 S\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.wa:1: expected 'SNUM i j"):
        read_wpt(tmp_path / "bad.wa")


def test_kftt_gold_out_of_range_links_as_documented(real_data: RealData) -> None:
    folder = (
        real_data("alignments/ja-en-kftt/jaen.talp", "alignments/ja-en-kftt/test.ja-en")
        / "alignments/ja-en-kftt"
    )
    gold = read_alignments(folder / "jaen.talp", "talp", one_based=False)
    pairs = read_bar_bitext(folder / "test.ja-en")
    assert len(gold) == len(pairs) == 582
    assert sum(len(g.sure) for g in gold) == 13562 and all(g.sure == g.possible for g in gold)
    bad = out_of_range(gold, (len(ja) for ja, _ in pairs), (len(en) for _, en in pairs))
    assert len(bad) == 6 and {index for index, _ in bad} == {350, 353, 354, 355}  # README §4b caveat
    with pytest.raises(InputError, match="has index 0 but the file is read as 1-based"):
        read_alignments(folder / "jaen.talp", "talp", one_based=True)


BITEXTS = {
    "es": (
        ["Hola .", "Gracias", "", "Sí", "Otra", "Adiós", "Sí"],
        ["Hello .", "Thanks", "Empty", "Yes", "Other", "Bye", "Yes"],
    ),
    "fr": (
        ["Merci", "Bonjour  .", "Oui", "Au revoir", "Autre", "Ouais"],
        ["Thanks", " Hello . ", "Yes", "Bye", "Other only here?", "Yes"],
    ),
    "de": (
        ["Tschüss", "Hallo .", "Danke", "Ja", "Leer", "Anders"],
        ["Bye", "Hello .", "Thanks", "Yes", "Empty", "Other"],
    ),
}


def _naive(bitexts: dict[str, tuple[list[str], list[str]]]) -> list[dict[str, str]]:
    """Quadratic reference: scan every bitext for every English sentence of the first one."""
    norm = " ".join
    first = next(iter(bitexts))
    result, seen = [], set()
    for english in bitexts[first][1]:
        key = norm(english.split())
        if not key or key in seen:
            continue
        seen.add(key)
        row = {"en": key}
        for lang, (foreign, eng) in bitexts.items():
            matches = {
                norm(f.split())
                for f, e in zip(foreign, eng, strict=True)
                if norm(e.split()) == key and f.strip()
            }
            if len(matches) != 1:
                break
            row[lang] = matches.pop()
        else:
            result.append(row)
    return result


def test_europarl_pivot_intersection_against_naive_loop(tmp_path: Path) -> None:
    tuples = pivot_intersection(BITEXTS)
    assert tuples == _naive(BITEXTS)
    # "Yes" is ambiguous in fr (Oui/Ouais), "Empty" has an empty es side, "Other" differs in fr
    assert [row["en"] for row in tuples] == ["Hello .", "Thanks", "Bye"]
    assert tuples[0] == {"es": "Hola .", "fr": "Bonjour .", "de": "Hallo .", "en": "Hello ."}
    files = {}
    for lang, (foreign, english) in BITEXTS.items():
        (tmp_path / f"{lang}.{lang}").write_text("\n".join(foreign) + "\n", encoding="utf-8")
        (tmp_path / f"{lang}.en").write_text("\n".join(english) + "\n", encoding="utf-8")
        files[lang] = (tmp_path / f"{lang}.{lang}", tmp_path / f"{lang}.en")
    sizes = intersect_files(files, tmp_path / "out", valid=1, test=1, seed=3)
    assert sizes == {"train": 1, "valid": 1, "test": 1}
    rows = {}
    for split in ("train", "valid", "test"):
        rows[split] = {
            lang: list(read_lines(tmp_path / "out" / f"{split}.{lang}")) for lang in ("es", "fr", "de", "en")
        }
    assert sorted(r["en"][0] for r in rows.values()) == sorted(["Hello .", "Thanks", "Bye"])
    for split_rows in rows.values():  # tuples stay aligned across languages
        assert {t["en"]: t for t in tuples}[split_rows["en"][0]]["de"] == split_rows["de"][0]
    cli_out = tmp_path / "cli"
    args = ["europarl-intersect", "--out-dir", str(cli_out), "--valid", "1", "--test", "1", "--seed", "3"]
    for lang, (foreign, english) in files.items():
        args += ["--bitext", lang, str(foreign), str(english)]
    assert main(args) == 0
    assert (cli_out / "test.en").read_text(encoding="utf-8") == (tmp_path / "out" / "test.en").read_text(
        encoding="utf-8"
    )


def test_europarl_rejects_unaligned_bitext() -> None:
    with pytest.raises(InputError, match="es-en bitext: the two sides have different numbers of lines"):
        pivot_intersection({"es": (["a", "b"], ["a"])})


def test_multi30k_parallel_check_catches_a_short_file(tmp_path: Path) -> None:
    (tmp_path / "valid.en").write_text("a\nb\n", encoding="utf-8")
    (tmp_path / "valid.de").write_text("a\n", encoding="utf-8")
    with pytest.raises(InputError, match="split 'valid' is not parallel"):
        multi30k.check_parallel(tmp_path)
