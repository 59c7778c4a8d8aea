"""Several encoders (text sources + a feature grid), causal memories, and N memories through search and
scoring, each against an independent computation: per-sentence runs, full recomputation, a naive loop,
a hand-computed parameter sum."""

from __future__ import annotations

import math

import pytest
import torch
from model_fixtures import single_thread
from plugins.two_source_mean import STRATEGY
from torch import nn

from nmtvariants.data.vocab import BOS_ID, EOS_ID, PAD_ID
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.inference.beam_search import beam_search
from nmtvariants.inference.scorer import score_pairs, token_log_probs
from nmtvariants.models import Memory, SourceInputs, build_model, capture, count_parameters, model_config
from nmtvariants.models.interfaces import AUX_PAD
from nmtvariants.models.variants import register_strategy, register_variant, unregister_variant

VOCAB = 24
CHANNELS, REGIONS = 6, 3
SMALL = {
    "d_model": 32,
    "n_heads": 4,
    "d_ff": 64,
    "embedding_dropout": 0.0,
    "residual_dropout": 0.0,
    "attention_dropout": 0.0,
    "relu_dropout": 0.0,
}
TWO_PLUS_FEATURES = {"sources": 2, "encoder_layers": [2, 1], "features": {"channels": CHANNELS}}


class SourceBias(nn.Module):
    """Decoder-side reader of an aux stream: adds ``0.5 * bias[token]`` to the scores of attention to the
    first source. Its rows must be the decoder's (one per hypothesis in beam search)."""

    def forward(self, scores: torch.Tensor, ctx, attn) -> torch.Tensor:
        bias = ctx.aux["bias"]
        assert bias.size(0) == scores.size(0), "aux rows must follow the decoder rows"
        return scores + 0.5 * bias.clamp(min=0)[:, None, None, :].to(scores.dtype)


def install_source_bias(model, options) -> None:
    for layer in model.decoder_layers:
        layer.cross_attn.attns[0].score_transform = SourceBias()


@pytest.fixture(autouse=True, scope="module")
def _setup():
    register_variant("test_source_bias")(install_source_bias)
    with single_thread():
        yield
    unregister_variant("test_source_bias")


def make_model(multi_source: dict, seed: int = 0, **variant):
    torch.manual_seed(seed)
    cfg = model_config("tiny", overrides=SMALL, variant={"multi_source": multi_source, **variant})
    return build_model(cfg, VOCAB).eval()


def sentences(generator: torch.Generator, batch: int, low: int, high: int) -> list[list[int]]:
    lengths = torch.randint(low, high + 1, (batch,), generator=generator).tolist()
    return [[*torch.randint(4, VOCAB, (n,), generator=generator).tolist(), EOS_ID] for n in lengths]


def pad(rows: list[list[int]], value: int = PAD_ID) -> torch.Tensor:
    out = torch.full((len(rows), max(map(len, rows))), value, dtype=torch.long)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row)
    return out


def batch_inputs(generator: torch.Generator, batch: int, features: bool = True, bias: bool = False):
    """A padded SourceInputs (two sources of independent lengths, a feature grid) and its rows unpadded."""
    first, second = sentences(generator, batch, 2, 8), sentences(generator, batch, 1, 10)
    grid = torch.randn(batch, REGIONS, CHANNELS, generator=generator) if features else None
    streams = [torch.randint(0, 4, (len(s),), generator=generator).tolist() for s in first]
    aux = {"bias": pad(streams, AUX_PAD)} if bias else {}
    inputs = SourceInputs(sources=[pad(first), pad(second)], aux=aux, features=grid)
    rows = [
        SourceInputs(
            sources=[torch.tensor([first[i]]), torch.tensor([second[i]])],
            aux={"bias": torch.tensor([streams[i]])} if bias else {},
            features=None if grid is None else grid[i : i + 1],
        )
        for i in range(batch)
    ]
    return inputs, rows


def targets(generator: torch.Generator, batch: int, length: int) -> torch.Tensor:
    out = torch.randint(4, VOCAB, (batch, length), generator=generator)
    out[:, 0] = BOS_ID
    return out


