"""Each seam of the Transformer exercised by a small test plug-in and checked by hand-written arithmetic.

The plug-ins here are deliberately minimal stand-ins for the studies' modules (the real ones live in
their own modules): a gated lexical shortcut and a feature-fusion shortcut in the shapes of Emelin et al.
(checked against their Table 5 parameter counts), and a PASCAL-like Gaussian score multiplier.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from model_fixtures import single_thread
from torch import nn

from nmtvariants.data.vocab import BOS_ID, EOS_ID, PAD_ID
from nmtvariants.inference.beam_search import beam_search
from nmtvariants.models import build_model, capture, count_parameters, model_config, register_variant
from nmtvariants.models.layers import SelfAttentionBlock
from nmtvariants.models.variants import unregister_variant


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with single_thread():
        yield


VOCAB = 30


class GatedShortcut(nn.Module):
    """Lexical shortcut (Emelin eqs 5-12): gate keys/values between E·W_sc and H_{l-1}·W (the layer's own)."""

    def __init__(self, d: int, fused: bool):
        super().__init__()
        self.fused = fused
        if fused:  # feature-fusion: one 2d x 2d map of [E; H] per keys and values
            self.k_fused = nn.Linear(2 * d, 2 * d, bias=False)
            self.v_fused = nn.Linear(2 * d, 2 * d, bias=False)
        else:
            self.k_sc = nn.Linear(d, d, bias=False)
            self.v_sc = nn.Linear(d, d, bias=False)
        self.k_bias = nn.Parameter(torch.empty(d).uniform_(-0.1, 0.1))
        self.v_bias = nn.Parameter(torch.empty(d).uniform_(-0.1, 0.1))

    def forward(self, attn, hidden, ctx, *, layer_input, memory):
        e, h = ctx.history[0], ctx.history[-1]
        if self.fused:
            k_sc, k_h = self.k_fused(torch.cat([e, h], -1)).chunk(2, -1)
            v_sc, v_h = self.v_fused(torch.cat([e, h], -1)).chunk(2, -1)
        else:
            k_sc, v_sc, k_h, v_h = self.k_sc(e), self.v_sc(e), attn.k_proj(h), attn.v_proj(h)
        r_k = torch.sigmoid(k_sc + k_h + self.k_bias)
        r_v = torch.sigmoid(v_sc + v_h + self.v_bias)
        return r_k * k_sc + (1 - r_k) * k_h, r_v * v_sc + (1 - r_v) * v_h


def self_attention_blocks(model):
    return [m for m in model.modules() if isinstance(m, SelfAttentionBlock)]


@register_variant("test_shortcuts")
def install_shortcuts(model, options):
    for block in self_attention_blocks(model):
        block.attn.kv_transform = GatedShortcut(model.cfg.d_model, fused=options == "feature_fusion")
        if options == "feature_fusion":
            block.attn.k_proj = None
            block.attn.v_proj = None


class GaussianScores(nn.Module):
    """PASCAL-like: multiply the scaled scores of the first ``heads`` heads by N(j; parent_t, 1)."""

    def __init__(self, heads: int):
        super().__init__()
        self.heads = heads

    def forward(self, scores, ctx, attn):
        parents = ctx.aux["parents"].to(scores.dtype)  # [B, T]
        j = torch.arange(scores.size(-1), dtype=scores.dtype)
        density = torch.exp(-((j[None, None, :] - parents[:, :, None]) ** 2) / 2) / math.sqrt(2 * math.pi)
        scores = scores.clone()
        scores[:, : self.heads] = scores[:, : self.heads] * density[:, None]
        return scores


@register_variant("test_pascal")
def install_pascal(model, options):
    model.encoder_layers[0].self_attn.attn.score_transform = GaussianScores(options["heads"])


@pytest.fixture(scope="module", autouse=True)
def _cleanup_registry():
    yield
    unregister_variant("test_shortcuts")
    unregister_variant("test_pascal")


def padded(rows, generator, length, bos=False, vocab=VOCAB):
    out = torch.full((len(rows), length + 1), PAD_ID, dtype=torch.long)
    for i, n in enumerate(rows):
        body = torch.randint(4, vocab, (n,), generator=generator)
        seq = torch.cat([torch.tensor([BOS_ID]), body]) if bos else torch.cat([body, torch.tensor([EOS_ID])])
        out[i, : n + 1] = seq
    return out


def sample(seed=0):
    generator = torch.Generator().manual_seed(seed)
    return padded([6, 3, 4], generator, 6), padded([5, 2, 4], generator, 5, bos=True)


@pytest.mark.parametrize(
    ("preset", "variant", "table5"),
    [("base", "lexical", 71_470), ("base", "feature_fusion", 84_053), ("big", "feature_fusion", 293_935)],
)
def test_shortcut_shapes_reproduce_emelin_table5(preset, variant, table5):
    with torch.device("meta"):
        model = build_model(model_config(preset, variant={"test_shortcuts": variant}), 41_138)
    assert abs(count_parameters(model) - table5 * 1000) <= 500


def manual_attention(x_q, k, v, attn, pad_mask, density=None, heads=0):
    """float64 multi-head attention from the module's own weights (no dropout, eval)."""
    batch, tq, d = x_q.shape
    h = attn.n_heads
    dh = d // h
    q = (x_q.double() @ attn.q_proj.weight.double().T).view(batch, tq, h, dh).transpose(1, 2)
    k = k.double().view(batch, -1, h, dh).transpose(1, 2)
    v = v.double().view(batch, -1, h, dh).transpose(1, 2)
    scores = q @ k.transpose(-1, -2) / math.sqrt(dh)
    if density is not None:
        scores[:, :heads] = scores[:, :heads] * density[:, None]
    scores = scores.masked_fill(pad_mask[:, None, None, :], -math.inf)
    out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, tq, d)
    return out @ attn.o_proj.weight.double().T


