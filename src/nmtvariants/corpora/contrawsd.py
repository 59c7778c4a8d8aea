"""The ContraWSD WMT18 test-suite text files (the contrastive JSON layout is read and scored by
:mod:`nmtvariants.evaluation.contrawsd`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nmtvariants.errors import InputError
from nmtvariants.fileio import read_lines


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
