"""Lexical probes on every layer of both stacks (Emelin et al. 2019 §4.1, Figs 3-4 and A.3 Figs 8-23).

For each side and each layer 0..N (0 = the embeddings E, k = the output of layer k, the top one after the
final LayerNorm when extracted; see :func:`~nmtvariants.analysis.similarity.stack_names`), one MLP probe
(:mod:`~nmtvariants.analysis.mlp_probe`, the authors' classifier and settings) is trained on the frozen
states to predict the subword at that position: the source token for the encoder, the decoder-input token
for the decoder, ``</s>``/``<s>`` dropped as the authors do.

The protocol is the authors' (seed brief §1.7): each probe trains on the states of (a sample of) the NMT
training corpus, early-stops on those of the development set and reports on the test set ("a withheld
test set", §4.1), three states files of the same model. Probing a split of the test set instead would
train the probe on the sentences it is scored on the neighbours of, and give rare sub-words far fewer
training states than the paper's classifiers saw.

Held-out accuracy is reported overall, per frequency bin, and per label of any per-BPE-token grouping
(POS) of the test file. Frequency bins (:func:`~nmtvariants.analysis.groups.frequency_bins`): sub-word
*types* ranked by count, cut into ten equal-sized bins, 1 the rarest; the counts come from a text given
by the caller (the whole NMT training corpus) or, by default, from the probe's own training tokens (the
paper ties low accuracy on rare sub-words to how seldom the classifier saw them). Test tokens of a type
never counted fall in bin 0, so the bins partition the test tokens.

``max_sentences`` / ``max_tokens`` keep the first sentences of each states file (as ``extract-states``
does).

CSV columns: ``variant``, ``side``, ``layer``, ``name`` (the capture name), ``group_kind`` (``all``,
``frequency_bin`` or a grouping's name such as ``pos``), ``group`` (``all``, the bin number or the
label), ``accuracy`` (on the test file), ``count`` (test tokens in the group).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from nmtvariants.analysis.extract import cap_pairs
from nmtvariants.analysis.groups import frequency_bins
from nmtvariants.analysis.mlp_probe import MLPProbeConfig, train_mlp_probe
from nmtvariants.analysis.probe_data import token_set
from nmtvariants.analysis.similarity import file_sides, stack_names
from nmtvariants.analysis.states import StateFile
from nmtvariants.errors import InputError

COLUMNS = ("variant", "side", "layer", "name", "group_kind", "group", "accuracy", "count")
FREQUENCY = "frequency_bin"


@dataclass
class LayerProbeSettings:
    """The caps and the frequency bins; the probe itself is an :class:`MLPProbeConfig`."""

    bins: int = 10
    max_sentences: int | None = None
    max_tokens: int | None = None
    probe: MLPProbeConfig = field(default_factory=MLPProbeConfig)


def kept_sentences(file: StateFile, max_sentences: int | None, max_tokens: int | None) -> np.ndarray:
    """Ids of the first sentences of ``file`` within the caps (at least one)."""
    return np.arange(len(cap_pairs(file.sentences, max_sentences, max_tokens)))


def probe_layers(
    train_file: StateFile,
    valid_file: StateFile,
    test_file: StateFile,
    settings: LayerProbeSettings,
    groups: dict[str, dict[str, np.ndarray]] | None = None,
    variant: str = "",
    sides: Sequence[str] | None = None,
) -> list[dict]:
    """One CSV row per (side, layer, group) (see the module docstring): each probe trains on
    ``train_file``, early-stops on ``valid_file`` and is scored on ``test_file``.

    ``groups``: per side, named per-token labels aligned with the rows of the test file's side index
    (e.g. POS from :func:`~nmtvariants.analysis.groups.read_token_groups`); a ``frequency_bin`` entry
    there replaces the bins from the probe's training tokens.
    """
    files = {"train": train_file, "valid": valid_file, "test": test_file}
    for file in files.values():
        if file.vocab_size != train_file.vocab_size:
            raise InputError(f"{file.path}: made with another vocabulary than {train_file.path}")
    kept = {
        part: kept_sentences(file, settings.max_sentences, settings.max_tokens)
        for part, file in files.items()
    }
    rows: list[dict] = []
    for side in file_sides(train_file, sides):
        names = stack_names(train_file, side)
        for part in ("valid", "test"):
            found = stack_names(files[part], side)
            if found != names:
                raise InputError(
                    f"{files[part].path}: its {side} layers {found} differ from {train_file.path}'s"
                )
        side_groups = dict((groups or {}).get(side, {}))
        if FREQUENCY not in side_groups:
            index = train_file.indices[side]
            seen = np.isin(index.sentence, kept["train"]) & (index.token_index >= 0)
            counts = np.bincount(index.tokens[seen], minlength=train_file.vocab_size)
            side_groups[FREQUENCY] = frequency_bins(counts, settings.bins)[test_file.indices[side].tokens]
        for layer, name in enumerate(names):
            result = train_mlp_probe(
                token_set(train_file.load(name), kept["train"]),
                token_set(valid_file.load(name), kept["valid"]),
                token_set(test_file.load(name), kept["test"], side_groups),
                train_file.vocab_size,
                settings.probe,
            )["test"]
            if result is None or result["tokens"] == 0:
                raise InputError(f"{test_file.path}: no {side} tokens to test on; extract more sentences")
            common = {"variant": variant, "side": side, "layer": layer, "name": name}
            rows.append({**common, "group_kind": "all", "group": "all", **_figures(result)})
            for kind, per_label in result["groups"].items():
                for label, figures in sorted(per_label.items(), key=lambda item: _label_key(item[0])):
                    rows.append({**common, "group_kind": kind, "group": label, **_figures(figures)})
    return rows


def _figures(result: dict) -> dict:
    return {"accuracy": result["accuracy"], "count": result["tokens"]}


def _label_key(label: str) -> tuple[int, int | str]:
    """Numbers (frequency bins) in numeric order, then other labels alphabetically."""
    return (0, int(label)) if label.isdigit() else (1, label)
