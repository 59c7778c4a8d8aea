"""Libovický, Helcl & Mareček (2018): the study's attention figure, its tables and the user's images.

**Further sources** are not segmented here: a multi-source run's pair learns its joint BPE on every
source language and the target (``corpora.<c>.preprocess.bpe.shared_with``, rules/preprocess.smk), one
sub-word vocabulary as in the paper, and each further language goes through the pair's chain; the
study's rule only links the pair's ``bpe/<split>.<lang>`` to the input name ``inputs/<split>.src_<lang>``.

**Attention over sources** (the paper's Figure 2): under teacher forcing, the share of each memory in
each decoder layer's cross-attention, averaged over heads and the real target positions: for
``hierarchical``, the second-level weights (``decoder.layers.{l}.cross.hier.weights``); for ``flat``,
the probability mass of the one attention over each memory's slice of the concatenated keys
(``decoder.layers.{l}.cross.weights``). ``serial`` and ``parallel`` normalise each memory's attention
on its own, so they have no share to show.

**Tables 1 and 2**: per system the clean BLEU and METEOR (``evaluate --preprocess multi30k``) and, per
randomised input, the mean and standard deviation of BLEU over the derangement seeds
(``adversarial-summary``), each of one training run; over a system's training seeds (``seeds:``)
each of these is reported as mean ± sample sd with n (nmtvariants.reporting.replicas). Under each,
its deviations from the paper (:data:`DEVIATIONS`; the conditions come from the study's plan,
``Libovicky2018Plan.table_conditions``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from nmtvariants.data.batching import collate
from nmtvariants.data.dataset import ParallelData
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.fileio import PathLike, atomic_write
from nmtvariants.models.hooks import capture
from nmtvariants.reporting.deviations import Deviation
from nmtvariants.reporting.replicas import aggregate_replicas, sd_column
from nmtvariants.reporting.results import UNRECORDED_SEED, metric_label

TABLE_KEYS = ("table1_mmt", "table2_multisource")
# Every known difference from the paper behind Tables 1 and 2 (reporting/deviations.py). ``when``:
# a condition Libovicky2018Plan.table_conditions reports from the config.
DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "meteor",
        TABLE_KEYS,
        "METEOR (NLTK, English resources) is NLTK's `meteor_score` (Meteor 1.0 parameters for every "
        "language, English Porter stems and WordNet synonyms, no paraphrase tables or function-word "
        "weights, the mean of sentence scores), not Meteor 1.5 in MultEval as in the paper: on German, "
        "French and Czech targets it is close to an exact-match METEOR, so it ranks these systems but is "
        "not comparable with the paper's numbers. With the Meteor 1.5 release, set `meteor.home`.",
        when="nltk_meteor",
    ),
    Deviation(
        "bpe",
        TABLE_KEYS,
        "Sub-words: a joint BPE (subword-nmt) where the paper used word-piece vocabularies (about 40k "
        "per multimodal pair, 48k over the five Europarl languages).",
    ),
    Deviation(
        "baseline_vocabulary",
        ("table2_multisource",),
        "The single-source baseline shares the multi-source runs' joint vocabulary over every language; "
        "the paper's EN-CS baseline had its own (42k word-pieces of Czech and English).",
    ),
    Deviation(
        "toyworld",
        TABLE_KEYS,
        "Data: the generated toyworld corpus (its rendered scenes as the images, its French-like side "
        "as the further source), not the paper's Multi30k and Europarl.",
        when="toyworld",
    ),
    Deviation(
        "multi30k_sources",
        ("table2_multisource",),
        "Multi-source data: Multi30k EN+DE+FR -> CS (the four languages are sentence-parallel there) in "
        "place of the paper's Europarl ES+FR+DE+EN -> CS, with the smaller Europarl model.",
        when="multi30k_sources",
    ),
    Deviation(
        "europarl_intersection",
        ("table2_multisource",),
        "Europarl 5-way corpus: the paper only says the bilingual corpora were intersected on English; "
        "here whitespace is normalised, English sentences with more than one distinct translation in a "
        "bitext are dropped, and the 1k valid and 1k test tuples are drawn with a fixed seed "
        "(corpora/europarl.py).",
        when="europarl",
    ),
    Deviation(
        "untrained_image_features",
        ("table1_mmt",),
        "Image features from a fixed-seed, untrained ResNet built offline, not from a ResNet trained on "
        "ImageNet as in the paper: the images enter the model, but without ImageNet's visual features.",
        when="untrained_image_features",
    ),
    Deviation(
        "standardised_image_features",
        ("table1_mmt",),
        "Each image region's feature vector is standardised at extraction (mean 0, variance 1 over its "
        "channels; image_features.standardise): the untrained ResNet's all-positive vectors would "
        "otherwise take the flat strategy's attention. The paper projects the raw features; the image "
        "encoder itself is the paper's linear projection.",
        when="standardised_image_features",
    ),
    Deviation(
        "image_layer_norm",
        ("table1_mmt",),
        "The image encoder has a LayerNorm after the linear projection (features.layer_norm), which the "
        "paper and Neural Monkey do not have: it puts the image states on the text states' scale, which "
        "bears on the flat strategy's result (the paper: no common representation of the modalities "
        "was found).",
        when="image_layer_norm",
    ),
)


def check_user_images(images: PathLike, image_list: PathLike, gate: str) -> int:
    """Number of images a split list names, all present in ``images``; otherwise a
    :class:`MissingResourceError` saying where to get them (``gate``) and where to put them."""
    from nmtvariants.errors import MissingResourceError
    from nmtvariants.fileio import read_lines
    from nmtvariants.vision.features import image_file

    folder = Path(images)
    names = [line.strip() for line in read_lines(image_list) if line.strip()]
    missing = [name for name in names if not (folder / image_file(name)).is_file()]
    if missing:
        raise MissingResourceError(
            f"{image_list}: {len(missing)} of {len(names)} images missing from {folder} (first: "
            f"{image_file(missing[0])}): {gate}. Put the images in {folder} (the config's "
            "image_features.images) and run the workflow again"
        )
    return len(names)


# --- attention over sources ------------------------------------------------------------------------


@torch.no_grad()
def source_attention(
    model: torch.nn.Module, data: ParallelData, memory_names: Sequence[str], batch_size: int = 32
) -> pd.DataFrame:
    """Rows (layer, memory, share): each memory's mean share of every decoder layer's cross-attention
    over ``data`` under teacher forcing (eval mode; layers numbered from 1). ``memory_names`` label the
    model's memories in order (text sources, then the feature grid)."""
    strategy = model.multi_source.strategy
    if strategy not in ("flat", "hierarchical"):
        raise ConfigError(
            f"attention over sources: strategy {strategy!r} normalises each memory's attention on its own; "
            "only flat and hierarchical models have a share per memory"
        )
    if len(memory_names) != model.n_memories:
        raise ConfigError(
            f"attention over sources: {len(memory_names)} memory names ({', '.join(memory_names)}) for a "
            f"model with {model.n_memories} memories"
        )
    layers = len(model.decoder_layers)
    totals = np.zeros((layers, len(memory_names)), dtype=np.float64)
    positions = 0
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(data), batch_size):
            rows = np.arange(start, min(start + batch_size, len(data)))
            batch = collate(data, rows)
            with capture(model, attention=True, include=("decoder.layers.*.cross*weights",)) as rec:
                memories = model.encode_inputs(batch.inputs)
                model.decode_states(batch.tgt_in, memories, aux=batch.inputs.aux)
            widths = [memory.states.size(1) for memory in memories]
            lengths = torch.as_tensor(data.tgt_lengths[rows])
            real = torch.arange(batch.tgt_in.size(1))[None, :] < lengths[:, None]  # [B, T]
            for layer in range(layers):
                shares = _layer_shares(rec, layer, strategy, widths, len(rows), batch.tgt_in.size(1))
                totals[layer] += shares[real].sum(dim=0).double().numpy()  # [B, T, N] -> [N]
            positions += int(real.sum())
    finally:
        model.train(was_training)
    records = [
        {"layer": layer + 1, "memory": name, "share": totals[layer, k] / positions}
        for layer in range(layers)
        for k, name in enumerate(memory_names)
    ]
    return pd.DataFrame.from_records(records, columns=["layer", "memory", "share"])


