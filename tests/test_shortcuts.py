"""Lexical shortcuts (Emelin et al. 2019) plug-in: every option against a float64 transcription of the
model with eqs 5-14, incremental decoding against full recomputation, Table 5 through the CLI.

The reference below is written from the paper and the seed brief (§1.1-1.4), not from the plug-in: it
reads only the model's weights and recomputes embeddings, positions, LayerNorms, attention, gates and
residuals in float64, deciding itself which attention carries which shortcut.
"""

from __future__ import annotations

import math

import pytest
import torch
from model_fixtures import single_thread

from nmtvariants.cli import main
from nmtvariants.data.vocab import BOS_ID, EOS_ID, PAD_ID
from nmtvariants.errors import ConfigError
from nmtvariants.inference.beam_search import beam_search
from nmtvariants.models import (
    build_model,
    capture,
    count_parameters,
    load_model,
    model_config,
    register_variant,
)
from nmtvariants.models.variants import unregister_variant
from nmtvariants.plugins.shortcuts import ShortcutOptions

VOCAB = 30
D = 64


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with single_thread():
        yield


def padded(lengths: list[int], generator: torch.Generator, bos: bool) -> torch.Tensor:
    out = torch.full((len(lengths), max(lengths) + 1), PAD_ID, dtype=torch.long)
    for i, n in enumerate(lengths):
        body = torch.randint(4, VOCAB, (n,), generator=generator)
        seq = torch.cat([torch.tensor([BOS_ID]), body]) if bos else torch.cat([body, torch.tensor([EOS_ID])])
        out[i, : n + 1] = seq
    return out