# ---------------------------------------------------------------------------------------- structure
def test_parameter_count_is_the_hand_computed_sum():
    model = make_model(TWO_PLUS_FEATURES)
    d, f, v = 32, 64, VOCAB
    attention, norm = 4 * d * d, 2 * d  # bias-free Q/K/V/O; LayerNorm gain + bias
    ffn = d * f + f + f * d + d + norm
    encoder_layer = attention + norm + ffn
    memories = 3  # two text sources + the feature grid
    decoder_layer = (attention + norm) + memories * (attention + norm) + ffn
    expected = (
        v * d  # one table: source, target and output
        + (2 + 1) * encoder_layer  # depths [2, 1]
        + 2 * norm  # each text encoder's final LayerNorm
        + CHANNELS * d
        + d  # the feature projection W f + b (no LayerNorm after it: the paper's image encoder)
        + 2 * decoder_layer
        + norm  # the decoder's final LayerNorm
    )
    assert count_parameters(model) == expected
    assert len(model.encoder_layers) == 2 and len(model.source_encoders[0].layers) == 1


def test_single_source_model_has_no_extra_modules():
    model = make_model({})
    names = list(model.state_dict())
    assert not any(n.startswith(("source_encoders", "feature_encoder")) for n in names)
    assert "decoder_layers.0.cross_attn.attns.0.q_proj.weight" in names


def test_shared_encoders_apply_one_encoder_to_each_source():
    shared = make_model({"sources": 2, "share_encoders": True}, seed=3)
    assert len(shared.source_encoders) == 0
    single = make_model({}, seed=4)
    # the single-source model takes the shared model's encoder (and everything else it has)
    single.load_state_dict({k: v for k, v in shared.state_dict().items() if k in single.state_dict()})
    generator = torch.Generator().manual_seed(5)
    inputs, _ = batch_inputs(generator, 4, features=False)
    with torch.no_grad():
        memories = shared.encode_inputs(inputs)
        for memory, src in zip(memories, inputs.sources, strict=True):
            alone = single.encode_inputs(src)[0]
            torch.testing.assert_close(memory.states, alone.states)
            assert torch.equal(memory.pad_mask, src.eq(PAD_ID))
    own = make_model({"sources": 2}, seed=3)
    with torch.no_grad():
        first, second = own.encode_inputs(SourceInputs(sources=[inputs.src, inputs.src]))
    assert not torch.allclose(first.states, second.states)  # the second encoder has its own weights


def test_feature_memory_is_the_papers_projection_with_no_padding():
    """W f + b per region and nothing after it (the paper's and Neural Monkey's image encoder)."""
    model = make_model(TWO_PLUS_FEATURES)
    generator = torch.Generator().manual_seed(6)
    inputs, _ = batch_inputs(generator, 3)
    with torch.no_grad():
        memories = model.encode_inputs(inputs)
    assert len(memories) == 3
    encoder = model.feature_encoder
    assert encoder.norm is None
    d_model = SMALL["d_model"]
    assert sum(p.numel() for p in encoder.parameters()) == CHANNELS * d_model + d_model
    proj = encoder.proj
    expected = inputs.features.double() @ proj.weight.double().T + proj.bias.double()
    torch.testing.assert_close(memories[2].states.double(), expected, rtol=1e-5, atol=1e-5)
    assert not memories[2].pad_mask.any()
    # a float16 grid (as stored on disk) is read in the model's precision
    with torch.no_grad():
        half = model.feature_encoder(inputs.features.half())
    torch.testing.assert_close(half.states, memories[2].states, atol=1e-2, rtol=1e-2)


