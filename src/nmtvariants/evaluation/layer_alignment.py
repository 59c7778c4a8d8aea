"""Word alignment from SEM, per decoder layer, through the model (Yang et al. 2020 §3.2, Figs 4-7).

For a trained model and a BPE'd parallel test set with gold word alignments, every decoder layer's
encoder attention (SEM; the capture name from :mod:`nmtvariants.analysis.decoder_modules`) gives one
hard word alignment per sentence, scored by AER against the gold sure/possible links, and the layers
together give the cumulative coverage curve. Choices (seed brief §3.4, all "suggested" there):

* teacher forcing on the reference target, eval mode (no dropout), as for every probe of the study;
* target sub-word k is aligned by the decoder step that *predicts* it (query position k, whose input
  is the previous token), the standard reading; the step predicting ``</s>`` and the source ``</s>``
  column belong to no word and are dropped;
* heads merged by their mean (``head_merge="max"`` for the alternative), then attention averaged
  over a target word's sub-words and summed over a source word's sub-words before the arg-max
  (:func:`~nmtvariants.evaluation.alignment.alignments_from_attention`), so every target word gets
  exactly one source word (ties: the leftmost);
* AER and coverage are corpus-level (counts summed over sentences before dividing).

Words are the whitespace tokens of the BPE'd line with the ``@@`` pieces joined, so the gold must
index the same tokenisation: every gold link is checked against those word counts.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from nmtvariants.analysis.decoder_modules import decoder_module_names
from nmtvariants.corpora.alignments import GoldAlignment, Link, read_alignments, read_token_counts
from nmtvariants.data.batching import collate
from nmtvariants.data.dataset import ParallelData
from nmtvariants.data.vocab import Vocabulary
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.evaluation.alignment import (
    alignment_error_rate,
    alignments_from_attention,
    cumulative_coverage,
)
from nmtvariants.fileio import PathLike, atomic_write, read_lines
from nmtvariants.models.hooks import capture
from nmtvariants.models.interfaces import SourceInputs
from nmtvariants.text.subword_map import SEPARATOR, word_ids

CSV_COLUMNS = (
    "layer",
    "aer",
    "precision",
    "recall",
    "coverage",
    "layer_coverage",
    "n_sentences",
    "n_source_words",
    "n_hyp_links",
    "n_sure",
    "n_possible",
    "capture_name",
)


@dataclass(frozen=True)
class AlignmentTestSet:
    """BPE'd sentence pairs, the word index of each sub-word, and the gold links (model direction)."""

    src_tokens: list[list[str]]
    tgt_tokens: list[list[str]]
    src_word_ids: list[list[int]]
    tgt_word_ids: list[list[int]]
    gold: list[GoldAlignment]

    @property
    def src_word_counts(self) -> list[int]:
        return [ids[-1] + 1 for ids in self.src_word_ids]

    @property
    def tgt_word_counts(self) -> list[int]:
        return [ids[-1] + 1 for ids in self.tgt_word_ids]


def _bpe_lines(path: PathLike, separator: str, hyphen: str | None) -> tuple[list[list[str]], list[list[int]]]:
    tokens: list[list[str]] = []
    for number, line in enumerate(read_lines(path), start=1):
        if not line.split():
            raise InputError(f"{path}:{number}: empty line; every gold-aligned sentence needs its words")
        tokens.append(line.split())
    return tokens, [word_ids(t, separator, hyphen) for t in tokens]


def _check_word_counts(bpe: PathLike, counts: Sequence[int], reference: PathLike) -> None:
    expected = read_token_counts(reference)
    if len(expected) != len(counts):
        raise InputError(f"{reference}: {len(expected)} sentences but {bpe} has {len(counts)} lines")
    for number, (got, want) in enumerate(zip(counts, expected, strict=True), start=1):
        if got != want:
            raise InputError(
                f"{bpe}:{number}: {got} words once the sub-words are joined, but {reference}:{number} "
                f"has {want} tokens; apply only BPE to the gold's tokens (no other tokeniser)"
            )


def read_alignment_set(
    src: PathLike,
    tgt: PathLike,
    gold: PathLike,
    fmt: str,
    one_based: bool | None = None,
    reverse: bool = False,
    keep_out_of_range: bool = False,
    separator: str = SEPARATOR,
    words: tuple[PathLike, PathLike] | None = None,
    hyphen: str | None = None,
) -> AlignmentTestSet:
    """Read the BPE'd texts and the gold file; InputError when they disagree on sentences or words.

    ``words``: the (source, target) texts in the gold's own tokenisation (``<s snum=..>`` lines
    allowed); every BPE'd line must then have exactly as many words as its gold sentence, which
    catches a preprocessing chain that re-tokenises the gold text (a shifted link can still fall
    inside the sentence, so the range check alone cannot). ``hyphen``: the marker of Moses' hyphen
    splitting (``@-@``) whose neighbours are glued into one word, for text tokenised with ``-a``
    (:func:`nmtvariants.text.subword_map.word_ids`); None: every BPE-joined token is a word.
    """
    src_tokens, src_ids = _bpe_lines(src, separator, hyphen)
    tgt_tokens, tgt_ids = _bpe_lines(tgt, separator, hyphen)
    if len(src_tokens) != len(tgt_tokens):
        raise InputError(f"{src}: {len(src_tokens)} lines but {tgt} has {len(tgt_tokens)}")
    lengths = ([ids[-1] + 1 for ids in src_ids], [ids[-1] + 1 for ids in tgt_ids])
    if words is not None:
        for bpe, counts, reference in zip((src, tgt), lengths, words, strict=True):
            _check_word_counts(bpe, counts, reference)
    links = read_alignments(
        gold, fmt, one_based, reverse, lengths=lengths, keep_out_of_range=keep_out_of_range
    )
    return AlignmentTestSet(src_tokens, tgt_tokens, src_ids, tgt_ids, links)


