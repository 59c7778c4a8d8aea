"""PASCAL plug-in (Bugliarello & Okazaki 2020): the layer's attention output against a naive float64
per-head, per-query loop written from eqs 1-3, parent ignoring, padding, parameters and errors.

The reference reads only the model's weights and the recorded input of the PASCAL layer; it decides
itself which heads are PASCAL heads and evaluates the Normal density with ``math`` one key at a time.
"""

from __future__ import annotations

import json
import math

import pytest
import torch
from model_fixtures import single_thread

from nmtvariants.cli import main
from nmtvariants.data.vocab import EOS_ID, PAD_ID
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.inference.beam_search import beam_search
from nmtvariants.models import build_model, capture, count_parameters, model_config
from nmtvariants.models.interfaces import AUX_PAD, StackContext
from nmtvariants.plugins.pascal import PARENTS_STREAM

VOCAB = 30
D = 64
HEADS = 4
NO_DROPOUT = {
    "embedding_dropout": 0.0,
    "residual_dropout": 0.0,
    "attention_dropout": 0.0,
    "relu_dropout": 0.0,
}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with single_thread():
        yield


def build(options: dict | None, seed: int = 0, **overrides):
    torch.manual_seed(seed)
    variant = {} if options is None else {"pascal": options}
    cfg = model_config("tiny", overrides={"encoder_layers": 3, **NO_DROPOUT, **overrides}, variant=variant)
    return build_model(cfg, VOCAB)


def batch(lengths: list[int], seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded sources (tokens + </s>) and random doubled parent positions inside each sentence
    (``</s>`` included, any half position allowed), AUX_PAD at padding."""
    generator = torch.Generator().manual_seed(seed)
    width = max(lengths) + 1
    src = torch.full((len(lengths), width), PAD_ID, dtype=torch.long)
    parents = torch.full((len(lengths), width), AUX_PAD, dtype=torch.long)
    for i, n in enumerate(lengths):
        src[i, :n] = torch.randint(4, VOCAB, (n,), generator=generator)
        src[i, n] = EOS_ID
        parents[i, : n + 1] = torch.randint(0, 2 * n + 1, (n + 1,), generator=generator)
    return src, parents


# ---------------------------------------------------------------- the float64 reference


def f64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().double()


def layer_norm(x: torch.Tensor, norm) -> torch.Tensor:
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + norm.eps) * f64(norm.weight) + f64(norm.bias)


def linear(x: torch.Tensor, module) -> torch.Tensor:
    out = x @ f64(module.weight).T
    return out if module.bias is None else out + f64(module.bias)


def density(j: int, centre: float, variance: float, parent_only: bool) -> float:
    """Eq 3, or Table 3b's parent-only weighting (the parent token(s) keep their score, others 0)."""
    if parent_only:
        return 1.0 if abs(j - centre) < 1 else 0.0
    return math.exp(-((j - centre) ** 2) / (2 * variance)) / math.sqrt(2 * math.pi * variance)


def reference_attention(attn, h: torch.Tensor, parents: torch.Tensor, pad: torch.Tensor, options: dict):
    """The attention sub-layer's output [B, T, d] (after W_O), one head and one query at a time."""
    pascal_heads = options.get("heads", HEADS)
    variance = options.get("variance", 1.0)
    parent_only = options.get("parent_only", False)
    q_all, k_all, v_all = linear(h, attn.q_proj), linear(h, attn.k_proj), linear(h, attn.v_proj)
    batch_size, length, _ = h.shape
    dh = D // HEADS
    out = torch.zeros(batch_size, length, D, dtype=torch.float64)
    for b in range(batch_size):
        keys = [j for j in range(length) if not pad[b, j]]
        for head in range(HEADS):
            cols = slice(head * dh, (head + 1) * dh)
            for t in range(length):
                scores = []
                for j in keys:
                    s = float(q_all[b, t, cols] @ k_all[b, j, cols]) / math.sqrt(dh)  # eq 1
                    if head < pascal_heads and parents[b, t] != AUX_PAD:
                        s *= density(j, parents[b, t].item() / 2, variance, parent_only)  # eq 2
                    scores.append(s)
                top = max(scores)
                weights = [math.exp(s - top) for s in scores]
                total = sum(weights)
                for w, j in zip(weights, keys, strict=True):
                    out[b, t, cols] += (w / total) * v_all[b, j, cols]
    return linear(out, attn.o_proj)


@pytest.mark.parametrize(
    ("options", "norm"),
    [
        ({}, "pre"),
        ({"layer": 2, "heads": 2}, "pre"),
        ({"layer": 3, "heads": 1, "variance": 4.0}, "post"),
        ({"heads": 3, "parent_only": True}, "post"),
    ],
    ids=["defaults", "layer2_2heads", "layer3_variance4_postnorm", "parent_only"],
)
def test_layer_attention_matches_a_naive_float64_loop(options, norm):
    model = build(options, seed=1, norm=norm).double().eval()
    src, parents = batch([7, 3, 5, 1], seed=2)
    index = options.get("layer", 1) - 1
    before = "encoder.embeddings" if index == 0 else f"encoder.layers.{index - 1}"
    with capture(model, include=(before, f"encoder.layers.{index}.self.out")) as rec:
        model.encode(src, {PARENTS_STREAM: parents})
    block = model.encoder_layers[index].self_attn
    x = rec[before][0]
    h = layer_norm(x, block.norm) if norm == "pre" else x
    expected = reference_attention(block.attn, h, parents, src.eq(PAD_ID), options)
    got = rec[f"encoder.layers.{index}.self.out"][0]
    assert torch.isfinite(got).all()  # query rows at padding included
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-10)


