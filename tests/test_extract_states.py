"""State extraction (analysis/extract.py, analysis/states.py) against per-sentence `capture` runs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nmtvariants.analysis.extract import cap_pairs, extract_states
from nmtvariants.analysis.states import read_state_file, side_of, write_state_file
from nmtvariants.data.dataset import ParallelData
from nmtvariants.data.vocab import BOS_ID, EOS_ID
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.models import build_model, capture, model_config

VOCAB = 20


def random_pairs(count: int, seed: int = 0) -> ParallelData:
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(count):
        src = [*rng.integers(4, VOCAB, size=int(rng.integers(1, 9))).tolist(), EOS_ID]
        tgt = [*rng.integers(4, VOCAB, size=int(rng.integers(1, 9))).tolist(), EOS_ID]
        pairs.append((src, tgt))
    return ParallelData.from_sequences(pairs, np.arange(1, count + 1) * 2)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(3)
    cfg = model_config("tiny", overrides={"d_model": 32, "n_heads": 4, "d_ff": 48})  # dropout 0.1 stays on
    return build_model(cfg, VOCAB)


def test_extraction_equals_per_sentence_capture(model):
    data = random_pairs(9)
    model.train()  # extraction must switch to eval mode itself and switch back afterwards
    names = ["encoder.layers.[0-9]", "decoder.layers.1.cross.out", "decoder.embeddings"]
    indices, states = extract_states(model, data, names, batch_size=4)
    assert model.training
    assert sorted(states) == sorted(
        ["encoder.layers.0", "encoder.layers.1", "decoder.layers.1.cross.out", "decoder.embeddings"]
    )
    model.eval()
    for i in range(len(data)):
        src = torch.tensor([data.source(i).tolist()])
        target = data.target(i).tolist()
        tgt_in = torch.tensor([[BOS_ID, *target[:-1]]])
        with torch.no_grad(), capture(model) as recorder:
            model.decode(tgt_in, model.encode(src))
        for name, array in states.items():
            index = indices[side_of(name)]
            rows = np.flatnonzero(index.sentence == i)
            expected = recorder[name][0][0].numpy()
            np.testing.assert_allclose(array[rows], expected, rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(index.position[rows], np.arange(len(rows)))
        enc, dec = indices["encoder"], indices["decoder"]
        enc_rows, dec_rows = enc.sentence == i, dec.sentence == i
        np.testing.assert_array_equal(enc.tokens[enc_rows], src[0].numpy())
        np.testing.assert_array_equal(dec.tokens[dec_rows], tgt_in[0].numpy())
        # </s> of the source and <s> of the decoder input have no BPE token
        np.testing.assert_array_equal(enc.token_index[enc_rows], [*range(src.size(1) - 1), -1])
        np.testing.assert_array_equal(dec.token_index[dec_rows], range(-1, tgt_in.size(1) - 1))
    assert len(indices["encoder"]) == int(data.src_lengths.sum())
    assert len(indices["decoder"]) == int(data.tgt_lengths.sum())


def test_state_file_round_trip(model, tmp_path):
    data = random_pairs(5, seed=1)
    indices, states = extract_states(model, data, ["encoder.output", "decoder.layers.0"], dtype=np.float16)
    path = tmp_path / "states.npz"
    write_state_file(path, data, indices, states, {"vocab_size": VOCAB})
    loaded = read_state_file(path)
    assert loaded.names == ["decoder.layers.0", "encoder.output"]
    assert loaded.vocab_size == VOCAB
    np.testing.assert_array_equal(loaded.sentences.line_numbers, data.line_numbers)
    for name in states:
        token_states = loaded.load(name)
        assert token_states.states.dtype == np.float16
        np.testing.assert_array_equal(token_states.states, states[name])
        np.testing.assert_array_equal(token_states.index.sentence, indices[side_of(name)].sentence)
    offsets = loaded.indices["encoder"].offsets(len(data))
    np.testing.assert_array_equal(offsets, data.src_offsets)
    with pytest.raises(InputError, match=r"no states named 'encoder\.layers\.0'"):
        loaded.load("encoder.layers.0")
    with pytest.raises(InputError, match="not found"):
        read_state_file(tmp_path / "missing.npz")


def test_caps_keep_the_first_pairs(model):
    data = random_pairs(10, seed=2)
    capped = cap_pairs(data, max_sentences=4)
    assert len(capped) == 4
    np.testing.assert_array_equal(capped.line_numbers, data.line_numbers[:4])
    longer = np.maximum(data.src_lengths, data.tgt_lengths)
    budget = int(longer[:3].sum())
    capped = cap_pairs(data, max_tokens=budget)
    assert len(capped) == 3
    indices, _ = extract_states(model, capped, ["encoder.layers.0", "decoder.layers.0"])
    assert all(len(index) <= budget for index in indices.values())
    assert len(cap_pairs(data, max_tokens=1)) == 1  # never empty


def test_encoder_only_extraction_skips_the_decoder_and_agrees(model):
    data = random_pairs(6, seed=4)
    both_indices, both = extract_states(model, data, ["encoder.output", "decoder.output"], batch_size=4)
    indices, alone = extract_states(model, data, ["encoder.output"], batch_size=2)
    assert list(indices) == ["encoder"] and list(alone) == ["encoder.output"]
    np.testing.assert_allclose(alone["encoder.output"], both["encoder.output"], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(indices["encoder"].tokens, both_indices["encoder"].tokens)


def test_unknown_pattern_names_the_recorded_states(model):
    with pytest.raises(ConfigError, match=r"matches no captured state.*encoder\.layers\.0"):
        extract_states(model, random_pairs(2), ["encoder.layer.9"])
    with pytest.raises(InputError, match="must start with encoder"):
        side_of("gates.0")