def test_feature_memory_with_the_layer_norm_option_is_the_normalised_projection():
    """``features.layer_norm: true`` (ours, not the paper's): LN(W f + b) per region."""
    model = make_model({**TWO_PLUS_FEATURES, "features": {"channels": CHANNELS, "layer_norm": True}})
    generator = torch.Generator().manual_seed(6)
    inputs, _ = batch_inputs(generator, 3)
    encoder = model.feature_encoder
    with torch.no_grad():  # gain and bias perturbed away from 1 and 0
        encoder.norm.weight.uniform_(0.5, 1.5, generator=generator)
        encoder.norm.bias.uniform_(-0.5, 0.5, generator=generator)
        memories = model.encode_inputs(inputs)
    proj, norm = encoder.proj, encoder.norm
    projected = inputs.features.double() @ proj.weight.double().T + proj.bias.double()
    mean = projected.mean(-1, keepdim=True)
    var = ((projected - mean) ** 2).mean(-1, keepdim=True)
    expected = (projected - mean) / torch.sqrt(var + norm.eps) * norm.weight.double() + norm.bias.double()
    torch.testing.assert_close(memories[2].states.double(), expected, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------- forward
@pytest.mark.parametrize("strategy", ["serial", STRATEGY])
def test_full_forward_equals_incremental_decoding_and_per_sentence(strategy):
    model = make_model({**TWO_PLUS_FEATURES, "strategy": strategy}, seed=7)
    generator = torch.Generator().manual_seed(8)
    inputs, rows = batch_inputs(generator, 4)
    tgt = targets(generator, 4, 6)
    with torch.no_grad():
        full = model(inputs, tgt)
        memories = model.encode_inputs(inputs)
        cache = model.new_cache()
        steps = [model.decode(tgt[:, t : t + 1], memories, cache) for t in range(tgt.size(1))]
        torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)
        cache = model.new_cache()
        chunks = [model.decode(tgt[:, :3], memories, cache), model.decode(tgt[:, 3:], memories, cache)]
        torch.testing.assert_close(torch.cat(chunks, 1), full, atol=1e-5, rtol=1e-5)
        # two decoder rows per memory row (beams), several positions at once
        cache = model.new_cache(group=2)
        doubled = tgt.repeat_interleave(2, 0)
        chunks = [
            model.decode(doubled[:, :2], memories, cache),
            model.decode(doubled[:, 2:], memories, cache),
        ]
        torch.testing.assert_close(torch.cat(chunks, 1), full.repeat_interleave(2, 0), atol=1e-5, rtol=1e-5)
        # padding differs per source and row: each sentence alone equals its row
        for i, row in enumerate(rows):
            torch.testing.assert_close(model(row, tgt[i : i + 1])[0], full[i], atol=1e-5, rtol=1e-5)


def test_every_memory_changes_the_output():
    model = make_model(TWO_PLUS_FEATURES, seed=9)
    generator = torch.Generator().manual_seed(10)
    inputs, _ = batch_inputs(generator, 3)
    tgt = targets(generator, 3, 5)
    with torch.no_grad():
        base = model(inputs, tgt)
        changed = [
            SourceInputs(sources=[inputs.sources[1][:, :2], inputs.sources[1]], features=inputs.features),
            SourceInputs(sources=[inputs.sources[0], inputs.sources[0]], features=inputs.features),
            SourceInputs(sources=inputs.sources, features=inputs.features.flip(0)),
        ]
        for other in changed:
            assert not torch.allclose(model(other, tgt), base)


# ---------------------------------------------------------------------------------------- causal memory
def naive_causal(model, tgt: torch.Tensor, states: torch.Tensor, lengths: list[int]) -> torch.Tensor:
    """Position t decoded from the prefix tgt[:t+1] against the memory cut to its first t+1 positions.

    Exact for a one-layer decoder only: with more layers, earlier positions would see the cut memory
    too, where under the causal mask each sees its own prefix of it.
    """
    assert len(model.decoder_layers) == 1
    out = torch.zeros(tgt.size(0), tgt.size(1), states.size(-1))
    for b in range(tgt.size(0)):
        for t in range(tgt.size(1)):
            keep = min(t + 1, lengths[b])
            memory = Memory(states[b : b + 1, :keep], torch.zeros(1, keep, dtype=torch.bool))
            out[b, t] = model.decode_states(tgt[b : b + 1, : t + 1], memory)[0, t]
    return out


