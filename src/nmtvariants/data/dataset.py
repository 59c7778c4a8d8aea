"""Binarised parallel data: BPE'd text pairs turned into flat id arrays once, then sliced per batch.

Why flat arrays: a WMT corpus is millions of short sentences; one Python list per sentence costs
~100 bytes of overhead each, while ``tokens`` + ``offsets`` (numpy int32) cost 4 bytes a token and
collate with a single fancy-index. Every kept pair remembers its 1-based line number in the text
files, so a problem found later (an over-long pair, a bad batch) can still be reported as
``train.de:1234``. The on-disk form is a plain ``.npz`` (no pickle), written atomically.

Extra inputs (data/extra_inputs.py) are stored beside the ids: each integer stream flat and aligned
with ``src_tokens`` (it shares ``src_offsets``, ``</s>`` included), each further source flat with its
own offsets, and each pair's row in the feature file (``feature_rows``). The feature grid itself
stays in its ``.npy`` (memory-mapped at training time, attached as ``features``): copying image
features into every binarised file would double the largest data of a multimodal study.
"""

from __future__ import annotations

import logging
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path

import numpy as np

from nmtvariants.data.extra_inputs import ExtraColumns, ExtraInputFiles, open_features, read_extra_inputs
from nmtvariants.data.vocab import EOS_ID, Vocabulary
from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, atomic_write, read_lines

log = logging.getLogger(__name__)

FORMAT_VERSION = 2
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
    aux: dict[str, np.ndarray] = field(default_factory=dict)
    sources: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    feature_rows: np.ndarray | None = None
    features: np.ndarray | None = None  # the memory-mapped grid; not saved (see the module docstring)

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
        pairs = list(pairs)
        src_tokens, src_offsets = _flat([src for src, _ in pairs])
        tgt_tokens, tgt_offsets = _flat([tgt for _, tgt in pairs])
        count = len(pairs)
        numbers = np.arange(1, count + 1) if line_numbers is None else np.fromiter(line_numbers, np.int64)
        return cls(
            src_tokens=src_tokens,
            src_offsets=src_offsets,
            tgt_tokens=tgt_tokens,
            tgt_offsets=tgt_offsets,
            line_numbers=numbers.astype(np.int64),
            source_name=source_name,
        )

    def attach(self, columns: ExtraColumns, vocab: Vocabulary) -> ParallelData:
        """Add the extra inputs of the kept lines (``line_numbers``) from per-line ``columns``."""
        kept = self.line_numbers - 1
        for name, rows in columns.aux.items():
            self.aux[name] = np.concatenate([rows[i] for i in kept]).astype(np.int32)
        self.sources = [_flat([vocab.encode(lines[i]) for i in kept]) for lines in columns.sources]
        if columns.features is not None:
            self.feature_rows = columns.feature_rows[kept]
            self.features = columns.features
        return self

    def use_features(self, path: PathLike, channels: int | None = None) -> None:
        """Attach the feature grid of a loaded binarised file (its ``feature_rows`` index into it)."""
        if self.feature_rows is None:
            raise InputError(
                f"{path}: features given, but {self.source_name or 'the binarised data'} has no feature "
                "rows; binarise with --features"
            )
        grid = open_features(path, channels)
        missing = np.nonzero(self.feature_rows >= grid.shape[0])[0]
        if len(missing):
            raise InputError(
                f"{path}: feature row {self.feature_rows[missing[0]]} (line {self.line_numbers[missing[0]]} "
                f"of {self.source_name}) is missing; the file has {grid.shape[0]} rows"
            )
        self.features = grid

    def source_lengths(self, k: int) -> np.ndarray:
        """Lengths of source ``k`` (0: the first source)."""
        return self.src_lengths if k == 0 else np.diff(self.sources[k - 1][1])

    # ------------------------------------------------------------------ file IO
    def save(self, path: PathLike) -> None:
        extra: dict[str, np.ndarray] = {f"aux__{name}": stream for name, stream in self.aux.items()}
        for k, (tokens, offsets) in enumerate(self.sources, start=1):
            extra[f"source{k}_tokens"], extra[f"source{k}_offsets"] = tokens, offsets
        if self.feature_rows is not None:
            extra["feature_rows"] = self.feature_rows
        with atomic_write(path, "wb") as out:
            np.savez(
                out,
                **extra,
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
                    aux={k[5:]: arrays[k] for k in arrays.files if k.startswith("aux__")},
                    sources=[
                        (arrays[f"source{k}_tokens"], arrays[f"source{k}_offsets"])
                        for k in range(1, len(arrays.files))
                        if f"source{k}_tokens" in arrays.files
                    ],
                    feature_rows=arrays["feature_rows"] if "feature_rows" in arrays.files else None,
                )
        except (OSError, ValueError, KeyError) as error:
            raise InputError(
                f"{path}: not a readable nmtvariants binarised file ({error}); re-run `nmtvariants binarize`"
            ) from None
        return data


