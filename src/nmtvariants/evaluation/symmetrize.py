"""Symmetrisation of two directional word alignments (Koehn et al. 2003; fast_align's ``atools -c``).

eflomal writes a forward and a reverse alignment (both as source-target ``i-j`` links) but ships no
symmetriser. This follows ``atools``' reading of Koehn's heuristic so results match the common
fast_align + atools pipeline:

* start from the intersection;
* grow-diag: repeatedly add union links (scanned in (i, j) order) that touch an aligned link among
  the 8 neighbours while their source *or* target word is still unaligned, until nothing changes;
* final: add links of the forward, then the reverse alignment whose source or target word is
  unaligned (``final``), or whose source *and* target words are both unaligned (``final-and``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nmtvariants.corpora.alignments import Link, read_alignments
from nmtvariants.errors import InputError
from nmtvariants.evaluation.alignment import format_links
from nmtvariants.fileio import PathLike, write_lines

METHODS = ("intersect", "union", "grow-diag", "grow-diag-final", "grow-diag-final-and")
NEIGHBOURS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1))


def symmetrize(
    forward: Iterable[Link], reverse: Iterable[Link], method: str = "grow-diag-final-and"
) -> set[Link]:
    """Combine two alignments of one sentence pair (both as (source, target) links)."""
    if method not in METHODS:
        raise InputError(f"symmetrize: unknown method {method!r}; choose from {', '.join(METHODS)}")
    fwd, rev = set(forward), set(reverse)
    union = fwd | rev
    if method == "union":
        return union
    result = fwd & rev
    if method == "intersect":
        return result
    src_aligned = {i for i, _ in result}
    tgt_aligned = {j for _, j in result}

    def add(link: Link) -> None:
        result.add(link)
        src_aligned.add(link[0])
        tgt_aligned.add(link[1])

    pending = sorted(union - result)
    changed = bool(pending)
    while changed:
        changed = False
        added = []
        for i, j in pending:
            one_unaligned = i not in src_aligned or j not in tgt_aligned
            if one_unaligned and any((i + di, j + dj) in result for di, dj in NEIGHBOURS):
                add((i, j))
                added.append((i, j))
                changed = True
        pending = [link for link in pending if link not in set(added)]
    if method == "grow-diag":
        return result
    both = method == "grow-diag-final-and"
    for directional in (fwd, rev):
        for i, j in sorted(directional):
            if (i, j) in result:
                continue
            src_free, tgt_free = i not in src_aligned, j not in tgt_aligned
            if (src_free and tgt_free) if both else (src_free or tgt_free):
                add((i, j))
    return result


def symmetrize_corpus(
    forward: Sequence[Iterable[Link]], reverse: Sequence[Iterable[Link]], method: str = "grow-diag-final-and"
) -> list[set[Link]]:
    """Symmetrise sentence by sentence; the two alignments must have the same number of lines."""
    if len(forward) != len(reverse):
        raise InputError(f"symmetrize: {len(forward)} forward lines but {len(reverse)} reverse lines")
    return [symmetrize(f, r, method) for f, r in zip(forward, reverse, strict=True)]


def _read_pharaoh_links(path: PathLike) -> list[set[Link]]:
    return [set(gold.possible) for gold in read_alignments(path, "pharaoh")]


def symmetrize_files(
    forward_path: PathLike, reverse_path: PathLike, out_path: PathLike, method: str = "grow-diag-final-and"
) -> int:
    """Read two Pharaoh files (eflomal ``-f``/``-r`` output), write the symmetrised one; return lines."""
    forward = _read_pharaoh_links(forward_path)
    reverse = _read_pharaoh_links(reverse_path)
    if len(forward) != len(reverse):
        raise InputError(
            f"{reverse_path}: {len(reverse)} lines but {forward_path} has {len(forward)}; "
            "forward and reverse alignments must come from the same corpus"
        )
    merged = symmetrize_corpus(forward, reverse, method)
    return write_lines(out_path, (format_links(links) for links in merged))
