"""The parallel, flat and hierarchical multi-source strategies (plugins/multi_source/modules.py) against
independent computations: their equations written out in float64 per sentence (unpadded slices of the
memories instead of masks, one loop per head), the standard decoder for one encoder, per-sentence and
naive beam search, and full recomputation for incremental decoding."""

from __future__ import annotations

import math

import pytest
import torch
from model_fixtures import single_thread
from test_multi_encoder import (
    SMALL,
    TWO_PLUS_FEATURES,
    VOCAB,
    batch_inputs,
    make_model,
    naive_beam_search,
    targets,
)

from nmtvariants.cli import main
from nmtvariants.errors import ConfigError
from nmtvariants.inference.beam_search import beam_search
from nmtvariants.models import Memory, build_model, capture, count_parameters, model_config
from nmtvariants.models.interfaces import StackContext
from nmtvariants.plugins.multi_source.modules import FlatCross, HierarchicalCross, ParallelCross

STRATEGIES = ["parallel", "flat", "hierarchical"]
D = 32  # test_multi_encoder.SMALL


@pytest.fixture(autouse=True, scope="module")
def _single_thread():
    with single_thread():
        yield


# ---------------------------------------------------------------------------------------- float64
def layer_norm64(x: torch.Tensor, norm: torch.nn.LayerNorm) -> torch.Tensor:
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight.double() + norm.bias.double()


def attention64(query: torch.Tensor, states: torch.Tensor, attn) -> torch.Tensor:
    """Multi-head attention of queries [Tq, d] over every row of ``states`` [S, d], head by head."""
    w = {name: getattr(attn, name).weight.double() for name in ("q_proj", "k_proj", "v_proj", "o_proj")}
    q, k, v = query @ w["q_proj"].T, states @ w["k_proj"].T, states @ w["v_proj"].T
    heads = []
    for head in range(attn.n_heads):
        cols = slice(head * attn.d_head, (head + 1) * attn.d_head)
        scores = q[:, cols] @ k[:, cols].T / math.sqrt(attn.d_head)
        heads.append(torch.softmax(scores, dim=-1) @ v[:, cols])
    return torch.cat(heads, dim=-1) @ w["o_proj"].T


def reference64(
    block, x: torch.Tensor, states: list[torch.Tensor], lengths: list[list[int]], post: bool, causal: int
) -> torch.Tensor:
    """Eqs 4-8 (seed brief §4.2) without dropout, one sentence b and query t at a time: memory i's first
    lengths[i][b] rows, only the first t + 1 of them for the ``causal``-th memory. Pre-norm: queries
    LN(x), output x + y; post-norm: queries x, output LN(x + y)."""
    out = torch.zeros(x.shape, dtype=torch.float64)
    for b in range(x.size(0)):
        xb = x[b].double()
        q = xb if post else layer_norm64(xb, block.norm)
        for t in range(x.size(1)):
            real = [
                s[b, : min(n[b], t + 1) if i == causal else n[b]].double()
                for i, (s, n) in enumerate(zip(states, lengths, strict=True))
            ]
            query = q[t : t + 1]
            if isinstance(block, FlatCross):
                y = attention64(query, torch.cat(real), block.attns[0])[0]
            else:
                contexts = [attention64(query, s, attn)[0] for s, attn in zip(real, block.attns, strict=True)]
                if isinstance(block, HierarchicalCross):  # second level: over the N contexts of position t
                    y = attention64(query, torch.stack(contexts), block.hier)[0]
                else:
                    y = sum(contexts)
            out[b, t] = layer_norm64(xb[t] + y, block.norm) if post else xb[t] + y
    return out