def sample(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Three sentences of different lengths, so that source and target both carry padding."""
    generator = torch.Generator().manual_seed(seed)
    return padded([6, 3, 5], generator, bos=False), padded([5, 2, 6], generator, bos=True)


def build(options: dict, layout: str = "standard", seed: int = 0, **overrides):
    torch.manual_seed(seed)
    variant = (
        {"shortcuts": options} if layout == "standard" else {"shortcuts": options, "decoder_layout": layout}
    )
    # three layers per stack: with two, the non-lexical layers (n-2) would both read the embeddings
    cfg = model_config(
        "tiny", overrides={"encoder_layers": 3, "decoder_layers": 3, **overrides}, variant=variant
    )
    return build_model(cfg, VOCAB)


# ---------------------------------------------------------------- the float64 reference


def f64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().double()


def layer_norm(x: torch.Tensor, norm) -> torch.Tensor:
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + norm.eps) * f64(norm.weight) + f64(norm.bias)


def positions(length: int, d: int) -> torch.Tensor:
    """T2T signal: sines in the first half, cosines in the second, timescales 1 .. 1e4."""
    half = d // 2
    inv = torch.exp(-torch.arange(half, dtype=torch.float64) * math.log(1e4) / (half - 1))
    angle = torch.arange(length, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cat([angle.sin(), angle.cos()], 1)


def embed(table, tokens: torch.Tensor) -> torch.Tensor:
    return f64(table.weight)[tokens] * math.sqrt(D) + positions(tokens.size(1), D)


def linear(x: torch.Tensor, module) -> torch.Tensor:
    out = x @ f64(module.weight).T
    return out if module.bias is None else out + f64(module.bias)


def gate(x_sc: torch.Tensor, x_h: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Eqs 9-12: r = sigmoid(X_sc + X + b); X' = r * X_sc + (1 - r) * X."""
    r = torch.sigmoid(x_sc + x_h + f64(bias))
    return r * x_sc + (1 - r) * x_h


def shortcut_kv(attn, kind: str, s: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    sc = attn.kv_transform
    if kind == "lexical":  # eqs 5-8
        k_sc, v_sc = s @ f64(sc.key_shortcut.weight).T, s @ f64(sc.value_shortcut.weight).T
        k_h, v_h = h @ f64(attn.k_proj.weight).T, h @ f64(attn.v_proj.weight).T
    else:  # eqs 13-14: [S; H] through one 2d x 2d map for K and one for V, first half = shortcut part
        z = torch.cat([s, h], -1)
        k_all, v_all = z @ f64(sc.key_fusion.weight).T, z @ f64(sc.value_fusion.weight).T
        k_sc, k_h, v_sc, v_h = k_all[..., :D], k_all[..., D:], v_all[..., :D], v_all[..., D:]
    return gate(k_sc, k_h, sc.key_gate_bias), gate(v_sc, v_h, sc.value_gate_bias)


def attention(attn, query_in, k, v, allowed: torch.Tensor) -> torch.Tensor:
    """Multi-head attention; ``allowed`` [B, Tq, Tk] True where a query may look."""
    batch, tq, _ = query_in.shape
    heads, dh = attn.n_heads, D // attn.n_heads
    q = linear(query_in, attn.q_proj).view(batch, tq, heads, dh).transpose(1, 2)
    k = k.view(batch, -1, heads, dh).transpose(1, 2)
    v = v.view(batch, -1, heads, dh).transpose(1, 2)
    scores = (q @ k.transpose(-1, -2) / math.sqrt(dh)).masked_fill(~allowed[:, None], -math.inf)
    out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, tq, D)
    return linear(out, attn.o_proj)


def reference_logits(model, options: dict, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """Logits [B, T, V] of the pre-norm shortcut Transformer (eval: no dropout), in float64."""
    kind = options.get("kind", "lexical")
    stacks = {"both": {"encoder", "decoder"}, "encoder": {"encoder"}, "decoder": {"decoder"}, "none": set()}[
        options.get("self_attention", "both")
    ]
    non_lexical = options.get("source", "embeddings") == "n_minus_2"
    authors = options.get("wiring", "authors") == "authors"

    def self_attention(block, x, history, side, allowed):
        h = layer_norm(x, block.norm)
        if side not in stacks:
            return x + attention(
                block.attn, h, linear(h, block.attn.k_proj), linear(h, block.attn.v_proj), allowed
            )
        # layer l (1-based) = len(history); the shortcut is E, or H_{l-2} with E for layers 1 and 2
        s = history[max(len(history) - 2, 0)] if non_lexical else history[0]
        k, v = shortcut_kv(block.attn, kind, s, x if authors else h)
        return (h if authors else x) + attention(block.attn, h, k, v, allowed)

    def cross_attention(block, x, memory, src_embeddings, allowed):
        h = layer_norm(x, block.norm)
        attn = block.attns[0]
        if not options.get("cross_attention", False):
            return x + attention(attn, h, linear(memory, attn.k_proj), linear(memory, attn.v_proj), allowed)
        k, v = shortcut_kv(attn, kind, src_embeddings, memory)  # E fixed to E^enc in eqs 5-6
        return (h if authors else x) + attention(attn, h, k, v, allowed)

    def ffn(block, x):
        h = layer_norm(x, block.norm)
        return x + linear(torch.relu(linear(h, block.w1)), block.w2)

    src_keys = src.ne(PAD_ID)  # [B, S]
    e_src = embed(model.src_embed.table, src)
    x, history = e_src, [e_src]
    enc_allowed = src_keys[:, None, :].expand(-1, src.size(1), -1)
    for layer in model.encoder_layers:
        x = ffn(layer.ffn, self_attention(layer.self_attn, x, history, "encoder", enc_allowed))
        history.append(x)
    memory = layer_norm(x, model.encoder_norm)

    e_tgt = embed(model.tgt_embed.table, tgt)
    x, history = e_tgt, [e_tgt]
    t = tgt.size(1)
    causal = torch.ones(t, t, dtype=torch.bool).tril()[None].expand(tgt.size(0), -1, -1)
    cross_allowed = src_keys[:, None, :].expand(-1, t, -1)
    for layer in model.decoder_layers:
        for part in layer.layout:
            if part == "self":
                x = self_attention(layer.self_attn, x, history, "decoder", causal)
            elif part == "cross":
                x = cross_attention(layer.cross_attn, x, memory, e_src, cross_allowed)
            else:
                x = ffn(layer.ffn, x)
        history.append(x)
    return layer_norm(x, model.decoder_norm) @ f64(model.tgt_embed.table.weight).T


# ---------------------------------------------------------------- every option against the reference

VARIANTS = [
    {"kind": "lexical"},
    {"kind": "feature_fusion"},
    {"kind": "lexical", "wiring": "pre_norm"},
    {"kind": "feature_fusion", "wiring": "pre_norm"},
    {"kind": "lexical", "self_attention": "encoder"},
    {"kind": "lexical", "self_attention": "decoder"},
    {"kind": "feature_fusion", "self_attention": "decoder", "wiring": "pre_norm"},
    {"kind": "lexical", "self_attention": "none", "cross_attention": True},
    {"kind": "feature_fusion", "self_attention": "none", "cross_attention": True},
    {"kind": "lexical", "cross_attention": True},
    {"kind": "feature_fusion", "cross_attention": True, "wiring": "pre_norm"},
    {"kind": "feature_fusion", "source": "n_minus_2"},
    {"kind": "lexical", "source": "n_minus_2", "self_attention": "encoder"},
]


def variant_id(options: dict) -> str:
    return "-".join(f"{value}" for value in options.values())


def assert_incremental_equals_full(model, src: torch.Tensor, tgt: torch.Tensor) -> None:
    """One position at a time through the cache (gated K/V computed once per position and stored)."""
    with torch.no_grad():
        memory = model.encode(src)
        full = model.decode(tgt, memory)
        cache = model.new_cache()
        steps = [model.decode(tgt[:, t : t + 1], memory, cache) for t in range(tgt.size(1))]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("options", VARIANTS, ids=variant_id)
def test_variant_matches_float64_equations(options):
    model = build(options).eval()
    src, tgt = sample(1)
    with torch.no_grad():
        logits = model(src, tgt)
    expected = reference_logits(model, options, src, tgt)
    torch.testing.assert_close(logits.double(), expected, atol=2e-5, rtol=1e-4)
    assert_incremental_equals_full(model, src, tgt)


def test_reference_tells_the_options_apart():
    """The reference is sensitive to each option: a model checked against the wrong option's
    equations fails by far more than the tolerance (so the parametrised test is not vacuous)."""
    src, tgt = sample(2)
    pairs = [
        ({"kind": "lexical"}, {"kind": "lexical", "wiring": "pre_norm"}),
        ({"kind": "feature_fusion", "source": "n_minus_2"}, {"kind": "feature_fusion"}),
        ({"kind": "lexical"}, {"kind": "lexical", "self_attention": "encoder"}),
        ({"kind": "lexical", "cross_attention": True}, {"kind": "lexical"}),
    ]
    for built, other in pairs:
        model = build(built).eval()
        with torch.no_grad():
            logits = model(src, tgt).double()
        assert (logits - reference_logits(model, other, src, tgt)).abs().max() > 1e-2


def test_shortcuts_replace_baseline_keys_and_values():
    """Gated attention differs from the baseline's: zeroing the shortcut maps and pinning the gates shut
    (bias -> -inf) gives back the layer's own keys and values, i.e. the baseline computation."""
    model = build({"kind": "lexical", "wiring": "pre_norm"}).eval()
    src, tgt = sample(3)
    with torch.no_grad():
        before = model(src, tgt)
        for module in model.modules():
            if module.__class__.__name__ == "GatedShortcut":
                module.key_shortcut.weight.zero_()
                module.value_shortcut.weight.zero_()
                module.key_gate_bias.fill_(-1e4)
                module.value_gate_bias.fill_(-1e4)
        after = model(src, tgt)
        baseline = build_model(
            model_config("tiny", overrides={"encoder_layers": 3, "decoder_layers": 3}), VOCAB
        ).eval()
        baseline.load_state_dict(
            {k: v for k, v in model.state_dict().items() if "kv_transform" not in k}, strict=True
        )
        plain = baseline(src, tgt)
    assert (before - after).abs().max() > 1e-2
    torch.testing.assert_close(after, plain, atol=1e-5, rtol=1e-5)


def test_embeddings_are_taken_after_dropout():
    """Training mode with embedding dropout only: the gate of encoder layer 2 is recomputed from the
    recorded (dropped-out) embeddings and layer-1 output; with the pre-dropout E it would differ."""
    model = build(
        {"kind": "lexical"},
        embedding_dropout=0.5,
        residual_dropout=0.0,
        attention_dropout=0.0,
        relu_dropout=0.0,
    ).train()
    src, tgt = sample(4)
    with torch.no_grad(), capture(model) as rec:
        model(src, tgt)
    e, h1 = rec["encoder.embeddings"][0].double(), rec["encoder.layers.0"][0].double()
    attn = model.encoder_layers[1].self_attn.attn
    sc = attn.kv_transform
    r_k = torch.sigmoid(
        e @ f64(sc.key_shortcut.weight).T + h1 @ f64(attn.k_proj.weight).T + f64(sc.key_gate_bias)
    )
    torch.testing.assert_close(rec["encoder.layers.1.self.key_gate"][0].double(), r_k, atol=1e-5, rtol=1e-4)
    clean = embed(model.src_embed.table, src)
    assert (e - clean).abs().max() > 0.1  # dropout really acted on what the gate saw
    # the decoder's first layer sees the target embeddings (E = H_0 in eqs 5-8)
    e_tgt = rec["decoder.embeddings"][0].double()
    attn = model.decoder_layers[0].self_attn.attn
    sc = attn.kv_transform
    r_v = torch.sigmoid(
        e_tgt @ f64(sc.value_shortcut.weight).T + e_tgt @ f64(attn.v_proj.weight).T + f64(sc.value_gate_bias)
    )
    torch.testing.assert_close(rec["decoder.layers.0.self.value_gate"][0].double(), r_v, atol=1e-5, rtol=1e-4)


# ---------------------------------------------------------------- incremental decoding


def test_cached_beams_equal_full_recomputation():
    """Beam-style cache (two rows per sentence, memory and its gated cross K/V kept once per sentence),
    rows reordered within their sentence halfway: every step equals a full pass over the reordered
    prefixes with the memory repeated per row."""
    model = build({"kind": "feature_fusion", "cross_attention": True}, seed=5).eval()
    src, _ = sample(5)
    generator = torch.Generator().manual_seed(6)
    rows = torch.randint(4, VOCAB, (2 * src.size(0), 5), generator=generator)
    rows[:, 0] = BOS_ID
    split = 3
    order = torch.tensor([1, 0, 2, 3, 5, 4])  # new row r continues old row order[r] (same sentence)
    final = torch.cat([rows[order, :split], rows[:, split:]], 1)
    with torch.no_grad():
        memory = model.encode(src)
        cache = model.new_cache(group=2)
        model.decode(rows[:, :split], memory, cache)
        cache.reorder(order)
        steps = [model.decode(final[:, t : t + 1], memory, cache) for t in range(split, final.size(1))]
        full = model.decode(final, memory.repeat_interleave(2))
    torch.testing.assert_close(torch.cat(steps, 1), full[:, split:], atol=1e-5, rtol=1e-5)


def greedy_by_full_recomputation(model, src_row: torch.Tensor, max_len: int) -> tuple[list[int], float]:
    """Naive greedy decoding of one sentence: the whole prefix re-decoded at every step, no cache."""
    memory = model.encode(src_row[None])
    prefix, log_prob = [BOS_ID], 0.0
    for step in range(max_len + 1):
        scores = model.decode(torch.tensor([prefix]), memory)[0, -1].double().log_softmax(-1)
        scores[[PAD_ID, BOS_ID]] = -math.inf
        token = EOS_ID if step == max_len else int(scores.argmax())
        log_prob += float(scores[token])
        if token == EOS_ID:
            break
        prefix.append(token)
    return prefix[1:], log_prob


def test_beam_search_of_one_equals_greedy_full_recomputation():
    """beam_search (cache, memory rows dropped as sentences finish) with dec-to-enc + self-attention
    feature-fusion shortcuts finds the same tokens and log-probabilities as a naive greedy loop."""
    model = build({"kind": "feature_fusion", "cross_attention": True}, seed=13).eval()
    src, _ = sample(13)
    hyps = beam_search(model, src, beam_size=1, length_norm="none", max_len_a=1.0, max_len_b=2)
    with torch.no_grad():
        for row, (best,) in zip(src, hyps, strict=True):
            length = int(row.ne(PAD_ID).sum()) - 1
            tokens, log_prob = greedy_by_full_recomputation(model, row[: length + 1], length + 2)
            assert best.tokens == tokens
            assert best.log_prob == pytest.approx(log_prob, abs=1e-4)


@pytest.mark.parametrize(
    ("layout", "kinds"), [("simplified", ("self", "cross")), ("sem_tem_ifm", ("cross", "self", "ffn"))]
)
def test_composes_with_decoder_layouts(layout, kinds):
    """Yang et al.'s layouts: the simplified decoder (self, cross), and cross before self, where the
    authors' wiring takes H from the cross-attention sub-layer's output."""
    options = {"kind": "lexical", "cross_attention": True}
    model = build(options, layout=layout).eval()
    assert model.decoder_layers[0].layout == kinds
    baseline = build_model(
        model_config(
            "tiny",
            overrides={"encoder_layers": 3, "decoder_layers": 3},
            variant={"decoder_layout": layout},
        ),
        VOCAB,
    )
    gated = 3 + 3 + 3  # encoder self, decoder self, decoder cross
    assert count_parameters(model) == count_parameters(baseline) + gated * (2 * D * D + 2 * D)
    src, tgt = sample(7)
    with torch.no_grad():
        logits = model(src, tgt)
    torch.testing.assert_close(
        logits.double(), reference_logits(model, options, src, tgt), atol=2e-5, rtol=1e-4
    )
    assert_incremental_equals_full(model, src, tgt)


def test_checkpoint_round_trip_rebuilds_the_shortcuts(tmp_path):
    """load_model rebuilds the plug-in from the stored variant, so a trained shortcut model decodes."""
    model = build({"kind": "feature_fusion", "source": "n_minus_2", "cross_attention": True}, seed=11).eval()
    path = tmp_path / "model.pt"
    torch.save({"model_config": model.cfg.to_dict(), "vocab_size": VOCAB, "model": model.state_dict()}, path)
    loaded = load_model(path)
    src, tgt = sample(11)
    with torch.no_grad():
        torch.testing.assert_close(loaded(src, tgt), model(src, tgt))


def test_bf16_autocast_trains_and_decodes():
    """Under bf16 autocast the gated keys and values stay in the compute dtype (the fp32 gate bias is
    cast), so training steps and cached decoding run; cached decoding still matches a full pass."""
    model = build({"kind": "lexical", "cross_attention": True}, seed=12)
    src, tgt = sample(12)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(src, tgt).float().logsumexp(-1).mean()
    loss.backward()
    sc = model.decoder_layers[1].self_attn.attn.kv_transform
    assert sc.key_gate_bias.grad is not None and sc.key_gate_bias.grad.abs().sum() > 0
    assert model.src_embed.table.weight.grad.abs().sum() > 0
    model.eval()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        memory = model.encode(src)
        full = model.decode(tgt, memory)
        cache = model.new_cache()
        steps = torch.cat([model.decode(tgt[:, t : t + 1], memory, cache) for t in range(tgt.size(1))], 1)
    assert steps.dtype == full.dtype == torch.bfloat16
    torch.testing.assert_close(steps.float(), full.float(), atol=0.1, rtol=0.05)


# ---------------------------------------------------------------- parameters and initialisation


TABLE5 = [
    ("base", "{}", 65_166),
    ("base", '{"shortcuts": {"kind": "lexical"}}', 71_470),
    ("base", '{"shortcuts": {"kind": "feature_fusion"}}', 84_053),
    ("big", "{}", 218_413),
    ("big", '{"shortcuts": {"kind": "feature_fusion"}}', 293_935),
]


def test_table5_through_the_command_line(capsys):
    """Emelin et al. Table 5 (thousands of parameters), with the command a user types."""
    for preset, variant, thousands in TABLE5:
        argv = ["count-params", "--preset", preset, "--vocab-size", "41138", "--variant", variant]
        assert main(argv) == 0
        assert round(int(capsys.readouterr().out.split()[0]) / 1000) == thousands, (preset, variant)


@pytest.mark.parametrize(
    ("options", "per_attention", "attentions"),
    [
        ({"kind": "lexical"}, 2 * D * D + 2 * D, 4),
        ({"kind": "feature_fusion"}, 6 * D * D + 2 * D, 4),
        ({"kind": "feature_fusion", "source": "n_minus_2"}, 6 * D * D + 2 * D, 4),
        ({"kind": "lexical", "self_attention": "encoder"}, 2 * D * D + 2 * D, 2),
        ({"kind": "lexical", "self_attention": "none", "cross_attention": True}, 2 * D * D + 2 * D, 2),
        ({"kind": "lexical", "cross_attention": True}, 2 * D * D + 2 * D, 6),
    ],
    ids=["lexical", "ff", "non_lexical", "enc_only", "dec_to_enc", "full"],
)
def test_parameter_deltas(options, per_attention, attentions):
    baseline = count_parameters(build_model(model_config("tiny"), VOCAB))
    model = build_model(model_config("tiny", variant={"shortcuts": options}), VOCAB)
    assert count_parameters(model) == baseline + attentions * per_attention


def test_new_weights_are_glorot_uniform():
    model = build({"kind": "feature_fusion", "cross_attention": True}, seed=8)
    shortcuts = [m for m in model.modules() if m.__class__.__name__ == "GatedShortcut"]
    assert len(shortcuts) == 9
    for sc in shortcuts:
        for weight in (sc.key_fusion.weight, sc.value_fusion.weight):
            limit = math.sqrt(6 / (2 * D + 2 * D))  # fan_in = fan_out = 2d
            # Glorot reaches past PyTorch's default Kaiming bound 1/sqrt(fan_in) and stays within its own
            assert 1 / math.sqrt(2 * D) < weight.abs().max() <= limit
        for bias in (sc.key_gate_bias, sc.value_gate_bias):
            assert 0 < bias.abs().max() <= math.sqrt(3 / D)  # TF glorot on [d]: fan_in = fan_out = d
    lexical = build({"kind": "lexical"}, seed=8)
    sc = lexical.encoder_layers[0].self_attn.attn.kv_transform
    assert 1 / math.sqrt(D) < sc.key_shortcut.weight.abs().max() <= math.sqrt(6 / (2 * D))


# ---------------------------------------------------------------- configuration errors


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"kind": "lexical", "gate": "scalar"}, r"model\.variant\.shortcuts: unknown option\(s\) gate"),
        ({"kind": "fusion"}, r"model\.variant\.shortcuts\.kind: must be one of lexical, feature_fusion"),
        ({"self_attention": "left"}, r"model\.variant\.shortcuts\.self_attention"),
        ({"wiring": "post"}, r"model\.variant\.shortcuts\.wiring"),
        ({"source": "n-2"}, r"model\.variant\.shortcuts\.source"),
        ({"cross_attention": "yes"}, r"model\.variant\.shortcuts\.cross_attention"),
        ({"self_attention": "none"}, r"adds no shortcut"),
        ("lexical", r"model\.variant\.shortcuts: expected a mapping"),
    ],
)
def test_bad_options_raise_config_error_naming_the_key(options, message):
    with pytest.raises(ConfigError, match=message):
        build_model(model_config("tiny", variant={"shortcuts": options}), VOCAB)


