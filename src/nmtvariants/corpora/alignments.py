"""Readers for word alignments with sure (S) and possible (P) links: the one place that parses them.

Every reader returns one :class:`GoldAlignment` per sentence with 0-based ``(i, j)`` index pairs in
the order the file stores them (``reverse=True`` swaps to ``(j, i)``, for a gold file written in the
other direction than the model), and ``possible`` always includes ``sure`` (S ⊆ P), the convention
AER (Och & Ney 2003) is defined with. The metrics live in :mod:`nmtvariants.evaluation.alignment`.

Formats (the names the ``aer`` sub-command's ``--format`` takes):
- **pharaoh** (fast_align, eflomal, our own hypotheses): per line ``i-j`` sure and ``i?j`` possible;
- **talp** (Cross-Align, RWTH, lilt/alignment-scripts, KFTT): per line ``i-j`` sure and ``ipj``
  possible; 1-based for the Hansards and RWTH copies, 0-based for KFTT (``one_based``);
- **berkeley** (the Berkeley Aligner copy of the HLT-NAACL 2003 Hansards test set): per line
  ``i-j`` sure and ``i-j-P`` possible, 0-based, French index first;
- **hansards** (the original WPT 2003 shared-task answer files, read by :func:`read_wpt`): one link
  per line ``SNUM i j [S|P] [confidence]``, 1-based, index 0 = NULL (NULL links are dropped).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from nmtvariants.corpora.formats import read_file
from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, read_lines

Link = tuple[int, int]
FORMATS = ("pharaoh", "talp", "berkeley", "hansards")

# One link token per line-per-sentence format; group 2 (or 3 for berkeley) marks a possible link.
_TOKEN = {
    "pharaoh": re.compile(r"^(\d+)([-?])(\d+)$"),  # i-j sure, i?j possible
    "talp": re.compile(r"^(\d+)([-p])(\d+)$"),  # i-j sure, ipj possible
    "berkeley": re.compile(r"^(\d+)-(\d+)(-[SP])?$"),  # i-j sure, i-j-P possible
}
_EXAMPLE = {"pharaoh": "3-4 or 3?4", "talp": "3-4 or 3p4", "berkeley": "3-4 or 3-4-P"}


@dataclass(frozen=True)
class GoldAlignment:
    """Sure and possible links of one sentence pair; ``possible`` always contains ``sure``."""

    sure: frozenset[Link]
    possible: frozenset[Link] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        object.__setattr__(self, "possible", frozenset(self.possible) | frozenset(self.sure))

    def reversed(self) -> GoldAlignment:
        """The same links with the two sides swapped, ``(i, j)`` -> ``(j, i)``."""
        return GoldAlignment(
            frozenset((j, i) for i, j in self.sure), frozenset((j, i) for i, j in self.possible)
        )


def _gold(sure: Iterable[Link], possible: Iterable[Link], reverse: bool) -> GoldAlignment:
    gold = GoldAlignment(frozenset(sure), frozenset(possible))
    return gold.reversed() if reverse else gold


def parse_links(
    line: str, fmt: str = "pharaoh", one_based: bool = False, reverse: bool = False, where: str = "<string>"
) -> GoldAlignment:
    """One line of links in ``pharaoh``, ``talp`` or ``berkeley`` format; ``where`` names it in errors."""
    if fmt not in _TOKEN:
        raise InputError(
            f"{where}: format {fmt!r} is not one link line per sentence; choose from {', '.join(_TOKEN)}"
        )
    sure: set[Link] = set()
    possible: set[Link] = set()
    offset = 1 if one_based else 0
    for token in line.split():
        match = _TOKEN[fmt].match(token)
        if match is None:
            raise InputError(
                f"{where}: bad link {token!r} for format {fmt!r} (expected e.g. {_EXAMPLE[fmt]}); "
                "check --format and --one-based"
            )
        if fmt == "berkeley":
            i, j, is_possible = int(match.group(1)), int(match.group(2)), match.group(3) == "-P"
        else:
            i, j, is_possible = int(match.group(1)), int(match.group(3)), match.group(2) != "-"
        i, j = i - offset, j - offset
        if i < 0 or j < 0:
            raise InputError(
                f"{where}: link {token!r} has index 0 but the file is read as 1-based; "
                "pass one_based=False (no --one-based)"
            )
        (possible if is_possible else sure).add((i, j))
    return _gold(sure, possible, reverse)


def read_alignments(
    path: PathLike,
    fmt: str = "pharaoh",
    one_based: bool | None = None,
    reverse: bool = False,
    n_sentences: int | None = None,
) -> list[GoldAlignment]:
    """Read an alignment file in any of :data:`FORMATS` into one :class:`GoldAlignment` per sentence.

    ``one_based`` defaults to the format's convention: ``hansards`` 1-based (the only choice), the
    others 0-based (the Hansards/RWTH ``talp`` copies are 1-based: pass ``one_based=True``).
    ``n_sentences`` only applies to ``hansards``, whose file cannot show trailing link-less sentences.
    """
    if fmt == "hansards":
        return read_wpt(path, n_sentences, reverse=reverse)
    if fmt not in _TOKEN:
        raise InputError(f"{path}: unknown alignment format {fmt!r}; choose from {', '.join(FORMATS)}")
    return [
        parse_links(line, fmt, bool(one_based), reverse, where=f"{path}:{number}")
        for number, line in enumerate(read_lines(path), start=1)
    ]


def read_wpt(
    path: PathLike, n_sentences: int | None = None, *, reverse: bool = False, first_id: int = 1
) -> list[GoldAlignment]:
    """WPT 2003 answer file (format ``hansards``): ``SNUM i j [S|P] [confidence]`` lines, 1-based.

    Sentences are numbered from ``first_id`` (the test sets start at 0001) up to the highest number
    seen or to ``first_id + n_sentences - 1``; a sentence without lines gets an empty entry, so a
    sentence whose words are all NULL-aligned cannot shift the ones after it. A link without a
    label counts as sure; NULL links (index 0) are dropped.
    """
    if n_sentences is not None and n_sentences < 1:
        raise InputError(f"{path}: n_sentences must be at least 1, got {n_sentences}")
    last = None if n_sentences is None else first_id + n_sentences - 1
    links: dict[int, tuple[set[Link], set[Link]]] = {}
    for number, line in enumerate(read_lines(path), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 3 or not all(f.isdigit() for f in fields[:3]):
            raise InputError(f"{path}:{number}: expected 'SNUM i j [S|P] [confidence]', got {line!r}")
        snum, i, j = (int(f) for f in fields[:3])
        label = fields[3].upper() if len(fields) > 3 else "S"
        if label not in ("S", "P"):
            raise InputError(f"{path}:{number}: link type must be S or P, got {fields[3]!r}")
        if snum < first_id or (last is not None and snum > last):
            raise InputError(
                f"{path}:{number}: sentence number {snum} outside {first_id}..{last or 'end'}; "
                "check first_id / n_sentences"
            )
        sure, possible = links.setdefault(snum, (set(), set()))
        if i == 0 or j == 0:  # NULL alignment: not a link
            continue
        (sure if label == "S" else possible).add((i - 1, j - 1))
    if not links and n_sentences is None:
        raise InputError(f"{path}: no alignment lines found")
    count = (max(links) - first_id + 1) if n_sentences is None else n_sentences
    empty: tuple[set[Link], set[Link]] = (set(), set())
    return [_gold(*links.get(first_id + k, empty), reverse) for k in range(count)]


def read_snum_sentences(path: PathLike) -> list[list[str]]:
    """Tokens of ``<s snum=NNNN> tokens </s>`` lines (the NAACL 2003 test.e / test.f files)."""
    return [line.split() for line in read_file(path, "snum")]


def read_bar_bitext(path: PathLike) -> list[tuple[list[str], list[str]]]:
    """Token lists of ``left ||| right`` lines (Cross-Align gold sentence files)."""
    pairs = []
    for number, line in enumerate(read_lines(path), start=1):
        if "|||" not in line:
            raise InputError(f"{path}:{number}: expected 'source ||| target'")
        left, right = line.split("|||", 1)
        pairs.append((left.split(), right.split()))
    return pairs


def out_of_range(
    alignments: Iterable[GoldAlignment], first_lengths: Iterable[int], second_lengths: Iterable[int]
) -> list[tuple[int, Link]]:
    """``(sentence index, link)`` for every possible link outside the sentence lengths."""
    bad = []
    for index, (gold, n, m) in enumerate(zip(alignments, first_lengths, second_lengths, strict=True)):
        bad.extend((index, link) for link in sorted(gold.possible) if not (link[0] < n and link[1] < m))
    return bad
