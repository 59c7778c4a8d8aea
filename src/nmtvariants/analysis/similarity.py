"""Cosine similarity between the embedding layer and every layer of a stack (Emelin et al. 2019, Figs 6-7).

The authors' computation (``lexical_probing.py``, ``embed_sim_eval``; seed brief §1.7), reproduced with
its quirks:

* **one cosine per sentence over the flattened states**: the [T, d] matrix of layer 0 (E) and that of
  layer k are each flattened into one long vector and compared with one cosine. That is
  ``sum_t <e_t, h_t> / (||E||_F ||H||_F)``, a norm-weighted mix of the tokens, *not* the mean of
  per-token cosines. Their test script runs batches of one sentence, so their reported figure is the
  per-sentence cosine averaged over sentences (every sentence weighs the same, whatever its length).
* **special positions dropped**: the encoder's final ``</s>`` and the decoder's leading ``<s>`` are
  left out, as in their probes (``token_index >= 0`` in the states file). Sentences with no other
  position (an empty line) contribute nothing.
* the top layer is the stack output *after* the final LayerNorm when the file holds ``{side}.output``
  (the authors' layer 6 includes it), otherwise ``{side}.layers.{N-1}``.

Their padding could leak into the flattened vectors for batches of more than one sentence; here
padding never reaches the states file. For comparison the CSV also carries ``token_cosine``, the
plain mean over tokens of per-token cosines.

Output: a long CSV, one row per (variant, side, layer), so a plot is ``x=layer, y=cosine,
hue=variant`` faceted by ``side``. Columns:

``variant``       the label given for the states file (e.g. baseline, lexical, feature_fusion)
``side``          encoder | decoder
``layer``         0 = embeddings E, k = the output of layer k (1-based)
``name``          the capture name whose states were compared with E
``cosine``        the authors' figure: mean over sentences of the flattened per-sentence cosine
``token_cosine``  mean over tokens of the per-token cosine
``sentences``     sentences averaged over; ``tokens``: token positions compared
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from nmtvariants.analysis.states import SIDES, StateFile
from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, atomic_write

COLUMNS = ("variant", "side", "layer", "name", "cosine", "token_cosine", "sentences", "tokens")


def stack_names(file: StateFile, side: str) -> list[str]:
    """Capture names of layers 0..N of ``side`` in the file: embeddings, layers.0 .. layers.N-2, and the
    top layer (``{side}.output`` if extracted, the authors' final-LayerNorm-included state, else
    ``{side}.layers.{N-1}``)."""
    pattern = re.compile(rf"{side}\.layers\.(\d+)")
    depth = 1 + max((int(m.group(1)) for n in file.names if (m := pattern.fullmatch(n))), default=-1)
    wanted = [f"{side}.embeddings", *(f"{side}.layers.{i}" for i in range(depth))]
    missing = [name for name in wanted if name not in file.names]
    if depth == 0 or missing:
        missing = missing or [f"{side}.layers.0"]
        raise InputError(
            f"{file.path}: the {side} stack is incomplete (missing {', '.join(missing)}); "
            f"extract it with --names '{side}.embeddings' '{side}.layers.[0-9]' '{side}.output'"
        )
    if f"{side}.output" in file.names:
        wanted[-1] = f"{side}.output"
    return wanted


def file_sides(file: StateFile, sides: Sequence[str] | None = None) -> list[str]:
    """The requested sides (default: every side the file has states of), each checked to be present."""
    have = [side for side in SIDES if any(name.startswith(f"{side}.") for name in file.names)]
    chosen = list(sides) if sides else have
    absent = [side for side in chosen if side not in have]
    if absent or not chosen:
        absent = absent or list(SIDES)
        raise InputError(
            f"{file.path}: no {', '.join(absent)} states; the file holds {', '.join(file.names)}"
        )
    return chosen


def cosines(embeddings: np.ndarray, states: np.ndarray, sentence: np.ndarray) -> tuple[float, float, int]:
    """(mean per-sentence flattened cosine, mean per-token cosine, sentences) over aligned rows."""
    e, h = embeddings.astype(np.float64), states.astype(np.float64)
    dot, ee, hh = (e * h).sum(1), (e * e).sum(1), (h * h).sum(1)
    _, sentence = np.unique(sentence, return_inverse=True)
    per_sentence = np.bincount(sentence, dot) / np.sqrt(np.bincount(sentence, ee) * np.bincount(sentence, hh))
    per_token = dot / np.sqrt(ee * hh)
    return float(per_sentence.mean()), float(per_token.mean()), len(per_sentence)


def layer_similarity(file: StateFile, variant: str = "", sides: Sequence[str] | None = None) -> list[dict]:
    """One row per (side, layer) of ``file``: see the module docstring for the columns."""
    rows = []
    for side in file_sides(file, sides):
        names = stack_names(file, side)
        index = file.indices[side]
        keep = index.token_index >= 0
        if not keep.any():
            raise InputError(f"{file.path}: the {side} states hold no token besides </s> and <s>")
        embeddings = file.load(names[0]).states[keep]
        for layer, name in enumerate(names):
            cosine, token_cosine, sentences = cosines(
                embeddings, file.load(name).states[keep], index.sentence[keep]
            )
            rows.append(
                {
                    "variant": variant,
                    "side": side,
                    "layer": layer,
                    "name": name,
                    "cosine": cosine,
                    "token_cosine": token_cosine,
                    "sentences": sentences,
                    "tokens": int(keep.sum()),
                }
            )
    return rows


def write_csv(path: PathLike, rows: list[dict], columns: Sequence[str]) -> None:
    """Rows as a CSV with a fixed column order, atomically."""
    with atomic_write(path) as out:
        pd.DataFrame(rows, columns=list(columns)).to_csv(out, index=False, lineterminator="\n")
