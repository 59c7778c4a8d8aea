"""Readers for gold word alignments with sure (S) and possible (P) links.

Every reader returns one :class:`GoldAlignment` per sentence with 0-based ``(i, j)`` index pairs in
the order the file stores them (``reverse=True`` swaps to ``(j, i)``), and ``possible`` always
includes ``sure`` (S ⊆ P), the convention AER (Och & Ney 2003) is defined with.

Formats:
- **naacl** (the Berkeley Aligner copy of the HLT-NAACL 2003 Hansards test set): per line
  ``i-j`` sure and ``i-j-P`` possible, 0-based, French index first;
- **talp** (Cross-Align, RWTH, lilt/alignment-scripts, KFTT): per line ``i-j`` sure and ``ipj``
  possible; 1-based for the Hansards and RWTH copies, 0-based for KFTT (``one_based``);
- **wpt** (the original 2003 shared-task answer files): one link per line
  ``SNUM i j [S|P] [confidence]``, 1-based, index 0 = NULL (NULL links are dropped).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from nmtvariants.errors import InputError
from nmtvariants.fileio import read_lines

Link = tuple[int, int]
_NAACL = re.compile(r"^(\d+)-(\d+)(?:-([SP]))?$")
_TALP = re.compile(r"^(\d+)([-p])(\d+)$")
_SNUM = re.compile(r"^<s snum=[^>]*>(.*?)</s>\s*$")


@dataclass(frozen=True)
class GoldAlignment:
    sure: frozenset[Link]
    possible: frozenset[Link]  # includes every sure link

    def reversed(self) -> GoldAlignment:
        return GoldAlignment(
            frozenset((j, i) for i, j in self.sure), frozenset((j, i) for i, j in self.possible)
        )


def _make(sure: set[Link], possible: set[Link], reverse: bool) -> GoldAlignment:
    gold = GoldAlignment(frozenset(sure), frozenset(possible | sure))
    return gold.reversed() if reverse else gold


def read_naacl(path: str | Path, *, reverse: bool = False) -> list[GoldAlignment]:
    """Berkeley/NAACL links: ``i-j`` (sure) and ``i-j-P`` (possible), 0-based, one sentence per line."""
    result = []
    for number, line in enumerate(read_lines(path), start=1):
        sure: set[Link] = set()
        possible: set[Link] = set()
        for token in line.split():
            match = _NAACL.match(token)
            if match is None:
                raise InputError(f"{path}:{number}: bad link {token!r}; expected 'i-j' or 'i-j-P'")
            link = (int(match.group(1)), int(match.group(2)))
            (possible if match.group(3) == "P" else sure).add(link)
        result.append(_make(sure, possible, reverse))
    return result


def read_talp(path: str | Path, *, one_based: bool = True, reverse: bool = False) -> list[GoldAlignment]:
    """TALP links: ``i-j`` (sure) and ``ipj`` (possible), one sentence per line."""
    offset = 1 if one_based else 0
    result = []
    for number, line in enumerate(read_lines(path), start=1):
        sure: set[Link] = set()
        possible: set[Link] = set()
        for token in line.split():
            match = _TALP.match(token)
            if match is None:
                raise InputError(f"{path}:{number}: bad link {token!r}; expected 'i-j' or 'ipj'")
            i, j = int(match.group(1)) - offset, int(match.group(3)) - offset
            if i < 0 or j < 0:
                raise InputError(
                    f"{path}:{number}: link {token!r} has index 0 but the file is read as 1-based; "
                    "pass one_based=False"
                )
            (sure if match.group(2) == "-" else possible).add((i, j))
        result.append(_make(sure, possible, reverse))
    return result


def read_wpt(
    path: str | Path, n_sentences: int | None = None, *, reverse: bool = False
) -> list[GoldAlignment]:
    """WPT 2003 answer file: ``SNUM i j [S|P] [conf]`` lines, 1-based; sentence numbers start at 1.

    Sentences without any link still get an (empty) entry up to the highest number seen or
    ``n_sentences``. A link without a label counts as sure.
    """
    links: dict[int, tuple[set[Link], set[Link]]] = {}
    for number, line in enumerate(read_lines(path), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 3 or not all(f.isdigit() for f in fields[:3]):
            raise InputError(f"{path}:{number}: expected 'SNUM i j [S|P]', found {line!r}")
        snum, i, j = (int(f) for f in fields[:3])
        label = fields[3] if len(fields) > 3 else "S"
        if label not in ("S", "P"):
            raise InputError(f"{path}:{number}: link label must be S or P, found {label!r}")
        sure, possible = links.setdefault(snum, (set(), set()))
        if i == 0 or j == 0:
            continue  # NULL alignment
        (sure if label == "S" else possible).add((i - 1, j - 1))
    total = max([*links, n_sentences or 0])
    return [_make(*links.get(snum, (set(), set())), reverse) for snum in range(1, total + 1)]


def read_snum_sentences(path: str | Path) -> list[list[str]]:
    """Tokens of ``<s snum=NNNN> tokens </s>`` lines (the NAACL 2003 test.e / test.f files)."""
    sentences = []
    for number, line in enumerate(read_lines(path), start=1):
        match = _SNUM.match(line)
        if match is None:
            raise InputError(f"{path}:{number}: expected '<s snum=NNNN> tokens </s>'")
        sentences.append(match.group(1).split())
    return sentences


def read_bar_bitext(path: str | Path) -> list[tuple[list[str], list[str]]]:
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
