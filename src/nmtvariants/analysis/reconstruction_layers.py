"""Reconstruction probes on every decoder layer and module (Yang et al. 2020, Figs 3, 8 and 10).

For a trained model and a BPE'd test set, the states of every decoder layer's modules are extracted
once (:func:`~nmtvariants.analysis.extract.extract_states`: eval mode, teacher forcing on the
reference target, no gradients), then one reconstruction probe
(:mod:`~nmtvariants.analysis.reconstruction_probe`, the one probe implementation of the project) is
trained per (sentence reconstructed, layer, module) on the frozen states, and its held-out perplexity
becomes one CSV row.

What is probed, per decoder layer (names from
:func:`~nmtvariants.analysis.decoder_modules.decoder_module_names`, so every layout is read the same
way): TEM, SEM (the encoder-attention output before its residual), IFM (the layer output) and, inside
IFM, Add-NormI, FF and Add-Norm. A module the layout lacks has no row (``sem_ifm`` has no TEM,
``simplified`` no FF or Add-Norm). The encoder output is probed once as a reference, under module
``Encoder`` at layer 0 (decoder layers are 1-based, as in the paper's figures, so a plot draws it
as the point or line below layer 1).

Choices (seed brief §3.3, "suggested" there):

* the source sentence (``tokens + </s>``) is decoded with the whole representation visible; the
  target sentence from decoder states with the causal memory mask
  (:func:`~nmtvariants.analysis.probe_data.default_causal`), so the probe cannot copy the next word
  out of the translation history (a low masked perplexity then means the state holds the *next*
  word, as the NMT model's own prediction does); the encoder output never saw the target, so it
  needs no mask;
* one seeded split by sentence (train / valid for early stopping / test for the reported figures)
  is shared by every probe, so all curves compare on the same held-out sentences; the probe's seed
  is the split's seed, as in ``nmtvariants probe``. The paper trains its probes on the MT training
  set and reports on a held-out set: give a separate test set and the split only holds train and
  valid;
* where two modules hold the same tensor (IFM and Add-Norm of a post-norm layer with an FFN; IFM and
  Add-NormI in ``simplified``) the probe is trained once and its figures are written for both: the
  probe is deterministic for a given seed and input, so the second run would repeat the first.

Memory: all states are kept in memory at once (``tokens x d x modules``; at base scale and 6
layers about 37 arrays of 2 KiB per token in float32), hence ``max_sentences`` / ``max_tokens`` and
the float16 option.

CSV columns (:data:`COLUMNS`): ``variant`` (a label), ``target_side`` (``source`` or ``target``: the
sentence reconstructed), ``layer``, ``module``, ``name`` (the capture name), ``perplexity``, ``nll``
and ``accuracy`` (held-out forced decoding), ``tokens`` (held-out tokens), ``best_epoch``.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nmtvariants.analysis.decoder_modules import decoder_module_names
from nmtvariants.analysis.extract import cap_pairs, extract_states
from nmtvariants.analysis.probe_data import DECODE, default_causal, sequence_pairs
from nmtvariants.analysis.reconstruction_probe import ReconstructionConfig, train_reconstruction_probe
from nmtvariants.analysis.splits import split_sentences
from nmtvariants.analysis.states import StateFile, TokenStates, side_of
from nmtvariants.data.dataset import ParallelData
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.fileio import PathLike, atomic_write

log = logging.getLogger(__name__)

DECODER_MODULES = ("TEM", "SEM", "Add-NormI", "FF", "Add-Norm", "IFM")
ENCODER = "Encoder"
ENCODER_NAME = "encoder.output"
MODULES = (*DECODER_MODULES, ENCODER)
COLUMNS = (
    "variant",
    "target_side",
    "layer",
    "module",
    "name",
    "perplexity",
    "nll",
    "accuracy",
    "tokens",
    "best_epoch",
)


@dataclass(frozen=True)
class Representation:
    """One probed state: ``layer`` 1..N for the decoder, 0 for the encoder output."""

    layer: int
    module: str
    name: str


@dataclass
class ReconstructionLayerSettings:
    """The split, the caps, what to probe; the probe itself is a :class:`ReconstructionConfig`."""

    valid_fraction: float = 0.1
    test_fraction: float = 0.2
    max_sentences: int | None = None
    max_tokens: int | None = None
    decode: tuple[str, ...] = DECODE
    modules: tuple[str, ...] = MODULES
    batch_size: int = 32
    dtype: Any = np.float32
    probe: ReconstructionConfig = field(default_factory=ReconstructionConfig)


def representations(model: torch.nn.Module, modules: Sequence[str] = MODULES) -> list[Representation]:
    """The encoder output (if ``Encoder`` is in ``modules``) and every decoder layer's ``modules``
    that the model's layout has, bottom layer first, in :data:`MODULES` order within a layer."""
    unknown = sorted(set(modules) - set(MODULES))
    if unknown or not modules:
        raise ConfigError(f"modules: {', '.join(unknown) or 'none given'}; choose from {', '.join(MODULES)}")
    if getattr(model, "n_memories", 1) != 1:
        raise ConfigError("reconstruction probes per layer need a single-source model (one encoder memory)")
    layout = model.cfg.variant.get("decoder_layout", "standard")
    chosen = [Representation(0, ENCODER, ENCODER_NAME)] if ENCODER in modules else []
    for layer in range(len(model.decoder_layers)):
        names = decoder_module_names(layout, layer)
        chosen += [
            Representation(layer + 1, m, names[m]) for m in DECODER_MODULES if m in modules and m in names
        ]
    return chosen


