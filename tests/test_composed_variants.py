"""Variants compose: PASCAL + lexical shortcuts + the simplified decoder (+ LISA's auxiliary loss) in
one model build, train a step, and decode, checked against each plug-in's own contribution. LISA
supervises a head of encoder layer 2: PASCAL holds layer 1's score seam, and two score transforms on
one attention are refused."""

from __future__ import annotations

import torch
from model_fixtures import single_thread

from nmtvariants.data.vocab import EOS_ID, PAD_ID
from nmtvariants.inference.beam_search import beam_search
from nmtvariants.models import build_model, count_parameters, model_config
from nmtvariants.models.interfaces import AUX_PAD, SourceInputs

VOCAB = 24
COMPOSED = {
    "pascal": {},
    "shortcuts": {"kind": "lexical"},
    "decoder_layout": "simplified",
    "lisa": {"scorer": "dot", "layer": 2},
}


def batch() -> tuple[SourceInputs, torch.Tensor, torch.Tensor]:
    src = torch.tensor([[5, 6, 7, 8, EOS_ID], [9, 10, EOS_ID, PAD_ID, PAD_ID]])
    parents = torch.tensor([[2, 2, 4, 6, 8], [2, 2, 4, AUX_PAD, AUX_PAD]])  # doubled; </s> at 2n
    first = torch.tensor([[1, 1, 2, 3, 4], [1, 1, 2, AUX_PAD, AUX_PAD]])
    tgt_in = torch.tensor([[1, 11, 12, 13], [1, 14, 15, PAD_ID]])
    tgt_out = torch.tensor([[11, 12, 13, EOS_ID], [14, 15, EOS_ID, PAD_ID]])
    return SourceInputs([src], {"parents_x2": parents, "parents_first": first}), tgt_in, tgt_out


def test_pascal_shortcuts_simplified_and_lisa_build_train_and_decode_together():
    with single_thread():
        torch.manual_seed(0)
        cfg = model_config("tiny", overrides={"d_model": 32, "n_heads": 4, "d_ff": 64}, variant=COMPOSED)
        model = build_model(cfg, VOCAB)
        alone = {
            key: count_parameters(
                build_model(
                    model_config(
                        "tiny", overrides={"d_model": 32, "n_heads": 4, "d_ff": 64}, variant={key: value}
                    ),
                    VOCAB,
                )
            )
            for key, value in COMPOSED.items()
        }
        base = count_parameters(
            build_model(
                model_config("tiny", overrides={"d_model": 32, "n_heads": 4, "d_ff": 64}, variant={}), VOCAB
            )
        )
        # parameters add up: each plug-in contributes what it contributes alone (PASCAL and dot-LISA none)
        assert count_parameters(model) == base + sum(n - base for n in alone.values())
        assert alone["pascal"] == alone["lisa"] == base
        inputs, tgt_in, tgt_out = batch()
        model.train()
        model.aux_losses.active = True
        logits = model(inputs, tgt_in)
        terms = model.aux_losses.take()
        model.aux_losses.active = False
        assert set(terms) == {"lisa_parent"} and torch.isfinite(terms["lisa_parent"][0])
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, VOCAB), tgt_out.reshape(-1), ignore_index=PAD_ID
        )
        (loss + terms["lisa_parent"][0]).backward()
        grads = {
            name for name, p in model.named_parameters() if p.grad is not None and p.grad.abs().sum() > 0
        }
        assert any("shortcut" in name or "kv_transform" in name for name in grads)
        assert not any(
            name.startswith("decoder_layers") and ".ffn." in name for name, _ in model.named_parameters()
        )
        model.eval()
        hyps = beam_search(model, inputs, beam_size=3, max_len_b=5)
        assert len(hyps) == 2 and all(h and all(0 <= t < VOCAB for t in h[0].tokens) for h in hyps)