def every_path(model, tgt: torch.Tensor, memory: Memory, expected: torch.Tensor) -> None:
    """Full forward (small-query matmuls, fused SDPA, explicit softmax) and incremental decoding (one
    position or several at a time, one or three decoder rows per memory row) all give ``expected``."""
    with torch.no_grad():
        torch.testing.assert_close(model.decode_states(tgt, memory), expected, atol=1e-5, rtol=1e-5)
        model.train()  # no dropout configured: the fused SDPA path
        torch.testing.assert_close(model.decode_states(tgt, memory), expected, atol=1e-5, rtol=1e-5)
        model.eval()
        with capture(model, attention=True) as rec:  # the explicit softmax path
            explicit = model.decode_states(tgt, memory)
        torch.testing.assert_close(explicit, expected, atol=1e-5, rtol=1e-5)
        weights = rec["decoder.layers.0.cross.weights"][0]
        pads = memory.pad_mask[:, None, None, :].expand_as(weights)
        assert torch.all(weights.triu(1) == 0) and torch.all(weights[pads] == 0)
        cache = model.new_cache()
        steps = [model.decode_states(tgt[:, t : t + 1], memory, cache) for t in range(tgt.size(1))]
        torch.testing.assert_close(torch.cat(steps, 1), expected, atol=1e-5, rtol=1e-5)
        for explicit_path in (False, True):  # beams folded onto one memory row, several positions
            cache = model.new_cache(group=3)
            tripled = tgt.repeat_interleave(3, 0)
            with capture(model, attention=explicit_path):
                chunks = [model.decode_states(tripled[:, :4], memory, cache)]
                chunks.append(model.decode_states(tripled[:, 4:], memory, cache))
            torch.testing.assert_close(
                torch.cat(chunks, 1), expected.repeat_interleave(3, 0), atol=1e-5, rtol=1e-5
            )


@pytest.mark.parametrize("decoder_layers", [1, 2])
def test_causal_memory_mask_equals_a_naive_loop_on_every_path(decoder_layers):
    torch.manual_seed(11)
    cfg = model_config("tiny", overrides={**SMALL, "decoder_layers": decoder_layers})
    model = build_model(cfg, VOCAB).eval()
    generator = torch.Generator().manual_seed(12)
    lengths = [6, 4, 5]
    states = torch.randn(3, 6, 32, generator=generator)
    pad_mask = torch.arange(6)[None, :] >= torch.tensor(lengths)[:, None]
    memory = Memory(states, pad_mask, causal=True)
    tgt = targets(generator, 3, 7)  # one query more than the longest memory
    with torch.no_grad():
        if decoder_layers == 1:
            expected = naive_causal(model, tgt, states, lengths)
        else:  # the reference is the full forward, checked against the loop for one layer
            expected = model.decode_states(tgt, memory)
        assert not torch.allclose(model.decode_states(tgt, Memory(states, pad_mask)), expected, atol=1e-3)
    every_path(model, tgt, memory, expected)


# ---------------------------------------------------------------------------------------- search
def naive_beam_search(model, row: SourceInputs, k: int, alpha: float, max_len: int):
    """One sentence, full recomputation of every prefix, Python lists; fairseq's rules as documented."""
    live, finished = [([BOS_ID], 0.0)], []
    with torch.no_grad():
        memories = model.encode_inputs(row)
        for t in range(max_len + 1):
            candidates = []
            for beam, (prefix, score) in enumerate(live):
                aux = {name: s.expand(1, -1) for name, s in row.aux.items()}
                logits = model.decode(torch.tensor([prefix]), memories, aux=aux)[0, -1].double()
                logp = torch.log_softmax(logits, -1).tolist()
                for token in range(len(logp)):
                    if token not in (PAD_ID, BOS_ID) and (t < max_len or token == EOS_ID):
                        candidates.append((score + logp[token], beam, token))
            candidates.sort(key=lambda c: -c[0])
            candidates = [c for c in candidates[: 2 * k] if c[0] > -math.inf]
            next_live = []
            for position, (score, beam, token) in enumerate(candidates):
                prefix = live[beam][0]
                if token == EOS_ID:
                    if position < k and len(finished) < k:
                        finished.append((score / ((5.0 + t + 1) / 6.0) ** alpha, prefix[1:]))
                elif len(next_live) < k:
                    next_live.append(([*prefix, token], score))
            live = next_live
            if len(finished) >= k or t >= max_len or not live:
                break
    return sorted(finished, key=lambda f: -f[0])