def test_decoder_without_self_attention_is_refused_unless_encoder_only():
    with pytest.raises(ConfigError, match=r"shortcuts\.self_attention: the decoder layout cross,ffn"):
        build_model(model_config("tiny", variant={"shortcuts": {}, "decoder_layout": "sem_ifm"}), VOCAB)
    model = build_model(
        model_config(
            "tiny", variant={"shortcuts": {"self_attention": "encoder"}, "decoder_layout": "sem_ifm"}
        ),
        VOCAB,
    ).eval()
    src, tgt = sample(9)
    assert_incremental_equals_full(model, src, tgt)


def test_cross_shortcuts_need_source_embeddings():
    model = build({"self_attention": "none", "cross_attention": True}).eval()
    src, tgt = sample(10)
    with torch.no_grad():
        memory = model.encode(src)
        memory.embeddings = None
        with pytest.raises(ValueError, match=r"Memory\.embeddings"):
            model.decode(tgt, memory)


def test_refuses_to_overwrite_another_variants_kv_transform():
    """Two plug-ins gating the same keys and values would silently drop one: the second one refuses."""

    @register_variant("another_kv")  # installed before shortcuts (sorted key order)
    def install(model, options):
        model.encoder_layers[0].self_attn.attn.kv_transform = torch.nn.Identity()

    try:
        with pytest.raises(ConfigError, match=r"encoder\.layers\.0\.self already has a key/value transform"):
            build_model(model_config("tiny", variant={"another_kv": {}, "shortcuts": {}}), VOCAB)
    finally:
        unregister_variant("another_kv")


