"""Binarised parallel data: BPE'd text pairs turned into flat id arrays once, then sliced per batch.

Why flat arrays: a WMT corpus is millions of short sentences; one Python list per sentence costs
~100 bytes of overhead each, while ``tokens`` + ``offsets`` (numpy int32) cost 4 bytes a token and
collate with a single fancy-index. Every kept pair remembers its 1-based line number in the text
files, so a problem found later (an over-long pair, a bad batch) can still be reported as
``train.de:1234``. The on-disk form is a plain ``.npz`` (no pickle), written atomically.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nmtvariants.data.vocab import EOS_ID, Vocabulary
from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, atomic_write, read_lines

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
_SHOW = 5  # how many offending line numbers a warning lists


def _offsets(lengths: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


@dataclass
class ParallelData:
    """Source/target id sequences (each ending in ``</s>``) stored flat with offsets.

    ``src_lengths``/``tgt_lengths`` include the ``</s>``; ``line_numbers`` are 1-based lines of the
    original text files, so that dropped or suspicious pairs can be named.
    """

    src_tokens: np.ndarray
    src_offsets: np.ndarray
    tgt_tokens: np.ndarray
    tgt_offsets: np.ndarray
    line_numbers: np.ndarray
    source_name: str = ""

    def __len__(self) -> int:
        return len(self.line_numbers)

    @property
    def src_lengths(self) -> np.ndarray:
        return np.diff(self.src_offsets)

    @property
    def tgt_lengths(self) -> np.ndarray:
        return np.diff(self.tgt_offsets)

    def source(self, index: int) -> np.ndarray:
        return self.src_tokens[self.src_offsets[index] : self.src_offsets[index + 1]]

    def target(self, index: int) -> np.ndarray:
        return self.tgt_tokens[self.tgt_offsets[index] : self.tgt_offsets[index + 1]]

    def target_token_count(self) -> int:
        return int(self.tgt_offsets[-1])

    # ------------------------------------------------------------------ building
    @classmethod
    def from_sequences(
        cls,
        pairs: Iterable[tuple[list[int], list[int]]],
        line_numbers: Iterable[int] | None = None,
        source_name: str = "",
    ) -> ParallelData:
        src_lens, tgt_lens, src_flat, tgt_flat = [], [], [], []
        for src, tgt in pairs:
            src_lens.append(len(src))
            tgt_lens.append(len(tgt))
            src_flat.extend(src)
            tgt_flat.extend(tgt)
        count = len(src_lens)
        numbers = np.arange(1, count + 1) if line_numbers is None else np.fromiter(line_numbers, np.int64)
        return cls(
            src_tokens=np.asarray(src_flat, dtype=np.int32),
            src_offsets=_offsets(np.asarray(src_lens, dtype=np.int64)),
            tgt_tokens=np.asarray(tgt_flat, dtype=np.int32),
            tgt_offsets=_offsets(np.asarray(tgt_lens, dtype=np.int64)),
            line_numbers=numbers.astype(np.int64),
            source_name=source_name,
        )

    # ------------------------------------------------------------------ file IO
    def save(self, path: PathLike) -> None:
        with atomic_write(path, "wb") as out:
            np.savez(
                out,
                format_version=np.int64(FORMAT_VERSION),
                src_tokens=self.src_tokens,
                src_offsets=self.src_offsets,
                tgt_tokens=self.tgt_tokens,
                tgt_offsets=self.tgt_offsets,
                line_numbers=self.line_numbers,
                source_name=np.str_(self.source_name),
            )

    @classmethod
    def load(cls, path: PathLike) -> ParallelData:
        path = Path(path)
        if not path.exists():
            raise InputError(f"{path}: binarised data not found; create it with `nmtvariants binarize`")
        try:
            with np.load(path, allow_pickle=False) as arrays:
                version = int(arrays["format_version"])
                if version != FORMAT_VERSION:
                    raise InputError(
                        f"{path}: binarised format version {version}, expected {FORMAT_VERSION}; "
                        "re-run `nmtvariants binarize`"
                    )
                data = cls(
                    src_tokens=arrays["src_tokens"],
                    src_offsets=arrays["src_offsets"],
                    tgt_tokens=arrays["tgt_tokens"],
                    tgt_offsets=arrays["tgt_offsets"],
                    line_numbers=arrays["line_numbers"],
                    source_name=str(arrays["source_name"]),
                )
        except (OSError, ValueError, KeyError) as error:
            raise InputError(
                f"{path}: not a readable nmtvariants binarised file ({error}); re-run `nmtvariants binarize`"
            ) from None
        return data


def _describe(lines: list[int], path: PathLike) -> str:
    shown = ", ".join(f"{path}:{n}" for n in lines[:_SHOW])
    more = f" and {len(lines) - _SHOW} more" if len(lines) > _SHOW else ""
    return shown + more


def binarize(
    src_path: PathLike,
    tgt_path: PathLike,
    vocab: Vocabulary,
    max_len: int | None = None,
    drop_empty: bool = True,
) -> ParallelData:
    """Encode two aligned BPE'd text files with ``vocab`` (``tokens + </s>`` on both sides).

    Pairs with an empty side are dropped (``drop_empty``) or rejected; pairs with more than
    ``max_len`` tokens (before ``</s>``) on either side are dropped. Both are reported as a warning
    naming the first offending lines, because silently shrinking a corpus hides preprocessing bugs.
    A line-count mismatch is an :class:`InputError`.
    """
    src_lines = read_lines(src_path)
    tgt_lines = read_lines(tgt_path)
    pairs: list[tuple[list[int], list[int]]] = []
    numbers: list[int] = []
    empty: list[int] = []
    long: list[int] = []
    number = 0
    sentinel = object()
    while True:
        src = next(src_lines, sentinel)
        tgt = next(tgt_lines, sentinel)
        if src is sentinel and tgt is sentinel:
            break
        number += 1
        if src is sentinel or tgt is sentinel:
            short, other = (src_path, tgt_path) if src is sentinel else (tgt_path, src_path)
            raise InputError(
                f"{short}: ends after {number - 1} lines but {other} continues at line {number}; "
                "the two sides of a parallel corpus must have the same number of lines"
            )
        src_ids = vocab.encode(src)
        tgt_ids = vocab.encode(tgt)
        if len(src_ids) == 1 or len(tgt_ids) == 1:
            if not drop_empty:
                side = src_path if len(src_ids) == 1 else tgt_path
                raise InputError(f"{side}:{number}: empty line; remove the pair from both files")
            empty.append(number)
            continue
        if max_len is not None and max(len(src_ids), len(tgt_ids)) - 1 > max_len:
            long.append(number)
            continue
        pairs.append((src_ids, tgt_ids))
        numbers.append(number)
    if empty:
        log.warning("dropped %d pairs with an empty side: %s", len(empty), _describe(empty, src_path))
    if long:
        log.warning(
            "dropped %d pairs longer than %d tokens: %s", len(long), max_len, _describe(long, src_path)
        )
    if not pairs:
        raise InputError(f"{src_path}, {tgt_path}: no usable sentence pairs")
    return ParallelData.from_sequences(pairs, numbers, source_name=str(src_path))


def check_ids(data: ParallelData, vocab_size: int, where: str) -> None:
    """Reject ids outside the vocabulary (a binarised file made with another vocabulary)."""
    for name, tokens in (("source", data.src_tokens), ("target", data.tgt_tokens)):
        if len(tokens) and (tokens.min() < 0 or tokens.max() >= vocab_size):
            raise InputError(
                f"{where}: {name} ids outside the vocabulary of {vocab_size} types; "
                "binarise again with the vocabulary the model uses"
            )


__all__ = ["EOS_ID", "ParallelData", "binarize", "check_ids"]