@pytest.mark.parametrize(("strategy", "bias"), [("serial", False), ("serial", True), (STRATEGY, True)])
def test_batched_beam_search_equals_per_sentence_and_naive(strategy, bias):
    """With the decoder-side stream reader (explicit attention, one row per hypothesis) and without it
    (the fast path: beams folded onto each memory's single row per sentence)."""
    plugins = {"test_source_bias": {}} if bias else {}
    model = make_model({**TWO_PLUS_FEATURES, "strategy": strategy}, seed=13, **plugins)
    generator = torch.Generator().manual_seed(14)
    inputs, rows = batch_inputs(generator, 6, bias=True)
    k, a, b = 3, 0.5, 3
    batched = beam_search(model, inputs, beam_size=k, nbest=k, alpha=0.6, max_len_a=a, max_len_b=b)
    lengths = [len(h.tokens) for hyps in batched for h in hyps]
    assert len(set(lengths)) > 1  # sentences finish at different steps: rows are dropped mid-search
    for row, hyps in zip(rows, batched, strict=True):
        single = beam_search(model, row, beam_size=k, nbest=k, alpha=0.6, max_len_a=a, max_len_b=b)[0]
        assert [h.tokens for h in hyps] == [h.tokens for h in single]
        assert [h.score for h in hyps] == pytest.approx([h.score for h in single], abs=1e-5)
        reference = naive_beam_search(model, row, k, 0.6, int(a * (row.src.size(1) - 1) + b))
        assert [h.tokens for h in hyps] == [r[1] for r in reference]
        assert [h.score for h in hyps] == pytest.approx([r[0] for r in reference], abs=1e-4)


def test_decoder_streams_matter_in_search():
    """The aux stream reaches the decoder: another stream gives other scores."""
    model = make_model(TWO_PLUS_FEATURES, seed=13, test_source_bias={})
    generator = torch.Generator().manual_seed(14)
    inputs, _ = batch_inputs(generator, 4, bias=True)
    flipped = SourceInputs(inputs.sources, {"bias": (3 - inputs.aux["bias"]).clamp(max=3)}, inputs.features)
    one = beam_search(model, inputs, beam_size=2)
    two = beam_search(model, flipped, beam_size=2)
    assert [h[0].score for h in one] != pytest.approx([h[0].score for h in two], abs=1e-6)


# ---------------------------------------------------------------------------------------- scoring
def naive_scores(model, row: SourceInputs, tgt: list[int]) -> list[float]:
    out, prefix = [], [BOS_ID]
    with torch.no_grad():
        memories = model.encode_inputs(row)
        for token in tgt:
            logits = model.decode(torch.tensor([prefix]), memories, aux=row.aux)[0, -1].double()
            out.append(float(torch.log_softmax(logits, -1)[token]))
            prefix.append(token)
    return out


@pytest.mark.parametrize("strategy", ["serial", STRATEGY])
def test_scorer_with_several_inputs_equals_naive_forced_decoding(strategy):
    model = make_model({**TWO_PLUS_FEATURES, "strategy": strategy}, seed=15, test_source_bias={})
    generator = torch.Generator().manual_seed(16)
    inputs, rows = batch_inputs(generator, 5, bias=True)
    candidates = sentences(generator, 5, 1, 6)
    scores = score_pairs(model, list(zip(rows, candidates, strict=True)), batch_size=2)
    batch = token_log_probs(model, inputs, pad(candidates))
    for i, (row, tgt, score) in enumerate(zip(rows, candidates, scores, strict=True)):
        reference = naive_scores(model, row, tgt)
        assert score.token_log_probs == pytest.approx(reference, abs=1e-5)
        assert batch[i, : len(tgt)].tolist() == pytest.approx(reference, abs=1e-5)
        assert torch.all(batch[i, len(tgt) :] == 0)


