"""Per-token groupings for probe breakdowns: labels read from a file parallel to the test set, and
frequency bins (Emelin et al. App. A.3: sub-word types in ten equal-sized bins, 1 the rarest).

A grouping file has one line per line of the probed side's BPE text (the file the states were
extracted from), one label per BPE token, e.g. POS tags projected onto subwords. States at ``</s>``
(encoder) and ``<s>`` (decoder) have no BPE token; they get the label :data:`SPECIAL`.
"""

from __future__ import annotations

import numpy as np

from nmtvariants.analysis.states import SideIndex
from nmtvariants.data.dataset import ParallelData
from nmtvariants.data.vocab import Vocabulary
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.fileio import PathLike, read_lines

SPECIAL = "<special>"


def read_token_groups(path: PathLike, sentences: ParallelData, index: SideIndex, side: str) -> np.ndarray:
    """Labels [tokens] (strings) for the rows of ``index`` from a grouping file parallel to the text."""
    wanted = {int(n): s for s, n in enumerate(sentences.line_numbers)}
    lengths = (sentences.src_lengths if side == "encoder" else sentences.tgt_lengths) - 1
    per_sentence: list[list[str] | None] = [None] * len(sentences)
    for number, line in enumerate(read_lines(path), start=1):
        if number in wanted:
            labels = line.split()
            row = wanted[number]
            if len(labels) != lengths[row]:
                raise InputError(
                    f"{path}:{number}: {len(labels)} labels but the BPE line has {lengths[row]} tokens; "
                    "give one label per BPE token"
                )
            per_sentence[row] = labels
    missing = [n for n, s in wanted.items() if per_sentence[s] is None]
    if missing:
        raise InputError(f"{path}: ends before line {min(missing)} of the extracted test set")
    out = np.full(len(index), SPECIAL, dtype=object)
    for row, (sentence, k) in enumerate(
        zip(index.sentence.tolist(), index.token_index.tolist(), strict=True)
    ):
        if k >= 0:
            out[row] = per_sentence[sentence][k]
    return out.astype(str)


def token_counts(path: PathLike, vocab: Vocabulary) -> np.ndarray:
    """How often each vocabulary id occurs in a BPE'd text (no ``</s>``)."""
    counts = np.zeros(len(vocab), dtype=np.int64)
    for line in read_lines(path):
        np.add.at(counts, vocab.encode(line, add_eos=False), 1)
    return counts


def frequency_bins(counts: np.ndarray, bins: int = 10) -> np.ndarray:
    """Bin [V] per id: the types seen (count > 0), ranked by count (ties by id), cut into ``bins``
    equal-sized bins numbered 1 (rarest) .. ``bins`` (most frequent); unseen types get 0."""
    if bins < 1:
        raise ConfigError(f"bins must be positive, got {bins}")
    seen = np.flatnonzero(counts > 0)
    ranked = seen[np.lexsort((seen, counts[seen]))]
    out = np.zeros(len(counts), dtype=np.int64)
    for number, chunk in enumerate(np.array_split(ranked, bins), start=1):
        out[chunk] = number
    return out