@pytest.mark.parametrize(
    ("strategy", "norm", "causal"),
    [(s, "pre", -1) for s in STRATEGIES] + [(s, "post", 0) for s in STRATEGIES],
)
def test_strategy_equals_its_equations_in_float64(strategy, norm, causal):
    """Random states with padding (garbage behind it), two text memories of other lengths and a feature
    grid; in the post-norm cases the first memory is causal (query t sees its first t + 1 positions)."""
    extra = {"hier_heads": 2} if strategy == "hierarchical" else {}
    torch.manual_seed(21)
    cfg = model_config(
        "tiny",
        overrides={**SMALL, "norm": norm},
        variant={"multi_source": {**TWO_PLUS_FEATURES, "strategy": strategy, **extra}},
    )
    block = build_model(cfg, VOCAB).eval().decoder_layers[1].cross_attn
    kinds = {"parallel": ParallelCross, "flat": FlatCross, "hierarchical": HierarchicalCross}
    assert type(block) is kinds[strategy]
    generator = torch.Generator().manual_seed(22)
    batch, queries = 4, 5
    x = torch.randn(batch, queries, D, generator=generator)
    lengths = [[7, 2, 5, 4], [1, 6, 3, 6], [3, 3, 3, 3]]  # two padded sources of other lengths, a grid
    states = [torch.randn(batch, max(n), D, generator=generator) for n in lengths]
    memories = [
        Memory(s, torch.arange(s.size(1))[None, :] >= torch.tensor(n)[:, None], causal=i == causal)
        for i, (s, n) in enumerate(zip(states, lengths, strict=True))
    ]
    for memory in memories:  # garbage behind the padding must not matter
        memory.states[memory.pad_mask] = 1e3
    ctx = StackContext(side="decoder", embeddings=x, history=[x])
    with torch.no_grad():
        got = block(x, ctx, memories, [m.attend_mask(queries) for m in memories])
        expected = reference64(block, x, states, lengths, post=norm == "post", causal=causal)
    torch.testing.assert_close(got.double(), expected, atol=2e-5, rtol=1e-5)
    if strategy == "hierarchical":
        assert block.hier.n_heads == 2


# ---------------------------------------------------------------------------------------- one encoder
def one_source_pair(strategy: str):
    """The baseline decoder and the strategy's one-encoder model holding the baseline's weights."""
    baseline = make_model({}, seed=23)
    model = make_model({"strategy": strategy}, seed=24)
    missing, unexpected = model.load_state_dict(baseline.state_dict(), strict=False)
    assert not unexpected
    return baseline, model, missing


def one_source_batch():
    generator = torch.Generator().manual_seed(25)
    inputs, _ = batch_inputs(generator, 4, features=False)
    return inputs.src, targets(generator, 4, 6)


@pytest.mark.parametrize("strategy", ["parallel", "flat"])
def test_one_encoder_is_the_standard_decoder(strategy):
    """Parallel (a sum of one context) and flat (attention over one encoder's states) are, for one
    encoder, the standard cross-attention sub-layer: same parameters, same outputs."""
    baseline, model, missing = one_source_pair(strategy)
    assert missing == [] and count_parameters(model) == count_parameters(baseline)
    src, tgt = one_source_batch()
    with torch.no_grad():
        torch.testing.assert_close(model(src, tgt), baseline(src, tgt), atol=1e-6, rtol=1e-6)


def test_hierarchical_one_encoder_is_the_standard_decoder_up_to_its_value_output_map():
    """With one encoder the second-level softmax is over one context (weight 1), so the sub-layer is
    ``x + W_O^h W_V^h c``: the standard decoder exactly when that map is the identity, not otherwise."""
    baseline, model, missing = one_source_pair("hierarchical")
    assert sorted({name.split("hier.")[1] for name in missing}) == [
        "k_proj.weight",
        "o_proj.weight",
        "q_proj.weight",
        "v_proj.weight",
    ]
    src, tgt = one_source_batch()
    with torch.no_grad():
        assert not torch.allclose(model(src, tgt), baseline(src, tgt), atol=1e-3)
        for layer in model.decoder_layers:
            layer.cross_attn.hier.v_proj.weight.copy_(torch.eye(D))
            layer.cross_attn.hier.o_proj.weight.copy_(torch.eye(D))
        with capture(model, attention=True) as rec:
            got = model(src, tgt)
        torch.testing.assert_close(got, baseline(src, tgt), atol=1e-6, rtol=1e-6)
    weights = rec["decoder.layers.0.cross.hier.weights"][0]
    assert weights.shape == (src.size(0) * tgt.size(1), 4, 1, 1) and torch.all(weights == 1)