# ---------------------------------------------------------------------------------------- strategies
def test_strategy_with_one_hot_weights_is_the_standard_decoder():
    """``mean`` with weights (1, 0, 0) attends to the first source only: exactly the single-source model."""
    multi = make_model({**TWO_PLUS_FEATURES, "strategy": STRATEGY, "weights": [1, 0, 0]}, seed=17)
    single = make_model({"encoder_layers": 2}, seed=18)
    single.load_state_dict({k: v for k, v in multi.state_dict().items() if k in single.state_dict()})
    generator = torch.Generator().manual_seed(19)
    inputs, _ = batch_inputs(generator, 3)
    tgt = targets(generator, 3, 5)
    with torch.no_grad():
        torch.testing.assert_close(multi(inputs, tgt), single(inputs.src, tgt), atol=1e-5, rtol=1e-5)
        uniform = make_model({**TWO_PLUS_FEATURES, "strategy": STRATEGY}, seed=17)
        assert not torch.allclose(uniform(inputs, tgt), single(inputs.src, tgt), atol=1e-3)


def test_strategy_options_are_declared_by_the_strategy():
    with pytest.raises(ConfigError, match=r"unknown key.*weights"):
        make_model({"sources": 2, "weights": [0.5, 0.5]})  # serial has no such option
    with pytest.raises(ConfigError, match="weights: give 3 numbers"):
        make_model({**TWO_PLUS_FEATURES, "strategy": STRATEGY, "weights": [1, 0]})
    with pytest.raises(ConfigError, match=r"unknown key.*heads"):
        make_model({**TWO_PLUS_FEATURES, "strategy": STRATEGY, "heads": 2})
    with pytest.raises(ValueError, match="core keys"):
        register_strategy("bad", keys=("sources",))


# ---------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"sources": 2, "encoder_layers": [2]}, "encoder_layers: give one depth"),
        ({"sources": 2, "encoder_layers": [2, -1]}, "encoder_layers"),
        ({"sources": 2, "share_encoders": True, "encoder_layers": [2, 1]}, "one depth"),
        ({"sources": 2, "share_encoders": "yes"}, "share_encoders"),
        ({"features": {"channels": 0}}, "features"),
        ({"features": 6}, "features"),
        ({"features": {"channels": 6, "layer_norm": "yes"}}, "layer_norm"),
        ({"features": {"channels": 6, "norm": True}}, "features"),
        ({"sources": 0}, "sources"),
    ],
)
def test_bad_multi_source_config(options, message):
    with pytest.raises(ConfigError, match=message):
        make_model(options)


def test_bad_inputs_raise_clear_errors():
    model = make_model(TWO_PLUS_FEATURES)
    generator = torch.Generator().manual_seed(20)
    inputs, _ = batch_inputs(generator, 3)
    bad = [
        (SourceInputs(sources=[inputs.src], features=inputs.features), "2 text encoder.*1 source"),
        (SourceInputs(sources=inputs.sources), "needs a feature grid"),
        (SourceInputs(sources=inputs.sources, features=inputs.features[..., :4]), f"{CHANNELS}.*channels"),
        (SourceInputs(sources=inputs.sources, features=inputs.features[:2]), "2 rows for 3 sentences"),
        (SourceInputs(sources=[inputs.src, inputs.sources[1][:2]], features=inputs.features), "source 1"),
        (
            SourceInputs(inputs.sources, {"parents": inputs.src[:, :-1]}, inputs.features),
            "stream 'parents' has shape",
        ),
    ]
    for wrong, message in bad:
        with pytest.raises(InputError, match=message):
            model.encode_inputs(wrong)
    with pytest.raises(InputError, match="2 text encoder"):
        beam_search(model, inputs.src)
    with pytest.raises(InputError, match="no feature encoder"):
        make_model({"sources": 2}).encode_inputs(inputs)