def sem_weight_names(model: torch.nn.Module) -> list[str]:
    """The capture name of every decoder layer's encoder-attention probabilities, bottom first."""
    if getattr(model, "n_memories", 1) != 1:
        raise ConfigError("layer alignment needs a single-source model (one encoder memory)")
    layout = model.cfg.variant.get("decoder_layout", "standard")
    names = []
    for layer in range(len(model.decoder_layers)):
        modules = decoder_module_names(layout, layer)
        if "SEM weights" not in modules:
            raise ConfigError(f"decoder layout {layout!r} has no encoder attention to align with")
        names.append(modules["SEM weights"])
    return names


@torch.no_grad()
def sem_alignments(
    model: torch.nn.Module,
    vocab: Vocabulary,
    test_set: AlignmentTestSet,
    batch_size: int = 32,
    device: str | torch.device = "cpu",
    head_merge: str = "mean",
) -> list[list[set[Link]]]:
    """Word links ``[layer][sentence]`` from every decoder layer's merged encoder attention."""
    names = sem_weight_names(model)
    pairs = [
        (vocab.encode(" ".join(s)), vocab.encode(" ".join(t)))
        for s, t in zip(test_set.src_tokens, test_set.tgt_tokens, strict=True)
    ]
    data = ParallelData.from_sequences(pairs)
    per_layer: list[list[set[Link]]] = [[] for _ in names]
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(data), batch_size):
            rows = np.arange(start, min(start + batch_size, len(data)))
            batch = collate(data, rows).to(device)
            with capture(model, attention=True, include=names) as recorder:
                model.decode_states(batch.tgt_in, model.encode_inputs(SourceInputs.of(batch.src)))
            for layer, name in enumerate(names):
                if name not in recorder or len(recorder[name]) != 1:
                    raise ConfigError(f"{name}: the model recorded no encoder-attention weights there")
                weights = recorder[name][0].float().cpu()
                for row, index in enumerate(rows):
                    src_ids, tgt_ids = test_set.src_word_ids[index], test_set.tgt_word_ids[index]
                    # rows: one query per target sub-word (the step predicting it) + the </s> step;
                    # columns: the source sub-words + </s>; None drops the </s> row and column
                    attn = weights[row, :, : len(tgt_ids) + 1, : len(src_ids) + 1]
                    per_layer[layer].append(
                        alignments_from_attention(attn, [*src_ids, None], [*tgt_ids, None], head_merge)
                    )
    finally:
        model.train(was_training)
    return per_layer


def layer_rows(
    per_layer: Sequence[Sequence[set[Link]]], test_set: AlignmentTestSet, names: Sequence[str]
) -> list[dict[str, Any]]:
    """One row per layer (1-based, as in the paper's figures): AER, precision, recall, coverage."""
    src_counts = test_set.src_word_counts
    cumulative = cumulative_coverage(per_layer, src_counts)
    rows = []
    for layer, (links, name) in enumerate(zip(per_layer, names, strict=True)):
        scores = alignment_error_rate(links, test_set.gold)
        own = cumulative_coverage([links], src_counts)[0]
        rows.append(
            {
                "layer": layer + 1,
                "aer": scores["aer"],
                "precision": scores["precision"],
                "recall": scores["recall"],
                "coverage": cumulative[layer],
                "layer_coverage": own,
                "n_sentences": scores["n_sentences"],
                "n_source_words": sum(src_counts),
                "n_hyp_links": scores["n_hyp_links"],
                "n_sure": scores["n_sure"],
                "n_possible": scores["n_possible"],
                "capture_name": name,
            }
        )
    return rows


def layer_aer(
    model: torch.nn.Module,
    vocab: Vocabulary,
    test_set: AlignmentTestSet,
    batch_size: int = 32,
    device: str | torch.device = "cpu",
    head_merge: str = "mean",
) -> list[dict[str, Any]]:
    """AER and cumulative coverage of every decoder layer's SEM alignment (see the module docstring)."""
    per_layer = sem_alignments(model, vocab, test_set, batch_size, device, head_merge)
    return layer_rows(per_layer, test_set, sem_weight_names(model))


def write_layer_csv(path: PathLike, rows: Sequence[dict[str, Any]]) -> None:
    """The rows of :func:`layer_aer` as CSV (header :data:`CSV_COLUMNS`), written atomically."""
    with atomic_write(path) as out:
        writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
