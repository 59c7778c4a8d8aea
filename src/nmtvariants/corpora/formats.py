"""Readers that turn the formats corpora are shipped in into plain sentences, one per item.

Each reader takes a path (or, for archive members, a binary stream plus the name to report) and yields
``str`` lines without line ends, so that extraction can write every corpus as ``{split}.{lang}``
files. Errors name the file (``archive:member`` for members) and the line, because a corrupt or
misconfigured corpus is only fixable when the user can find the bad spot.

Formats:
- plain text (optionally gzip-compressed), one sentence per line; Latin-1 text; the
  ``<s snum=..> tokens </s>`` lines of the NAACL 2003 alignment test data;
- WMT "fake SGML" test sets (``<seg id=..>text</seg>``, one per line, before 2021): empty segments
  stay empty lines, XML entities are decoded, whitespace is stripped and collapsed as sacreBLEU does;
- WMT XML test sets (2021 on): parsed by sacreBLEU's own reader;
- TSV corpora (one column per language), `` ||| ``-separated bitexts (WMT wiki headlines,
  Cross-Align gold sentences) and TMX (OPUS SETIMES2).
"""

from __future__ import annotations

import gzip
import io
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from nmtvariants.errors import InputError
from nmtvariants.fileio import decode_lines

_SEG = re.compile(r"<seg\b[^>]*>(.*?)</seg>", re.IGNORECASE)
_SEG_EMPTY = re.compile(r"<seg\b[^>]*/>", re.IGNORECASE)
_ENTITY = re.compile(r"&(amp|lt|gt|quot|apos|#[0-9]+|#[xX][0-9a-fA-F]+);")
_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
_SPACE = re.compile(r"\s+")

FORMATS = ("text", "latin1", "snum", "sgml", "wmt-xml", "tsv", "bars", "tmx")
_SNUM = re.compile(r"^<s snum=[^>]*>(.*?)</s>\s*$")


def decode_entities(text: str) -> str:
    """Decode the five XML entities and numeric character references; leave a bare ``&`` alone.

    WMT's SGML is not real SGML: most ampersands in it are raw text, so only well-formed references
    are decoded (a general HTML unescape would also rewrite text such as ``&copy`` without ``;``).
    """

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name.startswith(("#x", "#X")):
            return chr(int(name[2:], 16))
        if name.startswith("#"):
            return chr(int(name[1:]))
        return _NAMED[name]

    return _ENTITY.sub(replace, text)


def _clean(text: str) -> str:
    """Strip and collapse whitespace, as sacreBLEU does when it extracts a test set."""
    return _SPACE.sub(" ", text.strip())


def _lines(stream: IO[bytes], name: str) -> Iterator[tuple[int, str]]:
    yield from enumerate(decode_lines(stream, name), start=1)


def maybe_gunzip(stream: IO[bytes], name: str) -> IO[bytes]:
    """Wrap ``stream`` in a gzip reader when ``name`` ends in ``.gz``."""
    return gzip.GzipFile(fileobj=stream, mode="rb") if name.endswith(".gz") else stream


def read_text(stream: IO[bytes], name: str) -> Iterator[str]:
    """Plain UTF-8 text, one sentence per line (empty lines kept in place)."""
    for _, line in _lines(stream, name):
        yield line


def read_latin1(stream: IO[bytes]) -> Iterator[str]:
    """Latin-1 text (the RWTH gold alignment sentences are distributed that way)."""
    for raw in stream:
        yield raw.rstrip(b"\n").rstrip(b"\r").decode("latin-1")


def read_snum(stream: IO[bytes], name: str) -> Iterator[str]:
    """Sentences of the NAACL 2003 alignment test data: ``<s snum=0001> tokens </s>`` per line."""
    for number, line in _lines(stream, name):
        match = _SNUM.match(line)
        if match is None:
            raise InputError(f"{name}:{number}: expected '<s snum=NNNN> tokens </s>', found {line[:60]!r}")
        yield match.group(1).strip()


def read_sgml(stream: IO[bytes], name: str) -> Iterator[str]:
    """Segments of a WMT SGML test set in file order, entities decoded, empty segments kept."""
    found = False
    for number, line in _lines(stream, name):
        stripped = line.lstrip()
        if not stripped.lower().startswith("<seg"):
            continue
        match = _SEG.search(stripped)
        if match is None:
            if _SEG_EMPTY.match(stripped):
                found = True
                yield ""
                continue
            raise InputError(
                f"{name}:{number}: a <seg> element without its closing </seg> on the same line; "
                "WMT SGML test sets hold one segment per line - check that the file is not truncated"
            )
        found = True
        yield _clean(decode_entities(match.group(1)))
    if not found:
        raise InputError(f"{name}: no <seg> elements found; is this really a WMT .sgm test set?")


