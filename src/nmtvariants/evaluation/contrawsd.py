"""ContraWSD: contrastive scoring of word-sense disambiguation (Rios et al. 2017).

A model scores the reference and every contrastive translation of each source; an element counts
as correct only if the reference scores *strictly* better than all its contrastives (ties are
errors). This module is self-contained: it reads the upstream JSON, expands it into the
(source, candidate) lines that the forced-decoding scorer needs, and reproduces upstream
``evaluate.py``'s reports (total, per category ``ambig word:sense``, per frequency bin, CSV), with
its exact bins. See docs/contrawsd-format.md.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, atomic_write, read_lines, write_lines

FREQUENCY_KEYS = (
    "frequency of sense/ambig word in wmt16",  # de-en
    "frequency of sense/ambig word in europarl-v7 and nc11",  # de-fr
)
# Upstream evaluate.py bins of the sense's absolute training frequency: (label, low, high) inclusive.
FREQUENCY_BINS: tuple[tuple[str, int, int], ...] = (
    ("0-20", 0, 20),
    (">20", 21, 50),
    (">50", 51, 100),
    (">100", 101, 200),
    (">200", 201, 500),
    (">500", 501, 1000),
    (">1k", 1001, 2000),
    (">2k", 2001, 5000),
    (">5k", 5001, 10000),
)
TOP_BIN = ">10k"  # everything not in a bin above (upstream's default, i.e. > 10000)


@dataclass(frozen=True)
class Element:
    """One test item: a source, its reference and its contrastive translations."""

    source: str
    reference: str
    contrastives: tuple[str, ...]
    category: str
    abs_freq: int
    total_freq: int


def frequency_bin(abs_freq: int) -> str:
    """Upstream's frequency class of a sense's absolute frequency."""
    for label, low, high in FREQUENCY_BINS:
        if low <= abs_freq <= high:
            return label
    return TOP_BIN


def load_testset(path: PathLike) -> list[Element]:
    """Read a ContraWSD JSON test set; missing keys are reported with the element's index."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: ContraWSD test set not found")
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except json.JSONDecodeError as error:
        raise InputError(f"{path}:{error.lineno}: invalid JSON ({error.msg})") from None
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not UTF-8 (byte {error.start}); re-encode it as UTF-8") from None
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a JSON array of test items, got {type(data).__name__}")
    return [_element(item, index, path) for index, item in enumerate(data)]


def _element(item: Any, index: int, path: Path) -> Element:
    where = f"{path}: element {index}"
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected an object, got {type(item).__name__}")
    try:
        contrastives = tuple(error["contrastive"] for error in item["errors"])
        category = item["ambig word"] + ":" + item["sense"]
        ratio = next(item[key] for key in FREQUENCY_KEYS if key in item)
        abs_text, total_text = str(ratio).split("/")
        abs_freq, total_freq = int(abs_text), int(total_text)
        return Element(item["source"], item["reference"], contrastives, category, abs_freq, total_freq)
    except (KeyError, StopIteration) as error:
        missing = error.args[0] if isinstance(error, KeyError) else "frequency of sense/ambig word in ..."
        raise InputError(f"{where}: missing key {missing!r}; is this a ContraWSD JSON file?") from None
    except (ValueError, TypeError):
        raise InputError(f"{where}: frequency must look like 'ABS/TOTAL' with integers") from None


def expand(elements: Sequence[Element]) -> tuple[list[str], list[str]]:
    """(sources, candidates) in upstream order: per element the reference, then each contrastive."""
    sources: list[str] = []
    candidates: list[str] = []
    for element in elements:
        for candidate in (element.reference, *element.contrastives):
            sources.append(element.source)
            candidates.append(candidate)
    return sources, candidates


def write_expansion(testset: PathLike, source_out: PathLike, candidate_out: PathLike) -> int:
    """Write the expansion as two line-parallel plain-text files; return the number of lines."""
    sources, candidates = expand(load_testset(testset))
    for kind, lines in (("source", sources), ("candidate", candidates)):
        bad = next((i for i, line in enumerate(lines) if "\n" in line or "\r" in line), None)
        if bad is not None:
            raise InputError(f"{testset}: {kind} of expanded line {bad + 1} contains a line break")
    write_lines(source_out, sources)
    return write_lines(candidate_out, candidates)