def test_kv_seam_receives_embeddings_and_previous_layer():
    torch.manual_seed(0)
    model = build_model(model_config("tiny", variant={"test_shortcuts": "lexical"}), VOCAB).eval()
    src, tgt = sample()
    with torch.no_grad(), capture(model) as rec:
        model(src, tgt)
    e = rec["encoder.embeddings"][0]
    h1 = rec["encoder.layers.0"][0]
    block = model.encoder_layers[1].self_attn
    sc = block.attn.kv_transform
    x = F.layer_norm(h1, (64,), block.norm.weight, block.norm.bias, eps=1e-5)
    k_sc, v_sc = e @ sc.k_sc.weight.T, e @ sc.v_sc.weight.T
    k_h, v_h = h1 @ block.attn.k_proj.weight.T, h1 @ block.attn.v_proj.weight.T
    r_k, r_v = torch.sigmoid(k_sc + k_h + sc.k_bias), torch.sigmoid(v_sc + v_h + sc.v_bias)
    k, v = r_k * k_sc + (1 - r_k) * k_h, r_v * v_sc + (1 - r_v) * v_h
    expected = manual_attention(x, k, v, block.attn, src.eq(PAD_ID))
    torch.testing.assert_close(rec["encoder.layers.1.self.out"][0].double(), expected, atol=1e-5, rtol=1e-4)
    # and the plug-in changes the model while incremental decoding still equals full recomputation
    assert_incremental_equals_full(model, src, tgt)


def assert_incremental_equals_full(model, src, tgt, memories=None):
    with torch.no_grad():
        memory = memories if memories is not None else model.encode(src)
        full = model.decode(tgt, memory)
        cache = model.new_cache()
        steps = torch.cat([model.decode(tgt[:, t : t + 1], memory, cache) for t in range(tgt.size(1))], 1)
    torch.testing.assert_close(steps, full, atol=1e-5, rtol=1e-5)


def test_score_seam_gaussian_matches_hand_computation():
    torch.manual_seed(1)
    model = build_model(model_config("tiny", variant={"test_pascal": {"heads": 2}}), VOCAB).eval()
    src, tgt = sample(1)
    parents = torch.randint(0, src.size(1), src.shape, generator=torch.Generator().manual_seed(2))
    with torch.no_grad(), capture(model) as rec:
        out = model(src, tgt, aux={"parents": parents})
        plain = model(src, tgt, aux={"parents": torch.zeros_like(parents)})
    assert not torch.allclose(out, plain)
    block = model.encoder_layers[0].self_attn
    e = rec["encoder.embeddings"][0]
    x = F.layer_norm(e, (64,), block.norm.weight, block.norm.bias, eps=1e-5)
    j = torch.arange(src.size(1), dtype=torch.float64)
    density = torch.exp(-((j[None, None] - parents.double()[:, :, None]) ** 2) / 2) / math.sqrt(2 * math.pi)
    expected = manual_attention(
        x,
        x @ block.attn.k_proj.weight.T,
        x @ block.attn.v_proj.weight.T,
        block.attn,
        src.eq(PAD_ID),
        density,
        heads=2,
    )
    torch.testing.assert_close(rec["encoder.layers.0.self.out"][0].double(), expected, atol=1e-5, rtol=1e-4)
    # beam search passes aux to the encoder
    hyps = beam_search(model, src, beam_size=2, aux={"parents": parents}, max_len_a=0, max_len_b=3)
    assert len(hyps) == 3