def read_wmt_xml(stream: IO[bytes], name: str, field: str) -> Iterator[str]:
    """One field (``src``, ``ref``, ``ref:TRANSLATOR``, ``docid``, ...) of a WMT21+ XML test set.

    Parsing and the segment selection (segments without any reference are dropped, missing
    references become empty lines) are sacreBLEU's, so references match ``sacrebleu -t``.
    """
    from sacrebleu.dataset.wmt_xml import WMTXMLDataset

    data = stream.read()
    try:
        fields = WMTXMLDataset._unwrap_wmt21_or_later(io.BytesIO(data))
    except Exception as error:  # lxml raises its own XMLSyntaxError; sacreBLEU asserts on layout
        raise InputError(f"{name}: not a readable WMT XML test set ({error})") from None
    references = sorted(key for key in fields if key.startswith("ref:"))
    if field == "ref" and "ref" not in fields and len(references) == 1:
        field = references[0]  # one translator: "ref" means that translator's reference
    if field not in fields:
        raise InputError(f"{name}: field {field!r} not in the test set; available: {sorted(fields)}")
    for value in fields[field]:
        yield _clean(value or "")


def read_tsv(stream: IO[bytes], name: str, column: int) -> Iterator[str]:
    """Column ``column`` (0-based) of a tab-separated corpus; a short row is an error."""
    for number, line in _lines(stream, name):
        cells = line.split("\t")
        if column >= len(cells):
            raise InputError(
                f"{name}:{number}: expected at least {column + 1} tab-separated columns, found "
                f"{len(cells)}; check the corpus format in the catalogue"
            )
        yield cells[column]


def read_bars(stream: IO[bytes], name: str, column: int) -> Iterator[str]:
    """Column ``column`` of a `` ||| ``-separated bitext (whitespace around the bars stripped)."""
    for number, line in _lines(stream, name):
        cells = line.split("|||")
        if column >= len(cells):
            raise InputError(
                f"{name}:{number}: expected {column + 1} or more '|||'-separated fields, found {len(cells)}"
            )
        yield cells[column].strip()


_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


def read_tmx(stream: IO[bytes], name: str, lang: str) -> Iterator[str]:
    """The ``lang`` side of every translation unit of a TMX file, in file order.

    Units without a segment in ``lang`` yield an empty line so that both sides stay parallel.
    """
    try:
        for _, element in ElementTree.iterparse(stream, events=("end",)):
            if element.tag != "tu":
                continue
            text = ""
            for tuv in element.iter("tuv"):
                tuv_lang = (tuv.get(_XML_LANG) or tuv.get("lang") or "").lower()
                if tuv_lang.split("-")[0] == lang:
                    seg = tuv.find("seg")
                    text = "".join(seg.itertext()) if seg is not None else ""
                    break
            yield _clean(text)
            element.clear()
    except ElementTree.ParseError as error:
        line = error.position[0] if hasattr(error, "position") else "?"
        raise InputError(f"{name}:{line}: TMX parse error ({error}); the file may be truncated") from None


def read_stream(
    stream: IO[bytes], name: str, fmt: str, *, column: int = 0, field: str = "src", lang: str = ""
) -> Iterator[str]:
    """Dispatch to the reader for ``fmt`` (one of :data:`FORMATS`); ``.gz`` streams are unpacked."""
    stream = maybe_gunzip(stream, name)
    if fmt == "text":
        return read_text(stream, name)
    if fmt == "latin1":
        return read_latin1(stream)
    if fmt == "snum":
        return read_snum(stream, name)
    if fmt == "sgml":
        return read_sgml(stream, name)
    if fmt == "wmt-xml":
        return read_wmt_xml(stream, name, field)
    if fmt == "tsv":
        return read_tsv(stream, name, column)
    if fmt == "bars":
        return read_bars(stream, name, column)
    if fmt == "tmx":
        return read_tmx(stream, name, lang)
    raise InputError(f"{name}: unknown corpus format {fmt!r}; expected one of {', '.join(FORMATS)}")


def read_file(path: str | Path, fmt: str = "text", **options: object) -> list[str]:
    """Read a whole file with the reader for ``fmt`` (convenience for tests and small files)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: file not found")
    with open(path, "rb") as handle:
        return list(read_stream(handle, str(path), fmt, **options))  # type: ignore[arg-type]