def test_non_lexical_shortcuts_of_two_layers_are_the_lexical_ones():
    """With two layers, n-2 points below layer 1 for both layers, so both read the embeddings
    (footnote 5): the non-lexical model is the lexical one, weight for weight and output for output.
    This is why the toy demo (the 2-layer tiny preset) has no non-lexical row in Table 4."""
    src, tgt = sample(4)
    two = {"encoder_layers": 2, "decoder_layers": 2}
    fusion = build({"kind": "feature_fusion"}, **two).eval()
    non_lexical = build({"kind": "feature_fusion", "source": "n_minus_2"}, **two).eval()
    three = build({"kind": "feature_fusion", "source": "n_minus_2"}).eval()
    with torch.no_grad():
        torch.testing.assert_close(non_lexical(src, tgt), fusion(src, tgt), rtol=0, atol=0)
        # the float64 equations of the lexical variant hold for the 2-layer non-lexical model
        reference = reference_logits(non_lexical, {"kind": "feature_fusion"}, src, tgt)
        torch.testing.assert_close(non_lexical(src, tgt).double(), reference, atol=2e-5, rtol=1e-4)
        # with three layers, layer 3 reads layer 1: another model (the reference tells them apart)
        assert (
            three(src, tgt).double() - reference_logits(three, {"kind": "feature_fusion"}, src, tgt)
        ).abs().max() > 1e-2


@pytest.mark.parametrize(
    ("options", "is_main"),
    [
        ({"kind": "lexical"}, True),
        ({"kind": "feature_fusion", "wiring": "pre_norm"}, True),
        ({"kind": "lexical", "self_attention": "none", "cross_attention": True}, False),
        ({"kind": "lexical", "cross_attention": True}, False),
        ({"kind": "feature_fusion", "source": "n_minus_2"}, False),
        ({"kind": "lexical", "self_attention": "encoder"}, False),
    ],
)
def test_the_main_setting_is_the_papers_main_model(options, is_main):
    """Tables 1-3, 5 and the analyses report the main setting; Table 4 and Figure 5 the ablations."""
    assert ShortcutOptions.parse(options).main_setting is is_main
