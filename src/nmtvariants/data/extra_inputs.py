"""Extra inputs of an example, read from files and checked against its BPE source before any training.

Studies feed the encoders more than one BPE sentence: PASCAL reads parent positions, LISA
first-subword parents, Sennrich & Haddow dependency labels, multi-source models several sources,
multimodal models an image feature grid. All of them arrive as files line-parallel with the
corpus, so a mistake upstream (a parse of another tokenisation, a feature file of the uncleaned
corpus) would misalign silently; this module is where each is checked, with the file and line.

**Integer streams** (``NAME=FILE``): one line per sentence, whitespace-separated non-negative
integers, exactly one per BPE token of the *first* source (a word split into three subwords has
three entries; the producer maps word values to subwords). Every source ends in ``</s>``, which
gets a value by this rule:

* *position* streams (the default; parents, first-subword parents): values are 0-based positions
  in the BPE sentence, in ``[0, n)`` for ``n`` tokens, and ``</s>`` points to itself (value ``n``);
* *label* streams (named in ``aux_labels`` with their count ``L``; dependency labels): values are
  label ids in ``[0, L)``, and ``</s>`` gets its own label ``L`` (a label table needs ``L + 1`` rows).
* *half-position* streams (names ending in ``_x2``; PASCAL's middle parents, which are means of
  subword spans): the file holds positions that may be halves (``6.5``, as ``nmtvariants parents``
  writes them), in ``[0, n)``; the stream carries them doubled (13), so it stays integer, and ``</s>``
  gets ``2n``.

**Extra sources**: further BPE files, line-parallel with the first source.

**Features**: a ``.npy`` float array ``[sentences, regions, channels]`` (float16 on disk), opened
memory-mapped. A sentence's row is its 0-based line index in the corpus (line number - 1), so the
file must have exactly one row per line; or, with a *feature index* file, ``number - 1`` where
``number`` is the index file's entry for that line: a 1-based line number of the uncleaned corpus,
which is exactly the ``.kept`` file that ``nmtvariants clean`` writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, read_lines


@dataclass
class ExtraInputFiles:
    """Where a corpus' extra inputs are (all optional); ``feature_channels`` is what the model reads."""

    aux: Mapping[str, PathLike] = field(default_factory=dict)
    aux_labels: Mapping[str, int] = field(default_factory=dict)
    sources: Sequence[PathLike] = ()
    features: PathLike | None = None
    feature_index: PathLike | None = None
    feature_channels: int | None = None

    def __bool__(self) -> bool:
        return bool(self.aux or self.sources or self.features is not None or self.feature_index is not None)


@dataclass
class ExtraColumns:
    """The checked extra inputs, one entry per corpus line (list index = line number - 1)."""

    aux: dict[str, list[np.ndarray]] = field(default_factory=dict)
    sources: list[list[str]] = field(default_factory=list)
    feature_rows: np.ndarray | None = None
    features: np.ndarray | None = None


def _lines(path: PathLike, expected: int, first: PathLike) -> list[str]:
    lines = list(read_lines(path))
    if len(lines) != expected:
        raise InputError(
            f"{path} has {len(lines)} lines but {first} has {expected}; every extra input must have "
            "one line per sentence of the corpus"
        )
    return lines


HALF_SUFFIX = "_x2"


def position_scale(name: str) -> int:
    """2 for a half-position stream (its values are doubled positions), else 1."""
    return 2 if name.endswith(HALF_SUFFIX) else 1


def end_value(name: str, tokens: int, aux_labels: Mapping[str, int]) -> int:
    """The value a stream gives ``</s>``: its own position, or its own label id (module docstring)."""
    return aux_labels.get(name, tokens * position_scale(name))


def _parse_values(name: str, line: str, scale: int, where: str) -> np.ndarray:
    """A line's values, doubled for a half-position stream (whose file may hold ``6.5``)."""
    try:
        if scale == 1:
            return np.array([int(v) for v in line.split()], dtype=np.int64)
        doubled = [2 * float(v) for v in line.split()]
    except ValueError:
        kind = "numbers (halves allowed)" if scale > 1 else "integers"
        raise InputError(
            f"{where}: stream {name!r} must hold whitespace-separated {kind}, got {line[:60]!r}"
        ) from None
    if any(not value.is_integer() for value in doubled):
        raise InputError(f"{where}: stream {name!r} holds a position that is not a whole or half number")
    return np.array(doubled, dtype=np.int64)


