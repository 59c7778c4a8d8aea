"""The shared model-boundary types: causal memory masks, SourceInputs row operations, AuxLosses."""

from __future__ import annotations

import torch

from nmtvariants.models.interfaces import AuxLosses, Memory, SourceInputs


def test_causal_memory_mask_matches_a_naive_loop():
    pad = torch.tensor([[False, False, False, True], [False, False, False, False]])
    memory = Memory(states=torch.zeros(2, 4, 8), pad_mask=pad, causal=True)
    for offset, queries in ((0, 4), (2, 1), (1, 3)):
        mask = memory.attend_mask(queries, offset)
        assert mask.shape == (2, 1, queries, 4)
        for b in range(2):
            for q in range(queries):
                for s in range(4):
                    expected = (not bool(pad[b, s])) and s <= offset + q
                    assert bool(mask[b, 0, q, s]) == expected


def test_non_causal_memory_mask_is_the_padding_mask():
    pad = torch.tensor([[False, True]])
    mask = Memory(states=torch.zeros(1, 2, 4), pad_mask=pad).attend_mask(3, 5)
    assert mask.tolist() == [[[[True, False]]]]


def test_source_inputs_rows_stay_aligned():
    inputs = SourceInputs(
        sources=[torch.arange(6).view(3, 2), torch.arange(9).view(3, 3)],
        aux={"parents": torch.tensor([[0, 0], [1, 1], [2, 2]])},
        features=torch.arange(3.0).view(3, 1, 1),
    )
    picked = inputs.index_select(torch.tensor([2, 0]))
    assert picked.sources[1].tolist() == [[6, 7, 8], [0, 1, 2]]
    assert picked.aux["parents"].tolist() == [[2, 2], [0, 0]]
    assert picked.features.flatten().tolist() == [2.0, 0.0]
    repeated = inputs.repeat_interleave(2)
    assert repeated.src[:, 0].tolist() == [0, 0, 2, 2, 4, 4]
    assert repeated.features.flatten().tolist() == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0]


def test_aux_losses_record_only_while_active_and_accumulate():
    losses = AuxLosses()
    losses.add("lisa", torch.tensor(1.0))
    assert losses.take() == {}
    losses.active = True
    losses.add("lisa", torch.tensor(1.0), 0.5)
    losses.add("lisa", torch.tensor(2.0), 0.5)
    terms = losses.take()
    assert float(terms["lisa"][0]) == 3.0 and terms["lisa"][1] == 0.5
    assert losses.take() == {}


class LabelEmbeddingSum(torch.nn.Module):
    """S&H-style input feature: a label embedding added to the scaled word embedding."""

    def __init__(self, labels: int, d: int):
        super().__init__()
        self.table = torch.nn.Embedding(labels, d)

    def forward(self, embedded, tokens, aux):
        labels = aux["labels"].clamp(min=0)  # AUX_PAD at padding -> any row; padding is masked later
        return embedded + self.table(labels)


def test_embedding_seam_sits_between_scaling_and_positions():
    from nmtvariants.models import build_model, model_config
    from nmtvariants.models.embeddings import sinusoidal_positions

    torch.manual_seed(0)
    cfg = model_config("tiny", overrides={"d_model": 16, "n_heads": 2, "d_ff": 32}, variant={})
    model = build_model(cfg, vocab_size=20).eval()
    feature = LabelEmbeddingSum(3, 16)
    model.src_embed.feature_transform = feature
    tokens = torch.tensor([[5, 6, 7, 2]])
    labels = torch.tensor([[0, 2, 1, 1]])
    got = model.src_embed(tokens, aux={"labels": labels})
    expected = (
        model.src_embed.table.weight[tokens].double() * 4.0
        + feature.table.weight[labels].double()
        + sinusoidal_positions(4, 16).double()
    )
    torch.testing.assert_close(got.double(), expected, rtol=1e-6, atol=1e-6)
    # the encoder hands the batch's aux to the seam: different labels, different memory
    other = model.encode(tokens, {"labels": torch.tensor([[1, 1, 1, 1]])}).states
    torch.testing.assert_close(
        model.encode(tokens, {"labels": labels}).states, model.encode(tokens, {"labels": labels}).states
    )
    assert not torch.allclose(model.encode(tokens, {"labels": labels}).states, other)
