"""Reading hypothesis/reference files for scoring, with the checks a metric cannot do itself.

sacreBLEU silently scores a truncated hypothesis file against the first lines of the reference only
if we slice it wrongly; a line-count mismatch is almost always a pipeline bug (an interrupted
decode, a forgotten de-BPE step that merged lines), so it stops here with the file names and counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nmtvariants.corpora.download import sha256_of
from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, read_lines


def read_text(path: PathLike) -> list[str]:
    """All lines of a UTF-8 text file (plain or .gz), line ends removed."""
    return list(read_lines(path))


def read_hyp_refs(hyp_path: PathLike, ref_paths: Sequence[PathLike]) -> tuple[list[str], list[list[str]]]:
    """Read a hypothesis file and one or more reference files of the same length.

    Returns ``(hyps, refs)`` with ``refs`` as sacreBLEU expects it: one list per reference file.
    """
    if not ref_paths:
        raise InputError(f"{hyp_path}: no reference file given; pass at least one --ref")
    hyps = read_text(hyp_path)
    refs = [read_text(path) for path in ref_paths]
    for path, ref in zip(ref_paths, refs, strict=True):
        if len(ref) != len(hyps):
            raise InputError(
                f"{hyp_path}: {len(hyps)} lines but reference {path} has {len(ref)}; "
                "hypothesis and references must be line-parallel (was decoding interrupted?)"
            )
    if not hyps:
        raise InputError(f"{hyp_path}: empty hypothesis file; nothing to score")
    return hyps, refs


def sha256_file(path: PathLike) -> str:
    """sha256 of a file's stored bytes, so a score JSON pins exactly what it scored."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    return sha256_of(path)