def read_stream(
    name: str, path: PathLike, src_lines: Sequence[str], src_path: PathLike, aux_labels: Mapping[str, int]
) -> list[np.ndarray]:
    """Parse and check one integer stream against the BPE lines; each row gets its ``</s>`` value."""
    rows = []
    limit_label = aux_labels.get(name)
    scale = 1 if limit_label is not None else position_scale(name)
    for number, (line, src) in enumerate(
        zip(_lines(path, len(src_lines), src_path), src_lines, strict=True), start=1
    ):
        values = _parse_values(name, line, scale, f"{path}:{number}")
        tokens = len(src.split())
        if len(values) != tokens:
            raise InputError(
                f"{path}:{number}: stream {name!r} has {len(values)} values but {src_path}:{number} has "
                f"{tokens} BPE tokens; give one value per BPE token of the first source"
            )
        limit = tokens * scale if limit_label is None else limit_label
        bad = np.nonzero((values < 0) | (values >= limit))[0]
        if len(bad):
            what = "position" if limit_label is None else "label id"
            raise InputError(
                f"{path}:{number}: stream {name!r} has {what} {values[bad[0]] / scale:g} at token {bad[0]}, "
                "outside "
                f"[0, {limit // scale}) ({'sentence length' if limit_label is None else 'label count'} "
                f"{limit // scale})"
            )
        rows.append(np.append(values, end_value(name, tokens, aux_labels)).astype(np.int32))
    return rows


def open_features(path: PathLike, channels: int | None = None) -> np.ndarray:
    """The feature grid ``[rows, regions, channels]``, memory-mapped; checks its shape."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: feature file not found")
    try:
        grid = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as error:
        raise InputError(f"{path}: not a readable .npy feature file ({error})") from None
    if grid.ndim != 3 or not np.issubdtype(grid.dtype, np.floating):
        raise InputError(
            f"{path}: expected a float array [sentences, regions, channels], got {grid.dtype} {grid.shape}"
        )
    if channels is not None and grid.shape[2] != channels:
        raise InputError(
            f"{path}: {grid.shape[2]} channels per region, but the model's feature encoder reads {channels}; "
            "extract the features with the model's settings"
        )
    return grid


def feature_rows(
    grid: np.ndarray, path: PathLike, lines: int, src_path: PathLike, index_path: PathLike | None
) -> np.ndarray:
    """Row of each corpus line in ``grid``: line index, or the index file's 1-based numbers - 1."""
    rows = grid.shape[0]
    if index_path is None:
        if rows != lines:
            raise InputError(
                f"{path}: {rows} feature rows but {src_path} has {lines} lines; the rows must follow the "
                "corpus line by line, or give a feature index (the .kept file of `nmtvariants clean`)"
            )
        return np.arange(lines, dtype=np.int64)
    index = []
    for number, line in enumerate(_lines(index_path, lines, src_path), start=1):
        try:
            value = int(line)
        except ValueError:
            raise InputError(f"{index_path}:{number}: expected a 1-based line number, got {line!r}") from None
        if not 1 <= value <= rows:
            raise InputError(
                f"{index_path}:{number}: feature index {value} (row {value - 1}) is missing from {path}, "
                f"which has {rows} rows; the index must number lines of the corpus the features follow"
            )
        index.append(value - 1)
    return np.asarray(index, dtype=np.int64)


def read_extra_inputs(files: ExtraInputFiles, src_path: PathLike, src_lines: Sequence[str]) -> ExtraColumns:
    """Read and check every extra input of a corpus whose first source is ``src_lines``."""
    columns = ExtraColumns()
    for name, count in files.aux_labels.items():
        if not isinstance(count, int) or count < 1:
            raise InputError(f"aux label count of {name!r}: must be a positive integer, got {count!r}")
    for name, path in files.aux.items():
        columns.aux[name] = read_stream(name, path, src_lines, src_path, files.aux_labels)
    columns.sources = [_lines(path, len(src_lines), src_path) for path in files.sources]
    if files.features is not None:
        columns.features = open_features(files.features, files.feature_channels)
        columns.feature_rows = feature_rows(
            columns.features, files.features, len(src_lines), src_path, files.feature_index
        )
    elif files.feature_index is not None:
        raise InputError(f"{files.feature_index}: a feature index needs a feature file")
    return columns


def model_feature_channels(model: object) -> int | None:
    """How many channels a model's feature encoder reads (None: it has none), to check files against."""
    encoder = getattr(model, "feature_encoder", None)
    return None if encoder is None else int(encoder.channels)


def parse_named(values: Sequence[str] | None, option: str) -> dict[str, str]:
    """``NAME=VALUE`` command-line items (``--aux parents=FILE``) into a mapping."""
    named: dict[str, str] = {}
    for item in values or ():
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise InputError(f"{option} {item!r}: expected NAME=VALUE")
        if name in named:
            raise InputError(f"{option}: {name!r} given twice")
        named[name] = value
    return named