def _flat(sequences: list[list[int]] | list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated int32 tokens and int64 offsets of variable-length sequences."""
    lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences))
    flat = np.concatenate([np.asarray(s, dtype=np.int32) for s in sequences]) if sequences else []
    return np.asarray(flat, dtype=np.int32), _offsets(lengths)


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
    extras: ExtraInputFiles | None = None,
) -> ParallelData:
    """Encode two aligned BPE'd text files with ``vocab`` (``tokens + </s>`` on both sides).

    Pairs with an empty side are dropped (``drop_empty``) or rejected; pairs with more than
    ``max_len`` tokens (before ``</s>``) on either side, or in a further source, are dropped. Both
    are reported as a warning naming the first offending lines, because silently shrinking a
    corpus hides preprocessing bugs. A line-count mismatch is an :class:`InputError`, and so is
    any problem with the ``extras`` (checked in full before anything is dropped).
    """
    # Streamed: ids go straight into flat int32 buffers, so the peak memory is the result's (a WMT
    # corpus as per-line Python lists took ~10x that). Only the extra inputs need the source lines.
    columns = read_extra_inputs(extras, src_path, list(read_lines(src_path))) if extras else None
    src_tokens, tgt_tokens = array("i"), array("i")
    src_lengths, tgt_lengths, numbers = array("q"), array("q"), array("q")
    empty: list[int] = []
    long: list[int] = []
    for number, (src, tgt) in enumerate(zip_longest(read_lines(src_path), read_lines(tgt_path)), start=1):
        if src is None or tgt is None:
            short, other = (src_path, tgt_path) if src is None else (tgt_path, src_path)
            raise InputError(
                f"{short}: ends after {number - 1} lines but {other} continues at line {number}; "
                "the two sides of a parallel corpus must have the same number of lines"
            )
        src_ids = vocab.encode(src)
        tgt_ids = vocab.encode(tgt)
        lengths = [len(src_ids), len(tgt_ids)]
        if columns is not None:
            lengths += [len(lines[number - 1].split()) + 1 for lines in columns.sources]
        if min(lengths) == 1:
            if not drop_empty:
                paths = [src_path, tgt_path, *(extras.sources if extras else ())]
                side = paths[lengths.index(1)]
                raise InputError(f"{side}:{number}: empty line; remove the pair from both files")
            empty.append(number)
            continue
        if max_len is not None and max(lengths) - 1 > max_len:
            long.append(number)
            continue
        src_tokens.extend(src_ids)
        tgt_tokens.extend(tgt_ids)
        src_lengths.append(len(src_ids))
        tgt_lengths.append(len(tgt_ids))
        numbers.append(number)
    if empty:
        log.warning("dropped %d pairs with an empty side: %s", len(empty), _describe(empty, src_path))
    if long:
        log.warning(
            "dropped %d pairs longer than %d tokens: %s", len(long), max_len, _describe(long, src_path)
        )
    if not numbers:
        raise InputError(f"{src_path}, {tgt_path}: no usable sentence pairs")
    data = ParallelData(  # views of the buffers, not copies: the peak stays one corpus
        src_tokens=np.frombuffer(src_tokens, dtype=np.int32),
        src_offsets=_offsets(np.frombuffer(src_lengths, dtype=np.int64)),
        tgt_tokens=np.frombuffer(tgt_tokens, dtype=np.int32),
        tgt_offsets=_offsets(np.frombuffer(tgt_lengths, dtype=np.int64)),
        line_numbers=np.frombuffer(numbers, dtype=np.int64),
        source_name=str(src_path),
    )
    return data if columns is None else data.attach(columns, vocab)


def check_ids(data: ParallelData, vocab_size: int, where: str) -> None:
    """Reject ids outside the vocabulary (a binarised file made with another vocabulary)."""
    sides = [("source", data.src_tokens), ("target", data.tgt_tokens)]
    sides += [(f"source {k}", tokens) for k, (tokens, _) in enumerate(data.sources, start=2)]
    for name, tokens in sides:
        if len(tokens) and (tokens.min() < 0 or tokens.max() >= vocab_size):
            raise InputError(
                f"{where}: {name} ids outside the vocabulary of {vocab_size} types; "
                "binarise again with the vocabulary the model uses"
            )


__all__ = ["EOS_ID", "ParallelData", "binarize", "check_ids"]
