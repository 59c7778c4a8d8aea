"""Extracted states on disk: one plain ``.npz`` (no pickle) per model and test set.

Why flat arrays: a probe trains on token states, and a reconstruction probe needs whole sentences
back. Storing each representation as ``[tokens, d]`` in (sentence, position) order, with per-token
sentence index and position, serves both: a probe takes rows, and a sentence is a contiguous slice.
The per-token index arrays are the same for every name of one side (all encoder names share the
source positions, all decoder names the decoder-input positions), so they are stored once per side.

Keys of the file::

    format_version, meta (JSON string)
    sentences.{src_tokens,src_offsets,tgt_tokens,tgt_offsets,line_numbers}   the pairs (ids incl. </s>)
    {side}.tokens       the model's *input* token at each position: source ids for the encoder,
                        decoder-input ids (<s> + target) for the decoder
    {side}.sentence     row of ``sentences`` the token belongs to
    {side}.position     position in the model's sequence (0-based)
    {side}.token_index  index into the sentence's BPE tokens; -1 for </s> (encoder) and <s> (decoder)
    states:{name}       [tokens, d] float16/float32, rows aligned with ``{side}.*``, side = name's prefix
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nmtvariants.data.dataset import ParallelData
from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, atomic_write

FORMAT_VERSION = 1
SIDES = ("encoder", "decoder")
_STATES = "states:"
_INDEX_FIELDS = ("tokens", "sentence", "position", "token_index")


def side_of(name: str) -> str:
    """``encoder`` or ``decoder``: the stack a capture name belongs to (its first component)."""
    side = name.split(".", 1)[0]
    if side not in SIDES:
        raise InputError(f"{name}: a state name must start with encoder. or decoder. (capture names)")
    return side


@dataclass
class SideIndex:
    """Per-token index arrays of one side, in (sentence, position) order."""

    tokens: np.ndarray
    sentence: np.ndarray
    position: np.ndarray
    token_index: np.ndarray

    def __len__(self) -> int:
        return len(self.tokens)

    def offsets(self, sentences: int) -> np.ndarray:
        """[sentences + 1]: sentence ``i`` is rows ``offsets[i]:offsets[i+1]``."""
        return np.searchsorted(self.sentence, np.arange(sentences + 1), side="left")


@dataclass
class TokenStates:
    """One representation over the extracted sentences: ``states[k]`` belongs to token ``k`` of the index."""

    name: str
    states: np.ndarray
    index: SideIndex

    @property
    def side(self) -> str:
        return side_of(self.name)


@dataclass
class StateFile:
    """The sentences and per-side indices of an extraction file; states are read per name on demand."""

    path: Path
    sentences: ParallelData
    indices: dict[str, SideIndex]
    names: list[str]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def vocab_size(self) -> int:
        return int(self.meta["vocab_size"])

    def load(self, name: str) -> TokenStates:
        if name not in self.names:
            raise InputError(
                f"{self.path}: no states named {name!r}; the file holds {', '.join(self.names) or 'none'}"
            )
        with np.load(self.path, allow_pickle=False) as arrays:
            states = arrays[_STATES + name]
        return TokenStates(name, states, self.indices[side_of(name)])

    def sequence(self, sentence: int, side: str) -> np.ndarray:
        """A sentence's source or target ids (``tokens + </s>``)."""
        data = self.sentences
        return data.source(sentence) if side == "source" else data.target(sentence)


def write_state_file(
    path: PathLike,
    sentences: ParallelData,
    indices: dict[str, SideIndex],
    states: dict[str, np.ndarray],
    meta: dict[str, Any],
) -> None:
    """Write an extraction file atomically (see the module docstring for the keys)."""
    arrays: dict[str, np.ndarray] = {
        "format_version": np.int64(FORMAT_VERSION),
        "meta": np.str_(json.dumps({**meta, "names": sorted(states)}, sort_keys=True)),
        "sentences.src_tokens": sentences.src_tokens,
        "sentences.src_offsets": sentences.src_offsets,
        "sentences.tgt_tokens": sentences.tgt_tokens,
        "sentences.tgt_offsets": sentences.tgt_offsets,
        "sentences.line_numbers": sentences.line_numbers,
    }
    for side, index in indices.items():
        for key in _INDEX_FIELDS:
            arrays[f"{side}.{key}"] = getattr(index, key)
    for name, array in states.items():
        if len(array) != len(indices[side_of(name)]):
            raise ValueError(f"{name}: {len(array)} rows but the {side_of(name)} index has a different count")
        arrays[_STATES + name] = array
    with atomic_write(path, "wb") as out:
        np.savez(out, **arrays)


def read_state_file(path: PathLike) -> StateFile:
    """Open an extraction file: sentences, indices and metadata now, states per name later."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: states file not found; create it with `nmtvariants extract-states`")
    try:
        with np.load(path, allow_pickle=False) as arrays:
            version = int(arrays["format_version"])
            if version != FORMAT_VERSION:
                raise InputError(
                    f"{path}: states format version {version}, expected {FORMAT_VERSION}; "
                    "re-run `nmtvariants extract-states`"
                )
            meta = json.loads(str(arrays["meta"]))
            sentences = ParallelData(
                src_tokens=arrays["sentences.src_tokens"],
                src_offsets=arrays["sentences.src_offsets"],
                tgt_tokens=arrays["sentences.tgt_tokens"],
                tgt_offsets=arrays["sentences.tgt_offsets"],
                line_numbers=arrays["sentences.line_numbers"],
                source_name=str(meta.get("source", "")),
            )
            indices = {
                side: SideIndex(*(arrays[f"{side}.{key}"] for key in _INDEX_FIELDS))
                for side in SIDES
                if f"{side}.tokens" in arrays.files
            }
    except (OSError, ValueError, KeyError) as error:
        raise InputError(
            f"{path}: not a readable states file ({error}); re-run `nmtvariants extract-states`"
        ) from None
    return StateFile(path, sentences, indices, list(meta["names"]), meta)