def read_scores(path: PathLike, expected: int | None = None) -> list[float]:
    """One float per line; an unparsable line or a count mismatch is an InputError."""
    scores: list[float] = []
    for number, line in enumerate(read_lines(path), start=1):
        try:
            scores.append(float(line.split()[0]))
        except (ValueError, IndexError):
            raise InputError(f"{path}:{number}: expected one number per line, got {line!r}") from None
    if expected is not None and len(scores) != expected:
        raise InputError(
            f"{path}: {len(scores)} scores but the test set expands to {expected} (source, candidate) "
            "lines; score the file written by `nmtvariants contrawsd-expand`, in that order"
        )
    return scores


def element_correct(scores: Sequence[float], maximize: bool = False) -> bool:
    """``scores[0]`` is the reference: correct iff strictly better than every contrastive."""
    reference, *contrastives = scores
    if maximize:
        return all(reference > other for other in contrastives)
    return all(reference < other for other in contrastives)


def score_testset(
    elements: Sequence[Element], scores: Sequence[float], maximize: bool = False
) -> dict[str, Any]:
    """Total accuracy, accuracy per category and per frequency bin, and the per-category rows."""
    expected = sum(1 + len(e.contrastives) for e in elements)
    if len(scores) != expected:
        raise InputError(f"contrawsd: {len(scores)} scores for a test set that expands to {expected} lines")
    by_category: dict[str, dict[str, int]] = {}
    by_bin: dict[str, dict[str, int]] = {}
    position = 0
    correct_total = 0
    for element in elements:
        width = 1 + len(element.contrastives)
        correct = element_correct(scores[position : position + width], maximize)
        position += width
        correct_total += correct
        cat = by_category.setdefault(element.category, {"correct": 0, "total": 0})
        cat["correct"] += correct
        cat["total"] += 1
        # upstream keeps the frequency of the *last* element of a category
        cat["abs_freq"], cat["total_freq"] = element.abs_freq, element.total_freq
        freq_bin = by_bin.setdefault(frequency_bin(element.abs_freq), {"correct": 0, "total": 0})
        freq_bin["correct"] += correct
        freq_bin["total"] += 1
    categories = [
        {
            "category": name,
            "abs_freq": stats["abs_freq"],
            "rel_freq": stats["abs_freq"] / stats["total_freq"] if stats["total_freq"] else float("nan"),
            "correct": stats["correct"],
            "total": stats["total"],
            "accuracy": stats["correct"] / stats["total"],
        }
        for name, stats in sorted(by_category.items())
    ]
    bins = [
        {"bin": label, **by_bin[label], "accuracy": by_bin[label]["correct"] / by_bin[label]["total"]}
        for label in [*(b[0] for b in FREQUENCY_BINS), TOP_BIN]
        if label in by_bin
    ]
    return {
        "n_elements": len(elements),
        "n_scores": len(scores),
        "maximize": maximize,
        "correct": correct_total,
        "accuracy": correct_total / len(elements) if elements else float("nan"),
        "by_category": categories,
        "by_frequency": bins,
    }


def categories_csv(result: dict[str, Any]) -> str:
    """The upstream CSV block: ``category,absfrequency,relfrequency,accuracy``.

    Byte-identical to upstream's ``print`` output except that a category containing a comma or a
    double quote is CSV-quoted, so pandas reads every row (upstream would split it into columns).
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["category", "absfrequency", "relfrequency", "accuracy"])
    for row in result["by_category"]:
        writer.writerow([row["category"], row["abs_freq"], row["rel_freq"], row["accuracy"]])
    return buffer.getvalue()


def evaluate_contrawsd(
    testset: PathLike,
    scores_path: PathLike,
    out_json: PathLike | None = None,
    out_csv: PathLike | None = None,
    maximize: bool = False,
) -> dict[str, Any]:
    """Score a ContraWSD test set from a scores file and write the JSON report and the CSV."""
    elements = load_testset(testset)
    scores = read_scores(scores_path, expected=sum(1 + len(e.contrastives) for e in elements))
    result = score_testset(elements, scores, maximize)
    result["testset"] = str(testset)
    result["scores"] = str(scores_path)
    if out_json is not None:
        from nmtvariants.evaluation.results import write_json

        write_json(out_json, result)
    if out_csv is not None:
        with atomic_write(out_csv) as out:
            out.write(categories_csv(result))
    return result