def _layer_shares(
    recorder: Any, layer: int, strategy: str, widths: Sequence[int], rows: int, steps: int
) -> torch.Tensor:
    """[B, T, N]: each memory's share at each query position, averaged over heads."""
    if strategy == "hierarchical":
        (weights,) = recorder[f"decoder.layers.{layer}.cross.hier.weights"]  # [B*T, H, 1, N]
        return weights.float().mean(dim=1)[:, 0, :].reshape(rows, steps, len(widths))
    (weights,) = recorder[f"decoder.layers.{layer}.cross.weights"]  # [B, H, T, S_1 + ... + S_N]
    mass = [part.sum(dim=-1) for part in weights.float().split(list(widths), dim=-1)]  # N x [B, H, T]
    return torch.stack(mass, dim=-1).mean(dim=1)


# --- tables ----------------------------------------------------------------------------------------


@dataclass
class System:
    """One replica of a row of Table 1 or 2: the clean scores of a system trained with one ``seed``
    and, for a multi-input system, its adversarial summary over the derangement seeds
    (``adversarial-summary --json``). The replicas of one ``row`` (default: a row of its own) are
    averaged over their training seeds."""

    pair: str
    testset: str
    label: str
    clean: Mapping[str, Any]
    adversarial: Mapping[str, Any] | None = None
    seed: object = UNRECORDED_SEED
    row: int | None = None