# ---------------------------------------------------------------------------------------- decoding
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_full_forward_equals_incremental_decoding_and_per_sentence(strategy):
    model = make_model({**TWO_PLUS_FEATURES, "strategy": strategy}, seed=26)
    generator = torch.Generator().manual_seed(27)
    inputs, rows = batch_inputs(generator, 4)
    tgt = targets(generator, 4, 6)
    with torch.no_grad():
        full = model(inputs, tgt)
        memories = model.encode_inputs(inputs)
        cache = model.new_cache()
        steps = [model.decode(tgt[:, t : t + 1], memories, cache) for t in range(tgt.size(1))]
        torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)
        # every encoder's keys/values are cached once: flat's are one pair over all memories
        cross = cache.layers[0].cross
        total = sum(m.states.size(1) for m in memories)
        sizes = [k.size(2) for k, _ in cross]
        assert sizes == ([total] if strategy == "flat" else [m.states.size(1) for m in memories])
        cache = model.new_cache(group=2)  # two decoder rows (beams) per memory row, chunks of positions
        doubled = tgt.repeat_interleave(2, 0)
        chunks = [
            model.decode(doubled[:, :2], memories, cache),
            model.decode(doubled[:, 2:], memories, cache),
        ]
        torch.testing.assert_close(torch.cat(chunks, 1), full.repeat_interleave(2, 0), atol=1e-5, rtol=1e-5)
        for i, row in enumerate(rows):  # each source padded differently: a sentence alone equals its row
            torch.testing.assert_close(model(row, tgt[i : i + 1])[0], full[i], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_batched_beam_search_equals_per_sentence_and_naive(strategy):
    model = make_model({**TWO_PLUS_FEATURES, "strategy": strategy}, seed=28)
    generator = torch.Generator().manual_seed(29)
    inputs, rows = batch_inputs(generator, 5)
    k, a, b = 3, 0.5, 3
    batched = beam_search(model, inputs, beam_size=k, nbest=k, alpha=0.6, max_len_a=a, max_len_b=b)
    for row, hyps in zip(rows, batched, strict=True):
        single = beam_search(model, row, beam_size=k, nbest=k, alpha=0.6, max_len_a=a, max_len_b=b)[0]
        assert [h.tokens for h in hyps] == [h.tokens for h in single]
        assert [h.score for h in hyps] == pytest.approx([h.score for h in single], abs=1e-5)
        reference = naive_beam_search(model, row, k, 0.6, int(a * (row.src.size(1) - 1) + b))
        assert [h.tokens for h in hyps] == [r[1] for r in reference]
        assert [h.score for h in hyps] == pytest.approx([r[0] for r in reference], abs=1e-4)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_memory_changes_the_output_and_trains(strategy):
    model = make_model({**TWO_PLUS_FEATURES, "strategy": strategy}, seed=30)
    generator = torch.Generator().manual_seed(31)
    inputs, _ = batch_inputs(generator, 3)
    tgt = targets(generator, 3, 5)
    with torch.no_grad():
        base = model(inputs, tgt)
        swapped = [inputs.sources[1], inputs.sources[0]]
        assert not torch.allclose(model(type(inputs)(swapped, features=inputs.features), tgt), base)
        assert not torch.allclose(
            model(type(inputs)(inputs.sources, features=inputs.features.flip(0)), tgt), base
        )
    model.train()
    for module in model.modules():  # dropout on: the training path of every sub-layer
        if hasattr(module, "dropout") and isinstance(module.dropout, float):
            module.dropout = 0.1
    model(inputs, tgt).logsumexp(-1).sum().backward()
    block = model.decoder_layers[0].cross_attn
    blocks = [*block.attns, *([block.hier] if strategy == "hierarchical" else [])]
    assert all(attn.q_proj.weight.grad.abs().sum() > 0 for attn in blocks)


def test_bad_hier_heads():
    with pytest.raises(ConfigError, match="hier_heads: must be a positive divisor of d_model 32"):
        make_model({"sources": 2, "strategy": "hierarchical", "hier_heads": 3})
    with pytest.raises(ConfigError, match=r"unknown key.*hier_heads"):
        make_model({"sources": 2, "strategy": "flat", "hier_heads": 2})


def test_count_params_command_builds_every_strategy(capsys):
    """Through the CLI with the tiny preset and three sources; the counts differ by the hand-computed
    attention sizes: flat has one attention per layer, parallel one per source, hierarchical one more."""
    counts = {}
    for strategy in STRATEGIES:
        variant = f'{{"multi_source": {{"strategy": "{strategy}", "sources": 3}}}}'
        assert main(["count-params", "--preset", "tiny", "--variant", variant]) == 0
        counts[strategy] = int(capsys.readouterr().out.split()[-1])
    attention, layers = 4 * 64 * 64, 2  # tiny: d_model 64, two decoder layers, bias-free Q/K/V/O
    assert counts["parallel"] - counts["flat"] == layers * 2 * attention
    assert counts["hierarchical"] - counts["parallel"] == layers * attention


def test_hierarchical_second_level_uses_the_main_dropout_rate():
    """Neural Monkey's NOTE: the second-level attention dropout is the main (residual) dropout rate."""
    torch.manual_seed(32)
    cfg = model_config(
        "tiny",
        overrides={**SMALL, "residual_dropout": 0.3, "attention_dropout": 0.05},
        variant={"multi_source": {"sources": 2, "strategy": "hierarchical"}},
    )
    block = build_model(cfg, VOCAB).decoder_layers[0].cross_attn
    assert block.hier.dropout == 0.3 and [a.dropout for a in block.attns] == [0.05, 0.05]
    assert block.hier.n_heads == cfg.n_heads  # hier_heads defaults to the model's heads


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_recorded_attention_weights_cover_every_memory_and_skip_padding(strategy):
    model = make_model({**TWO_PLUS_FEATURES, "strategy": strategy}, seed=33)
    generator = torch.Generator().manual_seed(34)
    inputs, _ = batch_inputs(generator, 3)
    tgt = targets(generator, 3, 4)
    with torch.no_grad():
        memories = model.encode_inputs(inputs)
        with capture(model, attention=True) as rec:
            model.decode(tgt, memories)
    pads = [m.pad_mask for m in memories]
    if strategy == "flat":
        weights = rec["decoder.layers.1.cross.weights"][0]  # [B, H, T, S_1 + S_2 + R]
        assert weights.size(-1) == sum(p.size(1) for p in pads)
        torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
        assert torch.all(weights[torch.cat(pads, 1)[:, None, None, :].expand_as(weights)] == 0)
        shares = [w.sum(-1) for w in weights.split([p.size(1) for p in pads], dim=-1)]
        assert all(torch.all(share > 0) for share in shares)
        return
    for i, pad in enumerate(pads):
        weights = rec[f"decoder.layers.1.cross.{i}.weights"][0]
        assert torch.all(weights[pad[:, None, None, :].expand_as(weights)] == 0)
    if strategy == "hierarchical":
        hier = rec["decoder.layers.1.cross.hier.weights"][0]
        assert hier.shape == (3 * 4, 4, 1, 3)
        torch.testing.assert_close(hier.sum(-1), torch.ones(hier.shape[:-1]))