def reconstruction_layers(
    model: torch.nn.Module,
    data: ParallelData,
    settings: ReconstructionLayerSettings,
    variant: str = "",
    test_data: ParallelData | None = None,
) -> list[dict[str, Any]]:
    """Extract the states of :func:`representations` over ``data`` and probe each; one row per
    (target_side, layer, module), sides in ``settings.decode`` order.

    ``test_data``: report on these pairs (the paper's protocol: probes trained on MT training data,
    perplexity on a held-out test set) instead of a test part split off ``data``; the caps apply to
    both.
    """
    for side in settings.decode:
        if side not in DECODE:
            raise ConfigError(f"decode: {side!r} is not one of {', '.join(DECODE)}")
    test_fraction = 0.0 if test_data is not None else settings.test_fraction
    if test_data is None and test_fraction <= 0:
        raise ConfigError(f"test_fraction must be > 0 (the held-out part), got {test_fraction}")
    chosen = representations(model, settings.modules)
    file, states = _extract(model, data, chosen, settings)
    split = split_sentences(len(file.sentences), settings.valid_fraction, test_fraction, settings.probe.seed)
    if test_data is None:
        test_file, test_states, test = file, states, split.test
    else:
        test_file, test_states = _extract(model, test_data, chosen, settings)
        test = np.arange(len(test_file.sentences))
    rows = []
    for side in settings.decode:
        probed: list[tuple[Representation, dict[str, Any]]] = []
        for rep in chosen:
            same = next(
                (
                    figures
                    for other, figures in probed
                    if _same_states(states, other, rep) and _same_states(test_states, other, rep)
                ),
                None,
            )
            if same is None:
                parts = [
                    sequence_pairs(file, states[rep.name], split.train, side),
                    sequence_pairs(file, states[rep.name], split.valid, side),
                    sequence_pairs(test_file, test_states[rep.name], test, side),
                ]
                causal = default_causal(side_of(rep.name), side)
                same = _figures(
                    rep, train_reconstruction_probe(*parts, file.vocab_size, causal, settings.probe)
                )
            probed.append((rep, same))
            rows.append(
                {
                    "variant": variant,
                    "target_side": side,
                    "layer": rep.layer,
                    "module": rep.module,
                    "name": rep.name,
                    **same,
                }
            )
            log.info(
                "%s %s layer %d %s: perplexity %.3f", variant, side, rep.layer, rep.module, same["perplexity"]
            )
    return rows


def _extract(
    model: torch.nn.Module,
    data: ParallelData,
    chosen: Sequence[Representation],
    settings: ReconstructionLayerSettings,
) -> tuple[StateFile, dict[str, TokenStates]]:
    """The capped pairs' states as an in-memory states file: the view a probe gets from disk."""
    data = cap_pairs(data, settings.max_sentences, settings.max_tokens)
    indices, arrays = extract_states(
        model, data, [r.name for r in chosen], settings.batch_size, settings.probe.device, settings.dtype
    )
    file = StateFile(Path("<memory>"), data, indices, sorted(arrays), {"vocab_size": int(model.vocab_size)})
    return file, {r.name: TokenStates(r.name, arrays[r.name], indices[side_of(r.name)]) for r in chosen}


def _same_states(states: dict[str, TokenStates], first: Representation, second: Representation) -> bool:
    a, b = states[first.name], states[second.name]
    return a.side == b.side and a.states.shape == b.states.shape and np.array_equal(a.states, b.states)


def _figures(rep: Representation, report: dict[str, Any]) -> dict[str, Any]:
    test = report["test"]
    if test is None or test["tokens"] == 0:
        raise InputError(f"{rep.name}: no held-out sentences to report on; give more sentences")
    return {
        "perplexity": test["perplexity"],
        "nll": test["nll"],
        "accuracy": test["accuracy"],
        "tokens": test["tokens"],
        "best_epoch": report["best_epoch"],
    }


def write_csv(path: PathLike, rows: Sequence[dict[str, Any]]) -> None:
    """The rows of :func:`reconstruction_layers` as CSV (header :data:`COLUMNS`), atomically."""
    with atomic_write(path) as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
