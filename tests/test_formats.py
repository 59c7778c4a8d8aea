"""Format readers: SGML/XML test sets on real newstest text, TSV, TMX, ||| and archive members."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

import pytest
from data_sources import RealData

from nmtvariants.corpora.catalogue import Extract
from nmtvariants.corpora.extract import extract_lines, open_members, verify_integrity
from nmtvariants.corpora.formats import decode_entities, read_file, read_stream
from nmtvariants.errors import InputError


def _real_lines(real_data: RealData, path: str) -> list[str]:
    with gzip.open(real_data.file(path), "rt", encoding="utf-8") as handle:
        return handle.read().split("\n")[:-1]


def _sgml(lines: list[str], *, escaped: bool) -> str:
    """WMT-style SGML around ``lines``: documents of 10 segments, one <seg> per line."""
    out = ['<srcset setid="newstest2014" srclang="any">']
    for start in range(0, len(lines), 10):
        out.append(f'<doc sysid="ref" docid="d{start}" genre="news" origlang="en">')
        for number, line in enumerate(lines[start : start + 10], start=start + 1):
            out.append(f'<seg id="{number}">{escape(line) if escaped else line}</seg>')
        out.append("</doc>")
    out.append("</srcset>")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("path", ["wmt/en-de/newstest2014.en.gz", "wmt/en-de/newstest2014.de.gz"])
def test_sgml_reader_on_real_newstest2014_full(tmp_path: Path, real_data: RealData, path: str) -> None:
    lines = _real_lines(real_data, path)
    assert len(lines) == 3003  # published size of the full newstest2014 (sacreBLEU wmt14/full)
    sgm = tmp_path / "newstest2014.sgm"
    sgm.write_text(_sgml(lines, escaped=True), encoding="utf-8")
    assert read_file(sgm, "sgml") == [" ".join(line.split()) for line in lines]


def test_sgml_reader_matches_sacrebleu_extraction(tmp_path: Path, real_data: RealData) -> None:
    from sacrebleu.dataset.fake_sgml import FakeSGMLDataset

    lines = _real_lines(real_data, "wmt/newstest2013/newstest2013.ru.gz")
    sgm = tmp_path / "newstest2013.sgm"
    sgm.write_text(_sgml(lines, escaped=False), encoding="utf-8")  # raw text, as WMT ships it
    reference = tmp_path / "sacrebleu.txt"
    FakeSGMLDataset.__new__(FakeSGMLDataset)._convert_format(str(sgm), str(reference))
    expected = reference.read_text(encoding="utf-8").split("\n")[:-1]
    assert len(expected) == 3000
    assert read_file(sgm, "sgml") == expected


def test_sgml_keeps_empty_segments_and_decodes_entities(tmp_path: Path) -> None:
    sgm = tmp_path / "t.sgm"
    sgm.write_text(
        '<doc docid="a">\n<seg id="1">Standard &amp; Poor&apos;s  rates   AT&T</seg>\n<seg id="2"></seg>\n'
        '<seg id="3"/>\n<seg id="4">caf&#233; &#x4E2D; &lt;b&gt; &copy</seg>\n</doc>\n',
        encoding="utf-8",
    )
    assert read_file(sgm, "sgml") == ["Standard & Poor's rates AT&T", "", "", "café 中 <b> &copy"]
    assert decode_entities("&quot;x&quot; &amp;amp;") == '"x" &amp;'


def test_sgml_errors_name_the_file_and_line(tmp_path: Path) -> None:
    sgm = tmp_path / "cut.sgm"
    sgm.write_text('<doc docid="a">\n<seg id="1">one</seg>\n<seg id="2">tw', encoding="utf-8")
    with pytest.raises(InputError, match=r"cut\.sgm:3: a <seg> element without its closing"):
        read_file(sgm, "sgml")
    not_sgml = tmp_path / "plain.sgm"
    not_sgml.write_text("just text\n", encoding="utf-8")
    with pytest.raises(InputError, match="no <seg> elements"):
        read_file(not_sgml, "sgml")


WMT_XML = """<?xml version="1.0" encoding="utf-8"?>
<dataset id="wmt22"><collection id="general">
<doc id="d1" origlang="en">
<src lang="en"><p><seg id="1">Fish &amp; chips</seg><seg id="2">No reference here.</seg></p>
<p><seg id="3">Third   sentence.</seg></p></src>
<ref lang="de" translator="A"><p><seg id="1">Fisch &amp; Pommes</seg><seg id="2"></seg></p>
<p><seg id="3">Dritter Satz.</seg></p></ref>
</doc></collection></dataset>
"""


def test_wmt_xml_reader(tmp_path: Path) -> None:
    xml = tmp_path / "wmt22.en-de.xml"
    xml.write_text(WMT_XML, encoding="utf-8")
    # sacreBLEU drops segment 2 (no reference) and keeps both sides aligned
    assert read_file(xml, "wmt-xml", field="src") == ["Fish & chips", "Third sentence."]
    assert read_file(xml, "wmt-xml", field="ref") == ["Fisch & Pommes", "Dritter Satz."]
    assert read_file(xml, "wmt-xml", field="docid") == ["d1", "d1"]
    with pytest.raises(InputError, match="field 'ref:B' not in the test set"):
        read_file(xml, "wmt-xml", field="ref:B")
    broken = tmp_path / "broken.xml"
    broken.write_text(WMT_XML[:200], encoding="utf-8")
    with pytest.raises(InputError, match=r"broken\.xml: not a readable WMT XML"):
        read_file(broken, "wmt-xml")


def test_tsv_bars_and_tmx(tmp_path: Path) -> None:
    tsv = tmp_path / "c.tsv"
    tsv.write_text("Hallo\tHello\n\t\nnur eins\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"c\.tsv:3: expected at least 2 tab-separated columns"):
        read_file(tsv, "tsv", column=1)
    assert read_file(tsv, "tsv", column=0) == ["Hallo", "", "nur eins"]
    bars = tmp_path / "t.txt"
    bars.write_text("Москва ||| Moscow\nа ||| b ||| c\n", encoding="utf-8")
    assert read_file(bars, "bars", column=1) == ["Moscow", "b"]
    tmx = tmp_path / "s.tmx"
    tmx.write_text(
        '<?xml version="1.0" encoding="utf-8"?><tmx version="1.4"><header srclang="en"/><body>'
        '<tu><tuv xml:lang="en"><seg>Good &amp; day</seg></tuv>'
        '<tuv xml:lang="tr"><seg>İyi günler</seg></tuv></tu>'
        '<tu><tuv xml:lang="tr"><seg>Yalnız</seg></tuv></tu></body></tmx>',
        encoding="utf-8",
    )
    assert read_file(tmx, "tmx", lang="en") == ["Good & day", ""]
    assert read_file(tmx, "tmx", lang="tr") == ["İyi günler", "Yalnız"]


def test_text_reader_reports_bad_utf8_with_line(tmp_path: Path) -> None:
    bad = tmp_path / "x.de"
    bad.write_bytes(b"gut\n" + "B\xe4r\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"x\.de:2: invalid UTF-8"):
        read_file(bad, "text")
    assert read_file(bad, "latin1") == ["gut", "Bär"]


def test_archive_members_gz_in_tar_zip_and_globs(tmp_path: Path, real_data: RealData) -> None:
    en = (real_data.file("wmt/newstest2013/newstest2013.en.gz")).read_bytes()
    fr = gzip.decompress((real_data.file("wmt/newstest2013/newstest2013.fr.gz")).read_bytes())
    tar_path = tmp_path / "bundle.tar"
    with tarfile.open(tar_path, "w") as archive:
        for name, data in (("dir/giga.en.gz", en), ("dir/part_fr.txt", fr)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    expected_en = gzip.decompress(en).decode("utf-8").split("\n")[:-1]
    assert list(extract_lines(tar_path, Extract("x.en", "bundle.tar", "dir/giga.en.gz"))) == expected_en
    zip_path = tmp_path / "cwmt.zip"
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("casia/a_ch.txt", "一\n二\n")
        archive.writestr("casia/b_cn.txt", "三\n")
        archive.writestr("casia/a_en.txt", "one\ntwo\n")
    assert list(extract_lines(zip_path, Extract("t.zh", "cwmt.zip", "casia/*_c[hn].txt"))) == [
        "一",
        "二",
        "三",
    ]
    with pytest.raises(InputError, match=r"no member matches 'casia/\*_ru.txt'"):
        list(open_members(zip_path, "casia/*_ru.txt"))
    # a pattern without '/' matches base names (the RWTH archive's top folder is not pinned)
    assert [label for label, _ in open_members(tar_path, "part_fr.txt")] == [f"{tar_path}:dir/part_fr.txt"]
    verify_integrity(zip_path)
    data = zip_path.read_bytes()
    corrupt = tmp_path / "corrupt.zip"
    corrupt.write_bytes(data[:40] + bytes(b ^ 0xFF for b in data[40:60]) + data[60:])
    with pytest.raises(InputError, match="corrupt"):
        verify_integrity(corrupt)


def test_read_stream_rejects_unknown_format() -> None:
    with pytest.raises(InputError, match="unknown corpus format 'csv'"):
        read_stream(io.BytesIO(b"a\n"), "f.csv", "csv")