def test_variants_compose():
    variant = {"test_shortcuts": "lexical", "test_pascal": {"heads": 1}, "decoder_layout": "simplified"}
    torch.manual_seed(2)
    model = build_model(model_config("tiny", variant=variant), VOCAB).eval()
    d, n_self = 64, 2 + 2  # 2 encoder + 2 decoder self-attentions carry shortcuts
    baseline = build_model(model_config("tiny", variant={"decoder_layout": "simplified"}), VOCAB)
    assert count_parameters(model) == count_parameters(baseline) + n_self * (2 * d * d + 2 * d)
    src, tgt = sample(3)
    parents = torch.zeros_like(src)
    with torch.no_grad():
        memory = model.encode(src, aux={"parents": parents})
    assert_incremental_equals_full(model, src, tgt, memories=memory)


def layer_norm(x, norm):
    return F.layer_norm(x, x.shape[-1:], norm.weight, norm.bias, eps=norm.eps)


@pytest.mark.parametrize("layout", ["self,cross,ffn", "cross,ffn", "cross,self,ffn", "self,cross"])
def test_decoder_layout_wiring_post_norm(layout):
    """Post-norm (Yang et al.): every sub-layer's state is LN(input + out), chained in layout order."""
    torch.manual_seed(4)
    model = build_model(
        model_config("tiny", overrides={"norm": "post"}, variant={"decoder_layout": layout}), VOCAB
    ).eval()
    src, tgt = sample(4)
    with torch.no_grad(), capture(model) as rec:
        model(src, tgt)
    kinds = layout.split(",")
    for index, layer in enumerate(model.decoder_layers):
        state = rec["decoder.embeddings"][0] if index == 0 else rec[f"decoder.layers.{index - 1}"][0]
        for kind in kinds:
            name = f"decoder.layers.{index}.{kind}"
            block = {"self": layer.self_attn, "cross": layer.cross_attn, "ffn": layer.ffn}[kind]
            expected = layer_norm(state + rec[f"{name}.out"][0], block.norm)
            torch.testing.assert_close(rec[f"{name}.state"][0], expected, atol=1e-5, rtol=1e-5)
            state = expected
        torch.testing.assert_close(rec[f"decoder.layers.{index}"][0], state)
        for kind in {"self", "cross", "ffn"} - set(kinds):
            assert getattr(layer, {"self": "self_attn", "cross": "cross_attn", "ffn": "ffn"}[kind]) is None
    assert_incremental_equals_full(model, src, tgt)


def test_serial_multi_source_two_memories():
    torch.manual_seed(5)
    model = build_model(
        model_config("tiny", variant={"multi_source": {"strategy": "serial", "sources": 2}}), VOCAB
    ).eval()
    src, tgt = sample(5)
    other = padded([2, 5, 1], torch.Generator().manual_seed(9), 5)
    with torch.no_grad():
        memories = [model.encode(src), model.encode(other)]
        with capture(model) as rec:
            out = model.decode(tgt, memories)
        swapped = model.decode(tgt, [memories[0], model.encode(src)])
    assert not torch.allclose(out, swapped)
    for index in range(2):
        name = f"decoder.layers.{index}.cross"
        first = rec[f"{name}.0.state"][0]
        torch.testing.assert_close(
            first, rec[f"decoder.layers.{index}.self.state"][0] + rec[f"{name}.0.out"][0]
        )
        torch.testing.assert_close(rec[f"{name}.1.state"][0], first + rec[f"{name}.1.out"][0])
    assert_incremental_equals_full(model, src, tgt, memories=memories)
    with pytest.raises(ValueError, match="2 memories"):
        model.decode(tgt, memories[0])


def test_hooks_cost_nothing_when_unused_and_filter_names():
    model = build_model(model_config("tiny"), VOCAB).eval()
    src, tgt = sample(6)
    assert model.hooks.recorder is None
    with torch.no_grad(), capture(model, include=["decoder.layers.*.cross.out", "decoder.output"]) as rec:
        states = model.decode_states(tgt, model.encode(src))
    assert model.hooks.recorder is None
    assert sorted(rec.keys()) == [
        "decoder.layers.0.cross.out",
        "decoder.layers.1.cross.out",
        "decoder.output",
    ]
    torch.testing.assert_close(rec["decoder.output"][0], states)
    # incremental decoding records once per step; cat() joins them along time
    with torch.no_grad(), capture(model, include=["decoder.output"]) as rec:
        memory, cache = model.encode(src), model.new_cache()
        for t in range(tgt.size(1)):
            model.decode(tgt[:, t : t + 1], memory, cache)
    torch.testing.assert_close(rec.cat("decoder.output"), states, atol=1e-5, rtol=1e-5)
