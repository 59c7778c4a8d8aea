"""From an extraction file to what the probes train on: token sets (MLP) and sentence pairs
(reconstruction), for the sentences of one part of a split."""

from __future__ import annotations

import numpy as np

from nmtvariants.analysis.mlp_probe import TokenSet
from nmtvariants.analysis.reconstruction_probe import SequencePair
from nmtvariants.analysis.states import StateFile, TokenStates
from nmtvariants.errors import ConfigError

DECODE = ("source", "target")


def token_set(
    states: TokenStates,
    sentences: np.ndarray,
    groups: dict[str, np.ndarray] | None = None,
    keep_special: bool = False,
) -> TokenSet:
    """Rows of ``sentences``, labelled with the input token at each position. Without
    ``keep_special`` the </s> (encoder) and <s> (decoder) states are dropped, as the authors do."""
    index = states.index
    rows = np.isin(index.sentence, sentences)
    if not keep_special:
        rows &= index.token_index >= 0
    return TokenSet(
        features=states.states[rows],
        labels=index.tokens[rows],
        groups={name: values[rows] for name, values in (groups or {}).items()},
    )


def sequence_pairs(
    file: StateFile, states: TokenStates, sentences: np.ndarray, decode: str
) -> list[SequencePair]:
    """One pair per sentence: its representation sequence and its source or target ids."""
    if decode not in DECODE:
        raise ConfigError(f"decode must be one of {DECODE}, got {decode!r}")
    offsets = states.index.offsets(len(file.sentences))
    return [
        SequencePair(
            memory=states.states[offsets[s] : offsets[s + 1]],
            target=file.sequence(int(s), decode).astype(np.int64),
        )
        for s in sentences
    ]


def default_causal(side: str, decode: str) -> bool:
    """Decoder states force-decoding the target need the causal memory mask (else the probe copies)."""
    return side == "decoder" and decode == "target"
