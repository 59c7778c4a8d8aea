"""Lexical probes on every layer of both stacks (Emelin et al. 2019 §4.1, Figs 3-4 and A.3 Figs 8-23).

For each side and each layer 0..N (0 = the embeddings E, k = the output of layer k, the top one after the
final LayerNorm when extracted; see :func:`~nmtvariants.analysis.similarity.stack_names`), one MLP probe
(:mod:`~nmtvariants.analysis.mlp_probe`, the authors' classifier and settings) is trained on the frozen
states to predict the subword at that position: the source token for the encoder, the decoder-input token
for the decoder, ``</s>``/``<s>`` dropped as the authors do. All layers of a side share one split by
sentence, so their accuracies compare on the same held-out tokens.

Held-out accuracy is reported overall, per frequency bin, and per label of any per-BPE-token grouping
(POS). Frequency bins (:func:`~nmtvariants.analysis.groups.frequency_bins`): sub-word *types* ranked by
count, cut into ten equal-sized bins, 1 the rarest; the counts come from a text given by the caller (the
NMT training corpus) or, by default, from the probe's own training tokens (the paper ties low accuracy
on rare sub-words to how seldom the classifier saw them). Held-out tokens of a type never counted fall
in bin 0, so the bins partition the held-out tokens.

At toy scale ``max_sentences`` / ``max_tokens`` keep the first sentences of each states file (as
``extract-states`` does).

CSV columns: ``variant``, ``side``, ``layer``, ``name`` (the capture name), ``group_kind`` (``all``,
``frequency_bin`` or a grouping's name such as ``pos``), ``group`` (``all``, the bin number or the
label), ``accuracy`` (held-out), ``count`` (held-out tokens in the group).
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
from nmtvariants.analysis.splits import split_sentences
from nmtvariants.analysis.states import StateFile
from nmtvariants.errors import InputError

COLUMNS = ("variant", "side", "layer", "name", "group_kind", "group", "accuracy", "count")
FREQUENCY = "frequency_bin"


@dataclass
class LayerProbeSettings:
    """The split and the caps; the probe itself is an :class:`MLPProbeConfig`."""

    valid_fraction: float = 0.1
    test_fraction: float = 0.2
    bins: int = 10
    max_sentences: int | None = None
    max_tokens: int | None = None
    probe: MLPProbeConfig = field(default_factory=MLPProbeConfig)


def kept_sentences(file: StateFile, max_sentences: int | None, max_tokens: int | None) -> np.ndarray:
    """Ids of the first sentences of ``file`` within the caps (at least one)."""
    return np.arange(len(cap_pairs(file.sentences, max_sentences, max_tokens)))


def probe_layers(
    file: StateFile,
    settings: LayerProbeSettings,
    test_file: StateFile | None = None,
    groups: dict[str, dict[str, np.ndarray]] | None = None,
    variant: str = "",
    sides: Sequence[str] | None = None,
) -> list[dict]:
    """One CSV row per (side, layer, group) (see the module docstring).

    ``test_file``: report on it (same model) instead of a test part split off ``file``. ``groups``:
    per side, named per-token labels aligned with the rows of the test file's side index (e.g. POS
    from :func:`~nmtvariants.analysis.groups.read_token_groups`); a ``frequency_bin`` entry there
    replaces the bins from the probe's training tokens.
    """
    if test_file is not None and test_file.vocab_size != file.vocab_size:
        raise InputError(f"{test_file.path}: made with another vocabulary than {file.path}")
    kept = kept_sentences(file, settings.max_sentences, settings.max_tokens)
    split = split_sentences(
        len(kept),
        settings.valid_fraction,
        0.0 if test_file else settings.test_fraction,
        settings.probe.seed,
    )
    train, valid = kept[split.train], kept[split.valid]
    if test_file is None:
        test_file, test = file, kept[split.test]
    else:
        test = kept_sentences(test_file, settings.max_sentences, settings.max_tokens)
    rows: list[dict] = []
    for side in file_sides(file, sides):
        names = stack_names(file, side)
        test_names = stack_names(test_file, side)
        if test_names != names:
            raise InputError(f"{test_file.path}: its {side} layers {test_names} differ from {file.path}'s")
        side_groups = dict((groups or {}).get(side, {}))
        if FREQUENCY not in side_groups:
            index = file.indices[side]
            seen = np.isin(index.sentence, train) & (index.token_index >= 0)
            counts = np.bincount(index.tokens[seen], minlength=file.vocab_size)
            side_groups[FREQUENCY] = frequency_bins(counts, settings.bins)[test_file.indices[side].tokens]
        for layer, name in enumerate(names):
            states = file.load(name)
            test_states = states if test_file is file else test_file.load(name)
            result = train_mlp_probe(
                token_set(states, train),
                token_set(states, valid),
                token_set(test_states, test, side_groups),
                file.vocab_size,
                settings.probe,
            )["test"]
            if result is None or result["tokens"] == 0:
                raise InputError(f"{test_file.path}: no held-out {side} tokens; extract more sentences")
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