def test_only_the_configured_layer_changes():
    """Same weights, same input: the encoder states equal the baseline's up to the PASCAL layer."""
    src, parents = batch([6, 4], seed=3)
    aux = {PARENTS_STREAM: parents}
    base, pascal = build(None, seed=4).eval(), build({"layer": 2}, seed=4).eval()
    with capture(base) as rb, capture(pascal) as rp:
        base.encode(src, aux)
        pascal.encode(src, aux)
    torch.testing.assert_close(rp["encoder.layers.0"][0], rb["encoder.layers.0"][0], rtol=0, atol=0)
    assert not torch.allclose(rp["encoder.layers.1"][0], rb["encoder.layers.1"][0])


# ---------------------------------------------------------------- parent ignoring


def ignored_rows(model, parents: torch.Tensor, layer: int = 0) -> torch.Tensor:
    """[B, heads, T] True where the PASCAL transform left a query's row of ones unscaled (the density
    of a Normal with sigma^2 = 1 is at most 0.399, so a scaled row of ones is never all ones)."""
    attn = model.encoder_layers[layer].self_attn.attn
    batch_size, length = parents.shape
    scores = torch.ones(batch_size, HEADS, length, length)
    ctx = StackContext(side="encoder", embeddings=torch.zeros(0), aux={PARENTS_STREAM: parents})
    out = attn.score_transform(scores, ctx, attn)
    return out.eq(1).all(-1)


def test_parent_ignoring_rate_in_training_and_none_in_eval():
    q, heads = 0.3, 3
    model = build({"heads": heads, "q": q})
    _, parents = batch([30] * 64, seed=5)
    torch.manual_seed(6)
    model.train()
    rows = ignored_rows(model, parents)
    assert rows[:, heads:].all()  # the other heads pass the scores through; count the PASCAL ones
    count, n = int(rows[:, :heads].sum()), rows[:, :heads].numel()
    bound = 5 * math.sqrt(n * q * (1 - q))  # five standard deviations of Binomial(n, q)
    assert abs(count - n * q) <= bound, (count, n * q, bound)
    # independent per (sentence, head, query): heads disagree on some rows
    assert (rows[:, 0] != rows[:, 1]).any()
    model.eval()
    assert not ignored_rows(model, parents)[:, :heads].any()


def test_q_one_in_training_is_the_baseline_and_eval_is_not():
    """Every row ignored = no scaling: the training forward equals the baseline model's."""
    src, parents = batch([5, 8, 2], seed=7)
    aux = {PARENTS_STREAM: parents}
    base, pascal = build(None, seed=8), build({"q": 1.0}, seed=8)
    base.train(), pascal.train()
    torch.testing.assert_close(pascal.encode(src, aux).states, base.encode(src, aux).states)
    base.eval(), pascal.eval()
    assert not torch.allclose(pascal.encode(src, aux).states, base.encode(src, aux).states)


# ---------------------------------------------------------------- padding, decoding, parameters


def test_batched_beam_search_equals_one_sentence_at_a_time():
    """Padding changes nothing: each sentence decodes the same alone and in a padded batch."""
    model = build({"heads": 2}, seed=9).eval()
    src, parents = batch([6, 2, 4], seed=10)
    together = beam_search(model, src, beam_size=3, max_len_b=5, aux={PARENTS_STREAM: parents})
    for i in range(src.size(0)):
        n = int(src[i].ne(PAD_ID).sum())
        alone = beam_search(
            model, src[i : i + 1, :n], beam_size=3, max_len_b=5, aux={PARENTS_STREAM: parents[i : i + 1, :n]}
        )
        assert alone[0][0].tokens == together[i][0].tokens
        assert alone[0][0].score == pytest.approx(together[i][0].score, abs=1e-4)


@pytest.mark.parametrize("preset", ["tiny", "base"])
def test_count_params_is_unchanged_through_the_command_line(capsys, preset):
    counts = []
    for variant in ("{}", json.dumps({"pascal": {}}), json.dumps({"pascal": {"heads": 2, "q": 0.4}})):
        assert main(["count-params", "--preset", preset, "--vocab-size", "1000", "--variant", variant]) == 0
        counts.append(int(capsys.readouterr().out.split()[0]))
    assert counts[0] == counts[1] == counts[2]
    base, pascal = build(None), build({})
    assert count_parameters(base) == count_parameters(pascal)
    assert list(base.state_dict()) == list(pascal.state_dict())  # checkpoints interchange


def test_missing_parents_stream_is_a_clear_error():
    model = build({}).eval()
    src, _ = batch([3, 2], seed=11)
    with pytest.raises(InputError, match=r"variant pascal .*'parents_x2'.*nmtvariants parents"):
        model.encode(src)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"layers": 1}, "unknown option"),
        ({"layer": 4}, "encoder has 3 layer"),
        ({"layer": 0}, "1-based"),
        ({"heads": 5}, "layer has 4 heads"),
        ({"heads": 0}, "positive number of heads"),
        ({"variance": 0}, "positive sigma"),
        ({"q": 1.5}, r"\[0, 1\]"),
        ({"parent_only": True, "variance": 2.0}, "drop variance or parent_only"),
        ("all", "expected a mapping"),
    ],
)
def test_bad_options_name_the_key(options, message):
    with pytest.raises(ConfigError, match=message):
        build(options)


def test_bf16_autocast_stays_close_to_float32():
    """Under autocast the density is computed in float32 and only the product is cast back."""
    model = build({"heads": 2}, seed=12).eval()
    src, parents = batch([9, 4], seed=13)
    aux = {PARENTS_STREAM: parents}
    reference = model.encode(src, aux).states
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = model.encode(src, aux).states
    assert torch.isfinite(low).all()
    torch.testing.assert_close(low.float(), reference, rtol=0.05, atol=0.05)
