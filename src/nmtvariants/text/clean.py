"""Moses ``clean-corpus-n.perl`` for parallel training data, with a per-reason drop report.

Semantics follow the perl script line by line (for training data only; dev/test sets are never
cleaned, so their line count is preserved):

1. If the first line pair contains ``|`` the corpus is "factored" and pipes are kept; otherwise every
   ``|`` is deleted from both sides (Moses escapes ``|`` as ``&#124;``, so tokenised text has none).
2. Optional lower-casing (``-lc``).
3. Runs of whitespace become one space; leading and trailing space is removed. Whitespace is perl's
   Unicode ``\\s`` (Python's ``\\s`` would also match the separators U+001C..U+001F).
4. A pair is dropped, for the first reason that applies, in the perl order: an empty side; a side
   with more than ``max`` tokens; a side with fewer than ``min``; a token-count ratio above
   ``ratio`` either way; a word longer than ``max_word_length`` characters (pipes do not count).
   Tokens are single-space separated fields (with ``ignore_xml``, XML tags are not counted).
5. The kept lines are written in their whitespace-normalised form, as perl writes them.

Beyond perl: the 1-based input line numbers of the kept pairs are written to a ``.kept`` file beside
the cleaned source (one number a line), so that anything line-parallel with the uncleaned corpus
(gold parses, image ids and features, further sources) can follow the cleaning:
:func:`select_lines` picks those lines from such a file.

A factored line with an empty factor (perl dies) raises `InputError`. The one place where we do not die
as perl does: with ``ignore_xml`` and ``min 0`` a side made only of tags has 0 tokens and perl divides
by zero; we drop such a pair as "empty".
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, atomic_write, count_lines, read_lines

# perl's \s on character strings (perl >= 5.18): ASCII whitespace incl. \v plus Unicode White_Space.
PERL_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_SPACE_RUN = re.compile(f"[{PERL_SPACE}]+")
_XML_TAG = re.compile(r"<\S[^>]*\S>")
_BLANK_FACTOR = re.compile(r"[ |]\|")

REASONS = ("empty", "too_long", "too_short", "ratio", "word_too_long")


@dataclass(frozen=True)
class CleanSettings:
    """The arguments of ``clean-corpus-n.perl [-ratio R] [-lc] [-ignore-xml] ... MIN MAX``."""

    min_tokens: int = 1
    max_tokens: int = 80
    ratio: float = 9.0
    ignore_ratio: bool = False
    ignore_xml: bool = False
    lowercase: bool = False
    max_word_length: int = 1000


@dataclass
class CleanReport:
    """How many pairs came in, how many were kept, and why the others were dropped."""

    settings: CleanSettings
    input_pairs: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    # The first few dropped (1-based) line numbers per reason, to make a report checkable by eye.
    examples: dict[str, list[int]] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "settings": self.settings.__dict__,
            "input_pairs": self.input_pairs,
            "kept": self.kept,
            "dropped_total": sum(self.dropped.values()),
            "dropped": {reason: self.dropped.get(reason, 0) for reason in REASONS},
            "examples": self.examples,
        }


def _squeeze(line: str, strip_pipes: bool, lowercase: bool) -> str:
    if lowercase:
        line = line.lower()
    if strip_pipes:
        line = line.replace("|", "")
    line = _SPACE_RUN.sub(" ", line)
    # perl removes exactly one leading and one trailing space; after squeezing there is at most one.
    if line.startswith(" "):
        line = line[1:]
    if line.endswith(" "):
        line = line[:-1]
    return line


def _word_count(line: str, ignore_xml: bool) -> int:
    if ignore_xml:
        line = _squeeze(_XML_TAG.sub(" ", line), strip_pipes=False, lowercase=False)
        if not line:
            # perl's split on an empty string gives no fields.
            return 0
    return line.count(" ") + 1


def drop_reason(src: str, tgt: str, settings: CleanSettings) -> str | None:
    """The reason ``clean-corpus-n.perl`` drops this (already squeezed) pair, or None to keep it."""
    if not src or not tgt:
        return "empty"
    src_count = _word_count(src, settings.ignore_xml)
    tgt_count = _word_count(tgt, settings.ignore_xml)
    if src_count > settings.max_tokens or tgt_count > settings.max_tokens:
        return "too_long"
    if src_count < settings.min_tokens or tgt_count < settings.min_tokens:
        return "too_short"
    if src_count == 0 or tgt_count == 0:
        # Only reachable with ignore_xml and min 0 (a line of nothing but tags): perl divides by zero
        # and dies here; we drop the pair as empty instead.
        return "empty"
    if not settings.ignore_ratio and (
        tgt_count / src_count > settings.ratio or src_count / tgt_count > settings.ratio
    ):
        return "ratio"
    too_long_word = re.compile(rf"[^{PERL_SPACE}|]{{{settings.max_word_length + 1}}}")
    if too_long_word.search(src) or too_long_word.search(tgt):
        return "word_too_long"
    return None


def clean_pairs(
    pairs: Iterable[tuple[str, str]],
    settings: CleanSettings | None = None,
    report: CleanReport | None = None,
    *,
    names: tuple[str, str] = ("source", "target"),
    max_examples: int = 5,
) -> Iterator[tuple[str, str]]:
    """Yield the kept (squeezed) pairs; count inputs, kept pairs and drop reasons in ``report``."""
    settings = settings or CleanSettings()
    report = report if report is not None else CleanReport(settings)
    strip_pipes = True
    for number, (src, tgt) in enumerate(pairs, start=1):
        if number == 1:
            strip_pipes = "|" not in src and "|" not in tgt
        report.input_pairs += 1
        src = _squeeze(src, strip_pipes, settings.lowercase)
        tgt = _squeeze(tgt, strip_pipes, settings.lowercase)
        reason = drop_reason(src, tgt, settings)
        if reason is not None:
            report.dropped[reason] += 1
            examples = report.examples.setdefault(reason, [])
            if len(examples) < max_examples:
                examples.append(number)
            continue
        for name, side in zip(names, (src, tgt), strict=True):
            if _BLANK_FACTOR.search(side):
                raise InputError(
                    f"{name}:{number}: empty factor (`||` or ` |`) in a factored corpus; "
                    f"fix or remove the line: {side[:80]!r}"
                )
        report.kept += 1
        yield src, tgt


def check_parallel(src_path: PathLike, tgt_path: PathLike) -> int:
    """Return the common line count of two parallel files, or raise naming both files and counts."""
    src_count, tgt_count = count_lines(src_path), count_lines(tgt_path)
    if src_count != tgt_count:
        raise InputError(
            f"parallel files differ in length: {src_path} has {src_count} lines, "
            f"{tgt_path} has {tgt_count} lines; both sides must have one sentence per line"
        )
    return src_count


def kept_lines_path(src_out: PathLike) -> Path:
    """Where :func:`clean_files` writes the kept line numbers by default: ``<cleaned source>.kept``."""
    return Path(f"{src_out}.kept")


def select_lines(path: PathLike, kept: Iterable[int]) -> list[str]:
    """The lines of ``path`` at the 1-based numbers ``kept`` (increasing, as a ``.kept`` file lists them).

    A number past the end of ``path`` is an InputError naming both: the file does not follow the
    corpus that was cleaned.
    """
    wanted = list(kept)
    out: list[str] = []
    lines = read_lines(path)
    position = 0
    for number in wanted:
        if number <= position:
            raise InputError(f"kept line numbers must increase; got {number} after {position}")
        line = None
        while position < number:
            line = next(lines, None)
            if line is None:
                raise InputError(
                    f"{path}: has {position} lines, but line {number} was kept; the file must be "
                    "line-parallel with the uncleaned corpus"
                )
            position += 1
        out.append(line)
    return out


def read_kept(path: PathLike) -> list[int]:
    """The 1-based line numbers of a ``.kept`` file."""
    numbers = []
    for index, line in enumerate(read_lines(path), start=1):
        if not line.isdigit():
            raise InputError(f"{path}:{index}: expected a line number, got {line!r}")
        numbers.append(int(line))
    return numbers


def clean_files(
    src_in: PathLike,
    tgt_in: PathLike,
    src_out: PathLike,
    tgt_out: PathLike,
    settings: CleanSettings | None = None,
    report_path: PathLike | None = None,
    kept_path: PathLike | None = None,
) -> dict:
    """Clean a parallel file pair; write both outputs, the kept line numbers (``kept_path``, by
    default :func:`kept_lines_path`) and the JSON report, each atomically.

    Returns the report as a dict: ``input_pairs``, ``kept``, ``dropped`` per reason, ``examples``.
    """
    settings = settings or CleanSettings()
    check_parallel(src_in, tgt_in)
    report = CleanReport(settings)
    pairs = zip(read_lines(src_in), read_lines(tgt_in), strict=True)
    kept_path = kept_lines_path(src_out) if kept_path is None else kept_path
    with (
        atomic_write(src_out) as src_file,
        atomic_write(tgt_out) as tgt_file,
        atomic_write(kept_path) as kept_file,
    ):
        for src, tgt in clean_pairs(pairs, settings, report, names=(str(src_in), str(tgt_in))):
            src_file.write(src + "\n")
            tgt_file.write(tgt + "\n")
            kept_file.write(f"{report.input_pairs}\n")  # the pair just yielded is input line input_pairs
    result = report.as_dict()
    result["files"] = {"src_in": str(src_in), "tgt_in": str(tgt_in)}
    if report_path is not None:
        with atomic_write(Path(report_path)) as out:
            json.dump(result, out, indent=2, sort_keys=True)
            out.write("\n")
    return result