def meteor_label(record: Mapping[str, Any]) -> str:
    """The METEOR column's label: which METEOR the record holds (NLTK's or Meteor 1.5)."""
    return metric_label("meteor", record.get("scores", {}).get("meteor"))


def _score(record: Mapping[str, Any], metric: str, where: str) -> float:
    entry = record.get("scores", {}).get(metric)
    if not isinstance(entry, Mapping) or "score" not in entry:
        raise InputError(f"{where}: no {metric!r} score; evaluate with --metrics bleu,meteor")
    return float(entry["score"])


ROW = "row"
KEYS = [ROW, "pair", "test set", "system"]


def adversarial_table(
    systems: Sequence[System], where: Sequence[str] = ()
) -> tuple[pd.DataFrame, pd.DataFrame, list[object]]:
    """Tables 1 and 2 over training seeds (:func:`~nmtvariants.reporting.replicas.aggregate_replicas`):
    one row per system (its replicas in ``systems`` share a ``row``) with pair, test set, system,
    ``n`` (training seeds), BLEU, METEOR, then per randomised input (in order of first appearance) the
    adversarial BLEU (each training seed's mean over its derangement seeds) and the derangement sd (each
    training seed's sample sd over its derangement seeds) as mean ± sample sd over training seeds, and
    the derangement seeds per training seed. Systems without that input (the single-input baselines)
    have empty cells there.

    Returns the CSV frame (means, ``<column> sd`` and each training seed's value), the markdown frame
    (``mean ± sd`` cells) and the training seeds in first-seen order."""
    names = list(where) or [f"system {i + 1}" for i in range(len(systems))]
    randomised: list[str] = []
    for system in systems:
        for row in (system.adversarial or {}).get("rows", []):
            if row["randomised"] not in randomised:
                randomised.append(row["randomised"])
    records = []
    for k, (system, name) in enumerate(zip(systems, names, strict=True)):
        record: dict[str, Any] = {
            ROW: k if system.row is None else system.row,
            "pair": system.pair,
            "test set": system.testset,
            "system": system.label,
            "seed": system.seed,
            "BLEU": _score(system.clean, "bleu", name),
            meteor_label(system.clean): _score(system.clean, "meteor", name),
        }
        rows = {row["randomised"]: row for row in (system.adversarial or {}).get("rows", [])}
        for input_name in randomised:
            row = rows.get(input_name)
            if row is not None and "bleu_adv_mean" not in row:
                raise InputError(
                    f"{name}: adversarial summary without BLEU; summarise with --metrics bleu,meteor"
                )
            record[adversarial_column(input_name)] = math.nan if row is None else row["bleu_adv_mean"]
            record[derangement_sd_column(input_name)] = math.nan if row is None else row["bleu_adv_std"]
            record[derangements_column(input_name)] = None if row is None else row["runs"]
        records.append(record)
    long = pd.DataFrame.from_records(records)
    counts = [derangements_column(input_name) for input_name in randomised]
    metrics = [column for column in long.columns if column not in (*KEYS, "seed", *counts)]
    csv, markdown, seeds = aggregate_replicas(long, KEYS, metrics)
    for input_name in randomised:  # after its two columns; a count, the same for every training seed
        column = derangements_column(input_name)
        by_row = pd.to_numeric(long[column], errors="coerce").groupby(long[ROW], sort=False).max()
        values = pd.Series(
            [None if pd.isna(by_row[row]) else int(by_row[row]) for row in csv[ROW]], dtype=object
        )
        at = list(csv.columns).index(sd_column(derangement_sd_column(input_name))) + 1
        csv.insert(at, column, values)
        markdown.insert(list(markdown.columns).index(derangement_sd_column(input_name)) + 1, column, values)
    return csv.drop(columns=[ROW]), markdown.drop(columns=[ROW]), seeds


def adversarial_column(input_name: str) -> str:
    """Mean BLEU with ``input_name`` deranged (over the derangement seeds of one training seed)."""
    return f"adv. BLEU ({input_name})"


def derangement_sd_column(input_name: str) -> str:
    """The sample sd of that BLEU over the derangement seeds (of one training seed)."""
    return f"derangement sd ({input_name})"


def derangements_column(input_name: str) -> str:
    """How many derangement seeds that mean and sd are over."""
    return f"derangements ({input_name})"


def write_csv(frame: pd.DataFrame, path: PathLike) -> None:
    with atomic_write(path) as out:
        frame.to_csv(out, index=False)
