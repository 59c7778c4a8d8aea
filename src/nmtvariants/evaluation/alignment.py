"""Word-alignment evaluation (Yang et al. 2020 §3.4): gold formats, AER, attention alignments, coverage.

Conventions: a link is ``(i, j)`` = (source position, target position), 0-based, in the direction
of the *model* (source = encoder side). Gold files come in several formats and directions; readers
convert to this convention (``reverse=True`` swaps a gold file written target-first).

AER (Och & Ney 2003) over a corpus, with S ⊆ P enforced (P := P ∪ S)::

    AER = 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|)      precision = |A ∩ P| / |A|, recall = |A ∩ S| / |S|

with every count summed over sentences before dividing, as ``lilt/alignment-scripts`` ``aer.py`` does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, read_lines, write_lines

Link = tuple[int, int]
FORMATS = ("pharaoh", "talp", "berkeley", "hansards")


@dataclass(frozen=True)
class GoldAlignment:
    """Sure and possible links of one sentence pair; ``possible`` always contains ``sure``."""

    sure: frozenset[Link]
    possible: frozenset[Link] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        object.__setattr__(self, "possible", frozenset(self.possible) | frozenset(self.sure))


# One link token per format: (regex, possible-marker test). Index base is applied afterwards.
_TOKEN = {
    "pharaoh": re.compile(r"^(\d+)([-?])(\d+)$"),  # i-j sure, i?j possible
    "talp": re.compile(r"^(\d+)([-p])(\d+)$"),  # i-j sure, ipj possible
    "berkeley": re.compile(r"^(\d+)-(\d+)(-[SP])?$"),  # i-j sure, i-j-P possible
}


def parse_links(
    line: str, fmt: str = "pharaoh", one_based: bool = False, reverse: bool = False, where: str = "<string>"
) -> GoldAlignment:
    """Parse one line of links in ``pharaoh``, ``talp`` or ``berkeley`` format."""
    if fmt not in _TOKEN:
        raise InputError(f"{where}: unknown alignment format {fmt!r}; choose from {', '.join(FORMATS)}")
    sure: set[Link] = set()
    possible: set[Link] = set()
    offset = 1 if one_based else 0
    for token in line.split():
        match = _TOKEN[fmt].match(token)
        if not match:
            raise InputError(
                f"{where}: bad link {token!r} for format {fmt!r} (expected e.g. "
                f"{ {'pharaoh': '3-4 or 3?4', 'talp': '3-4 or 3p4', 'berkeley': '3-4 or 3-4-P'}[fmt] }); "
                "check --format and --one-based"
            )
        if fmt == "berkeley":
            i, j, marker = int(match.group(1)), int(match.group(2)), match.group(3) or "-S"
            is_possible = marker == "-P"
        else:
            i, j, is_possible = int(match.group(1)), int(match.group(3)), match.group(2) != "-"
        i, j = i - offset, j - offset
        if i < 0 or j < 0:
            raise InputError(f"{where}: link {token!r} below the index base; is the file 0-based?")
        link = (j, i) if reverse else (i, j)
        (possible if is_possible else sure).add(link)
    return GoldAlignment(frozenset(sure), frozenset(possible))


def read_alignments(
    path: PathLike,
    fmt: str = "pharaoh",
    one_based: bool | None = None,
    reverse: bool = False,
    n_sentences: int | None = None,
) -> list[GoldAlignment]:
    """Read an alignment file into one :class:`GoldAlignment` per sentence pair.

    ``one_based`` defaults to the format's convention: ``hansards`` 1-based, the others 0-based
    (the Cross-Align ``enfr.talp`` file is 1-based: pass ``one_based=True``).
    """
    if fmt == "hansards":
        return read_hansards(path, reverse=reverse, n_sentences=n_sentences)
    base = bool(one_based)
    return [
        parse_links(line, fmt, base, reverse, where=f"{path}:{number}")
        for number, line in enumerate(read_lines(path), start=1)
    ]


def read_hansards(
    path: PathLike, reverse: bool = False, n_sentences: int | None = None, first_id: int | None = None
) -> list[GoldAlignment]:
    """NAACL 2003 WPT format: ``sentence_id src_pos tgt_pos [S|P] [confidence]``, 1-based, 0 = NULL.

    Sentences are numbered from ``first_id`` (default: the smallest id in the file) to the largest
    id, or ``n_sentences`` of them; a sentence without lines has no links. NULL links are dropped.
    """
    links: dict[int, tuple[set[Link], set[Link]]] = {}
    for number, line in enumerate(read_lines(path), start=1):
        fields = line.split()
        if not fields:
            continue
        try:
            sentence, i, j = int(fields[0]), int(fields[1]), int(fields[2])
            kind = fields[3].upper() if len(fields) > 3 else "S"
        except (ValueError, IndexError):
            raise InputError(
                f"{path}:{number}: expected 'sentence_id src_pos tgt_pos [S|P]', got {line!r}"
            ) from None
        if kind not in ("S", "P"):
            raise InputError(f"{path}:{number}: link type must be S or P, got {fields[3]!r}")
        sure, possible = links.setdefault(sentence, (set(), set()))
        if i == 0 or j == 0:  # NULL alignment: not a link
            continue
        link = (j - 1, i - 1) if reverse else (i - 1, j - 1)
        (sure if kind == "S" else possible).add(link)
    if not links:
        raise InputError(f"{path}: no alignment lines found")
    start = min(links) if first_id is None else first_id
    count = (max(links) - start + 1) if n_sentences is None else n_sentences
    empty: tuple[set[Link], set[Link]] = (set(), set())
    return [
        GoldAlignment(frozenset(links.get(start + k, empty)[0]), frozenset(links.get(start + k, empty)[1]))
        for k in range(count)
    ]


def format_links(links: Iterable[Link], possible: Iterable[Link] = ()) -> str:
    """Pharaoh line: sorted ``i-j`` links, then ``i?j`` for possible-only links."""
    sure = sorted(set(links))
    extra = sorted(set(possible) - set(sure))
    return " ".join([f"{i}-{j}" for i, j in sure] + [f"{i}?{j}" for i, j in extra])


def write_pharaoh(path: PathLike, alignments: Iterable[Iterable[Link]]) -> int:
    """Write one Pharaoh line per sentence (atomically); return the number of lines."""
    return write_lines(path, (format_links(links) for links in alignments))


def alignment_error_rate(hyps: Sequence[Iterable[Link]], golds: Sequence[GoldAlignment]) -> dict[str, Any]:
    """Corpus AER, precision and recall of hypothesis links against gold sure/possible links."""
    if len(hyps) != len(golds):
        raise InputError(f"aer: {len(hyps)} hypothesis sentences but {len(golds)} gold sentences")
    a_total = s_total = a_and_s = a_and_p = 0
    for hyp, gold in zip(hyps, golds, strict=True):
        links = set(hyp)
        a_total += len(links)
        s_total += len(gold.sure)
        a_and_s += len(links & gold.sure)
        a_and_p += len(links & gold.possible)
    precision = a_and_p / a_total if a_total else 0.0
    recall = a_and_s / s_total if s_total else 0.0
    denominator = a_total + s_total
    return {
        "aer": 1.0 - (a_and_s + a_and_p) / denominator if denominator else 0.0,
        "precision": precision,
        "recall": recall,
        "n_sentences": len(golds),
        "n_hyp_links": a_total,
        "n_sure": s_total,
        "n_possible": sum(len(g.possible) for g in golds),
    }


def word_ids_from_subwords(tokens: Sequence[str], separator: str = "@@") -> list[int]:
    """Word index of each BPE token (``new@@ s`` -> [0, 0]); subword-nmt marks non-final pieces."""
    ids: list[int] = []
    word = 0
    for token in tokens:
        ids.append(word)
        if not token.endswith(separator):
            word += 1
    return ids


def _as_array(attn: Any) -> np.ndarray:
    if hasattr(attn, "detach"):  # torch tensor without importing torch here
        attn = attn.detach().float().cpu().numpy()
    array = np.asarray(attn, dtype=np.float64)
    if array.ndim not in (2, 3):
        raise InputError(f"attention must be [T, S] or [heads, T, S], got shape {array.shape}")
    return array


def _pool(
    matrix: np.ndarray, ids: Sequence[int | None] | None, axis: int, how: str
) -> tuple[np.ndarray, list[int]]:
    """Pool rows (axis 0) or columns (axis 1) that share a word id; ids of None/-1 are dropped."""
    size = matrix.shape[axis]
    if ids is None:
        ids = list(range(size))
    if len(ids) != size:
        raise InputError(f"word ids have length {len(ids)} but the attention axis has {size} positions")
    words = sorted({w for w in ids if w is not None and w >= 0})
    pooled = []
    for word in words:
        members = [k for k, w in enumerate(ids) if w == word]
        part = np.take(matrix, members, axis=axis)
        pooled.append(part.mean(axis=axis) if how == "mean" else part.sum(axis=axis))
    return np.stack(pooled, axis=axis), words


def alignments_from_attention(
    attn: Any,
    src_word_ids: Sequence[int | None] | None = None,
    tgt_word_ids: Sequence[int | None] | None = None,
    head_merge: str = "mean",
) -> set[Link]:
    """Hard alignment from one layer's encoder-decoder attention: argmax source word per target word.

    ``attn`` is ``[T, S]`` or ``[heads, T, S]`` (heads merged by ``mean`` or ``max``). Sub-words are
    mapped to words by ``*_word_ids`` (one word index per position; ``None``/-1 drops a position such
    as EOS): attention is averaged over a target word's sub-words and summed over a source word's
    sub-words before the argmax (§3.4's suggested practice). Ties go to the leftmost source word.
    """
    array = _as_array(attn)
    if array.ndim == 3:
        if head_merge not in ("mean", "max"):
            raise InputError(f"head_merge must be 'mean' or 'max', got {head_merge!r}")
        array = array.mean(axis=0) if head_merge == "mean" else array.max(axis=0)
    array, tgt_words = _pool(array, tgt_word_ids, axis=0, how="mean")
    array, src_words = _pool(array, src_word_ids, axis=1, how="sum")
    best = array.argmax(axis=1)
    return {(src_words[int(b)], tgt_words[t]) for t, b in enumerate(best)}


def cumulative_coverage(
    layer_alignments: Sequence[Sequence[Iterable[Link]]], src_lengths: Sequence[int]
) -> list[float]:
    """CC_n = |∪_{l<=n} C_l| / |X| per layer n, corpus-level (summed over sentences).

    ``layer_alignments[l][s]`` are the links of layer ``l`` (bottom first) for sentence ``s``;
    C_l is the set of source words with at least one link; |X| the number of source words.
    """
    total_words = sum(src_lengths)
    if total_words == 0:
        raise InputError("cumulative_coverage: the source side has no words")
    covered: list[set[int]] = [set() for _ in src_lengths]
    curve: list[float] = []
    for layer, per_sentence in enumerate(layer_alignments):
        if len(per_sentence) != len(src_lengths):
            raise InputError(
                f"cumulative_coverage: layer {layer} has {len(per_sentence)} sentences, "
                f"expected {len(src_lengths)}"
            )
        for seen, links, length in zip(covered, per_sentence, src_lengths, strict=True):
            seen.update(i for i, _ in links if i < length)
        curve.append(sum(len(seen) for seen in covered) / total_words)
    return curve
