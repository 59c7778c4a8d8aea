"""Word-alignment evaluation (Yang et al. 2020 §3.4): AER, attention alignments, coverage, Pharaoh output.

Conventions: a link is ``(i, j)`` = (source position, target position), 0-based, in the direction
of the *model* (source = encoder side). Gold files come in several formats and directions; the
readers in :mod:`nmtvariants.corpora.alignments` convert them to this convention (``reverse=True``
swaps a gold file written target-first).

AER (Och & Ney 2003) over a corpus, with S ⊆ P enforced (P := P ∪ S)::

    AER = 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|)      precision = |A ∩ P| / |A|, recall = |A ∩ S| / |S|

with every count summed over sentences before dividing, as ``lilt/alignment-scripts`` ``aer.py`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from nmtvariants.corpora.alignments import GoldAlignment, Link
from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, write_lines
from nmtvariants.text.subword_map import word_ids, word_ids_from_subwords

__all__ = [
    "alignment_error_rate",
    "alignments_from_attention",
    "cumulative_coverage",
    "format_links",
    "word_ids",
    "word_ids_from_subwords",
    "write_pharaoh",
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
    mapped to words by ``*_word_ids`` (one word index per position, as
    `nmtvariants.text.subword_map.word_ids` gives them, re-exported here; ``None``/-1 drops a position such
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
