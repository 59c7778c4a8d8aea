"""Readers for word alignments with sure (S) and possible (P) links: the one place that parses them.

Every reader returns one :class:`GoldAlignment` per sentence with 0-based ``(i, j)`` index pairs in
the order the file stores them (``reverse=True`` swaps to ``(j, i)``, for a gold file written in the
other direction than the model), and ``possible`` always includes ``sure`` (S ⊆ P), the convention
AER (Och & Ney 2003) is defined with. The metrics live in :mod:`nmtvariants.evaluation.alignment`.

Formats (the names the ``aer`` sub-command's ``--format`` takes):
- **pharaoh** (fast_align, eflomal, our own hypotheses): per line ``i-j`` sure and ``i?j`` possible;
- **talp** (Cross-Align, RWTH, lilt/alignment-scripts, KFTT): per line ``i-j`` sure and ``ipj``
  possible; 1-based by definition (the Hansards and RWTH copies); the KFTT copy ``jaen.talp`` is
  0-based (its links use index 0) and must be read with ``one_based=False`` (``--zero-based``);
- **berkeley** (the Berkeley Aligner copy of the HLT-NAACL 2003 Hansards test set): per line
  ``i-j`` sure and ``i-j-P`` possible, 0-based, French index first;
- **hansards** (the original WPT 2003 shared-task answer files, read by :func:`read_wpt`): one link
  per line ``SNUM i j [S|P] [confidence]``, 1-based, index 0 = NULL (NULL links are dropped).

Each format implies its index base (:data:`ONE_BASED`), because a wrong base does not fail: it shifts
every link by one and silently returns a wrong AER (0.46 instead of 0.17 on the Hansards talp gold).
When the sentence lengths are known (``lengths``), a link outside its sentence is an InputError, which
also catches a wrong base or direction that the index-0 check cannot see.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from nmtvariants.corpora.formats import read_file
from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, read_lines

log = logging.getLogger(__name__)

Link = tuple[int, int]
FORMATS = ("pharaoh", "talp", "berkeley", "hansards")
# the index base each format has by definition (``one_based=None`` picks it)
ONE_BASED = {"pharaoh": False, "talp": True, "berkeley": False, "hansards": True}
Lengths = tuple[Sequence[int], Sequence[int]]

# One link token per line-per-sentence format; group 2 (or 3 for berkeley) marks a possible link.
_TOKEN = {
    "pharaoh": re.compile(r"^(\d+)([-?])(\d+)$"),  # i-j sure, i?j possible
    "talp": re.compile(r"^(\d+)([-p])(\d+)$"),  # i-j sure, ipj possible
    "berkeley": re.compile(r"^(\d+)-(\d+)(-[SP])?$"),  # i-j sure, i-j-P possible
}
_SNUM_LINE = re.compile(r"^<s snum=[^>]*>(.*?)</s>\s*$")
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
    line: str,
    fmt: str = "pharaoh",
    one_based: bool | None = None,
    reverse: bool = False,
    where: str = "<string>",
) -> GoldAlignment:
    """One line of links in ``pharaoh``, ``talp`` or ``berkeley`` format; ``where`` names it in errors.

    ``one_based=None``: the format's own base (:data:`ONE_BASED`; talp 1-based, the others 0-based).
    """
    if fmt not in _TOKEN:
        raise InputError(
            f"{where}: format {fmt!r} is not one link line per sentence; choose from {', '.join(_TOKEN)}"
        )
    sure: set[Link] = set()
    possible: set[Link] = set()
    offset = 1 if (ONE_BASED[fmt] if one_based is None else one_based) else 0
    for token in line.split():
        match = _TOKEN[fmt].match(token)
        if match is None:
            raise InputError(
                f"{where}: bad link {token!r} for format {fmt!r} (expected e.g. {_EXAMPLE[fmt]}); "
                "check --format and the index base (--one-based / --zero-based)"
            )
        if fmt == "berkeley":
            i, j, is_possible = int(match.group(1)), int(match.group(2)), match.group(3) == "-P"
        else:
            i, j, is_possible = int(match.group(1)), int(match.group(3)), match.group(2) != "-"
        i, j = i - offset, j - offset
        if i < 0 or j < 0:
            raise InputError(
                f"{where}: link {token!r} has index 0 but the file is read as 1-based; if this file is "
                "0-based (e.g. KFTT's jaen.talp) pass --zero-based (one_based=False)"
            )
        (possible if is_possible else sure).add((i, j))
    return _gold(sure, possible, reverse)


def read_alignments(
    path: PathLike,
    fmt: str = "pharaoh",
    one_based: bool | None = None,
    reverse: bool = False,
    n_sentences: int | None = None,
    lengths: Lengths | None = None,
    keep_out_of_range: bool = False,
) -> list[GoldAlignment]:
    """Read an alignment file in any of :data:`FORMATS` into one :class:`GoldAlignment` per sentence.

    ``one_based`` defaults to the format's definition (:data:`ONE_BASED`): ``talp`` and ``hansards``
    1-based, ``pharaoh`` and ``berkeley`` 0-based; ``hansards`` allows no other. ``n_sentences`` only
    applies to ``hansards``, whose file cannot show trailing link-less sentences (``lengths`` gives it
    too). ``lengths``: (source, target) word counts per sentence in the returned direction (after
    ``reverse``); the file must then have one line per sentence and every link must fall inside its
    sentence, else InputError; ``keep_out_of_range`` keeps such links with a warning instead (they
    can never be matched, so they only lower recall, as in lilt/alignment-scripts' aer.py).
    """
    if fmt not in FORMATS:
        raise InputError(f"{path}: unknown alignment format {fmt!r}; choose from {', '.join(FORMATS)}")
    if fmt == "hansards":
        if one_based is False:
            raise InputError(f"{path}: the hansards (WPT 2003) format is 1-based by definition")
        if n_sentences is None and lengths is not None:
            n_sentences = len(lengths[0])
        golds = read_wpt(path, n_sentences, reverse=reverse)
    else:
        golds = [
            parse_links(line, fmt, one_based, reverse, where=f"{path}:{number}")
            for number, line in enumerate(read_lines(path), start=1)
        ]
    if lengths is not None:
        check_lengths(golds, lengths, path, keep_out_of_range)
    return golds


def check_lengths(
    golds: Sequence[GoldAlignment], lengths: Lengths, path: PathLike, keep_out_of_range: bool = False
) -> None:
    """InputError unless ``golds`` has one entry per sentence and every link is inside its sentence.

    ``lengths`` = (source word counts, target word counts); ``keep_out_of_range`` turns the link check
    into a warning (the sentence-count check stays).
    """
    sources, targets = lengths
    if not len(golds) == len(sources) == len(targets):
        raise InputError(
            f"{path}: {len(golds)} alignment lines but {len(sources)} source and {len(targets)} target "
            "sentences; the gold file and the texts must be parallel"
        )
    bad = out_of_range(golds, sources, targets)
    if not bad:
        return
    index, (i, j) = bad[0]
    message = (
        f"{path}: sentence {index + 1}: link ({i}, {j}) (0-based, source-target) lies outside the "
        f"sentence of {sources[index]} source and {targets[index]} target words "
        f"({len(bad)} such links in all)"
    )
    if not keep_out_of_range:
        raise InputError(
            f"{message}; check the index base (--one-based / --zero-based), --reverse-gold and the "
            "tokenisation, or pass --keep-out-of-range for a gold file known to have such links"
        )
    log.warning("%s; kept (--keep-out-of-range)", message)


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


def read_token_counts(path: PathLike) -> list[int]:
    """Whitespace tokens per line of a tokenised text; ``<s snum=..> ... </s>`` markup is not counted."""
    counts = []
    for line in read_lines(path):
        match = _SNUM_LINE.match(line)
        counts.append(len((match.group(1) if match else line).split()))
    return counts


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
