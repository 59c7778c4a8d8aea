"""ContraWSD: the contrastive JSON layout, its expansion into scored pairs, and the WMT18 suite files.

The upstream scorer reads one score per line for the list made by expanding every element into
``(source, reference)`` followed by ``(source, contrastive)`` for each of its errors, in file order
(see ``docs/contrawsd-format.md``). :func:`expand_pairs` produces exactly that order and
:func:`group_sizes` says how many consecutive scores belong to each element, so the evaluation can
cut the score list back into elements without re-reading the JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from nmtvariants.errors import InputError
from nmtvariants.fileio import read_lines, write_lines

_FREQUENCY_PREFIX = "frequency of sense/ambig word"


@dataclass(frozen=True)
class ContraWSDItem:
    source: str
    reference: str
    contrastives: tuple[str, ...]
    ambiguous_word: str
    sense: str
    original_translation: str
    sense_frequency: int | None  # ABS of the "ABS/TOTAL" frequency field
    word_frequency: int | None  # TOTAL
    origin: str | None

    @property
    def category(self) -> str:
        """``ambig word:sense``, the per-sense grouping of the upstream report."""
        return f"{self.ambiguous_word}:{self.sense}"


def _frequency(element: dict, where: str) -> tuple[int | None, int | None]:
    for key, value in element.items():
        if key.startswith(_FREQUENCY_PREFIX):
            try:
                absolute, total = str(value).split("/")
                return int(absolute), int(total)
            except ValueError:
                raise InputError(f"{where}: {key!r} must be 'ABS/TOTAL', found {value!r}") from None
    return None, None


def read_contrawsd_json(path: str | Path) -> list[ContraWSDItem]:
    """Parse a ContraWSD ``*.final.json`` file (one JSON array of elements)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: file not found")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise InputError(f"{path}:{error.lineno}: invalid JSON ({error.msg})") from None
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: invalid UTF-8 at byte {error.start}; re-encode the file") from None
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a JSON array of test elements, found {type(data).__name__}")
    items = []
    for index, element in enumerate(data):
        where = f"{path}: element {index}"
        if not isinstance(element, dict):
            raise InputError(f"{where}: expected an object")
        missing = [key for key in ("source", "reference", "errors") if key not in element]
        if missing:
            raise InputError(f"{where}: missing key(s) {missing}; is this a ContraWSD file?")
        errors = element["errors"]
        if not isinstance(errors, list) or not all(
            isinstance(e, dict) and "contrastive" in e for e in errors
        ):
            raise InputError(f"{where}: 'errors' must be a list of objects with a 'contrastive' key")
        sense_frequency, word_frequency = _frequency(element, where)
        items.append(
            ContraWSDItem(
                source=element["source"],
                reference=element["reference"],
                contrastives=tuple(e["contrastive"] for e in errors),
                ambiguous_word=element.get("ambig word", ""),
                sense=element.get("sense", ""),
                original_translation=element.get("original translation", ""),
                sense_frequency=sense_frequency,
                word_frequency=word_frequency,
                origin=element.get("origin"),
            )
        )
    return items


def expand_pairs(items: Iterable[ContraWSDItem]) -> Iterator[tuple[str, str]]:
    """``(source, reference)`` then ``(source, contrastive)`` per error, element by element."""
    for item in items:
        yield item.source, item.reference
        for contrastive in item.contrastives:
            yield item.source, contrastive


def group_sizes(items: Iterable[ContraWSDItem]) -> list[int]:
    """Number of consecutive expanded pairs per element (1 + its contrastives)."""
    return [1 + len(item.contrastives) for item in items]


def write_expanded(json_path: str | Path, src_out: str | Path, tgt_out: str | Path) -> int:
    """Write the expanded pairs as two parallel files; return the number of pairs."""
    items = read_contrawsd_json(json_path)
    for item_index, item in enumerate(items):
        for text in (item.source, item.reference, *item.contrastives):
            if "\n" in text:
                raise InputError(
                    f"{json_path}: element {item_index} contains a newline inside a sentence; "
                    "one-sentence-per-line output would misalign"
                )
    pairs = list(expand_pairs(items))
    write_lines(src_out, (source for source, _ in pairs))
    write_lines(tgt_out, (target for _, target in pairs))
    return len(pairs)


@dataclass(frozen=True)
class SuiteLine:
    origin: str  # corpus the sentence came from, e.g. doc_newstest2012.de-en
    source: str
    reference: str
    reference_detok: str


def read_wmt18_suite(folder: str | Path) -> list[SuiteLine]:
    """The WMT18 ContraWSD test-suite text files (``de-en.wsd.task.*``, plain or ``.gz``).

    Checks that the four files are parallel and that the doc-id file's German column equals the
    source file line by line, since scoring would otherwise credit the wrong sentence.
    """
    folder = Path(folder)

    def find(stem: str) -> Path:
        for candidate in (folder / stem, folder / f"{stem}.gz"):
            if candidate.exists():
                return candidate
        raise InputError(f"{folder}: {stem}(.gz) not found; download `contrawsd_wmt18` first")

    sources = list(read_lines(find("de-en.wsd.task.de")))
    references = list(read_lines(find("de-en.wsd.task.en")))
    detok = list(read_lines(find("de-en.wsd.task.en.detok")))
    doc_path = find("de-en.wsd.task.doc_ids.de")
    docs = [line.split("\t", 1) for line in read_lines(doc_path)]
    if not len(sources) == len(references) == len(detok) == len(docs):
        raise InputError(
            f"{folder}: test-suite files are not parallel ({len(sources)} de, {len(references)} en, "
            f"{len(detok)} en.detok, {len(docs)} doc_ids lines)"
        )
    lines = []
    for number, (source, reference, reference_detok, doc) in enumerate(
        zip(sources, references, detok, docs, strict=True), start=1
    ):
        if len(doc) != 2 or doc[1] != source:
            raise InputError(f"{doc_path}:{number}: the German column does not match de-en.wsd.task.de")
        lines.append(SuiteLine(doc[0], source, reference, reference_detok))
    return lines
