"""MLP and reconstruction probes (analysis/): synthetic tasks with known answers, the causal memory
mask, seeded determinism, and the NMT model left untouched."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nmtvariants.analysis import mlp_probe
from nmtvariants.analysis.extract import extract_states
from nmtvariants.analysis.mlp_probe import MLPProbe, MLPProbeConfig, TokenSet, train_mlp_probe
from nmtvariants.analysis.probe_data import sequence_pairs, token_set
from nmtvariants.analysis.reconstruction_probe import (
    ReconstructionConfig,
    SequencePair,
    train_reconstruction_probe,
)
from nmtvariants.analysis.splits import split_sentences
from nmtvariants.analysis.states import StateFile, TokenStates
from nmtvariants.data.dataset import ParallelData
from nmtvariants.data.vocab import BOS_ID, EOS_ID
from nmtvariants.errors import InputError
from nmtvariants.models import build_model, model_config

CLASSES = 8
FAST_MLP = MLPProbeConfig(hidden=64, lr=5e-3, batch_size=128, max_epochs=40, patience=5)


def clusters(count: int, seed: int, shuffle_labels: bool = False) -> TokenSet:
    """Each class a well-separated centre in 16 dimensions plus small noise."""
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(99).normal(size=(CLASSES, 16)) * 3
    labels = rng.integers(0, CLASSES, size=count)
    features = (centres[labels] + rng.normal(scale=0.3, size=(count, 16))).astype(np.float32)
    if shuffle_labels:
        labels = rng.permutation(labels)
    return TokenSet(features, labels)


def test_mlp_probe_separates_separable_classes():
    report = train_mlp_probe(clusters(1500, 0), clusters(300, 1), clusters(600, 2), CLASSES, FAST_MLP)
    assert report["test"]["accuracy"] >= 0.98
    assert report["test"]["perplexity"] < 1.2
    assert 1 <= report["best_epoch"] <= report["epochs"]


def test_mlp_probe_is_at_chance_on_shuffled_labels():
    report = train_mlp_probe(
        clusters(1500, 0, shuffle_labels=True),
        clusters(300, 1, shuffle_labels=True),
        clusters(2000, 2, shuffle_labels=True),
        CLASSES,
        FAST_MLP,
    )
    assert abs(report["test"]["accuracy"] - 1 / CLASSES) < 0.05
    assert report["test"]["perplexity"] > CLASSES * 0.9


def test_group_accuracies_equal_a_naive_count():
    torch.manual_seed(0)
    probe = MLPProbe(16, CLASSES, hidden=32, dropout=0.5)
    data = clusters(200, 3)
    data.groups = {"pos": np.array(["N", "V", "ADJ", "N"] * 50), "bin": data.labels % 3}
    result = mlp_probe.evaluate(probe, data, torch.device("cpu"))
    probe.eval()
    with torch.no_grad():
        predicted = [int(probe(torch.from_numpy(row[None])).argmax()) for row in data.features]
    for name, values in data.groups.items():
        for label in set(values.tolist()):
            members = [k for k in range(len(data)) if values[k] == label]
            hits = sum(predicted[k] == data.labels[k] for k in members)
            assert result["groups"][name][str(label)] == {
                "accuracy": hits / len(members),
                "tokens": len(members),
            }
    assert result["accuracy"] == sum(p == y for p, y in zip(predicted, data.labels, strict=True)) / len(data)


def test_mlp_probe_is_seeded():
    parts = clusters(600, 0, True), clusters(200, 1, True), clusters(200, 2, True)
    config = MLPProbeConfig(hidden=32, lr=5e-3, batch_size=64, max_epochs=4, patience=2, seed=5)
    torch.manual_seed(123)
    first = train_mlp_probe(*parts, CLASSES, config)
    torch.manual_seed(456)  # the caller's generator state must not matter
    second = train_mlp_probe(*parts, CLASSES, config)
    assert first == second
    config.seed = 6
    assert train_mlp_probe(*parts, CLASSES, config)["history"] != first["history"]


# ---------------------------------------------------------------- reconstruction
TYPES = 8  # word ids 4..11
RECON_VOCAB = 4 + TYPES
MAX_LEN = 8
FAST_RECON = ReconstructionConfig(
    d_model=32, n_heads=2, d_ff=64, dropout=0.0, lr=3e-3, batch_sentences=32, patience=3, max_epochs=25
)


def copy_pairs(count: int, seed: int) -> list[SequencePair]:
    """Memory at position t = one-hot of the decoder input token at t (<s>, y1..yn) and of t itself,
    like a decoder state; the probe force-decodes y1..yn </s>, so y_{t+1} sits at memory t+1."""
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(count):
        words = rng.integers(4, RECON_VOCAB, size=int(rng.integers(3, MAX_LEN)))
        target = np.array([*words, EOS_ID])
        inputs = np.array([BOS_ID, *words])
        memory = np.zeros((len(inputs), RECON_VOCAB + MAX_LEN), dtype=np.float32)
        memory[np.arange(len(inputs)), inputs] = 1
        memory[np.arange(len(inputs)), RECON_VOCAB + np.arange(len(inputs))] = 1
        pairs.append(SequencePair(memory, target))
    return pairs


def test_reconstruction_probe_copies_without_the_causal_mask_and_cannot_with_it():
    parts = copy_pairs(320, 0), copy_pairs(64, 1), copy_pairs(128, 2)
    open_report = train_reconstruction_probe(*parts, RECON_VOCAB, False, FAST_RECON)
    assert open_report["test"]["perplexity"] < 1.3
    assert open_report["test"]["accuracy"] > 0.95
    masked = train_reconstruction_probe(*parts, RECON_VOCAB, True, FAST_RECON)
    # the next word is uniform over TYPES and only the memory up to t is visible; </s> is partly guessable
    assert masked["test"]["perplexity"] > TYPES * 0.6
    assert masked["causal"] is True and open_report["causal"] is False


def test_reconstruction_probe_is_seeded():
    parts = copy_pairs(64, 0), copy_pairs(16, 1), copy_pairs(16, 2)
    config = ReconstructionConfig(
        d_model=16, n_heads=2, d_ff=32, dropout=0.1, lr=3e-3, batch_sentences=16, max_epochs=2, seed=3
    )
    torch.manual_seed(1)
    first = train_reconstruction_probe(*parts, RECON_VOCAB, True, config)
    torch.manual_seed(2)
    assert train_reconstruction_probe(*parts, RECON_VOCAB, True, config) == first


def test_probe_rejects_labels_outside_the_classes():
    data = clusters(50, 0)
    with pytest.raises(InputError, match="labels outside"):
        train_mlp_probe(data, data, data, CLASSES - 1, FAST_MLP)


# ---------------------------------------------------------------- the NMT model stays frozen
def test_probing_leaves_the_nmt_model_untouched():
    torch.manual_seed(0)
    model = build_model(model_config("tiny", overrides={"d_model": 16, "n_heads": 2, "d_ff": 32}), 14)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rng = np.random.default_rng(0)
    pairs = [
        (
            [*rng.integers(4, 14, size=int(n)).tolist(), EOS_ID],
            [*rng.integers(4, 14, size=int(n)).tolist(), EOS_ID],
        )
        for n in rng.integers(2, 6, size=30)
    ]
    data = ParallelData.from_sequences(pairs)
    indices, states = extract_states(model, data, ["encoder.layers.1", "decoder.layers.0"])
    file = StateFile(
        path=None, sentences=data, indices=indices, names=sorted(states), meta={"vocab_size": 14}
    )  # type: ignore[arg-type]
    split = split_sentences(len(data), 0.2, 0.2, seed=0)
    encoder = TokenStates("encoder.layers.1", states["encoder.layers.1"], indices["encoder"])
    decoder = TokenStates("decoder.layers.0", states["decoder.layers.0"], indices["decoder"])
    small = MLPProbeConfig(hidden=16, max_epochs=2)
    train_mlp_probe(*(token_set(encoder, part) for part in (split.train, split.valid, split.test)), 14, small)
    recon = ReconstructionConfig(d_model=16, n_heads=2, d_ff=32, max_epochs=2)
    parts = [sequence_pairs(file, decoder, part, "target") for part in (split.train, split.valid, split.test)]
    train_reconstruction_probe(*parts, 14, True, recon)
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert all(p.grad is None for p in model.parameters())


def test_split_is_by_sentence_and_seeded():
    split = split_sentences(50, 0.1, 0.2, seed=4)
    assert split.sizes() == {"train": 35, "valid": 5, "test": 10}
    everything = np.concatenate([split.train, split.valid, split.test])
    np.testing.assert_array_equal(np.sort(everything), np.arange(50))
    again = split_sentences(50, 0.1, 0.2, seed=4)
    np.testing.assert_array_equal(again.test, split.test)
    assert len(split_sentences(50, 0.1, 0.0, seed=4).test) == 0
    with pytest.raises(InputError, match="cannot be split"):
        split_sentences(2, 0.4, 0.4, seed=0)
