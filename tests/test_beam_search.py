"""Batched incremental beam search against a naive per-sentence beam search over full recomputation."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pytest
import torch
import yaml
from model_fixtures import reverse_batch, single_thread, trained_reverse_model

from nmtvariants.data.vocab import BOS_ID, EOS_ID, PAD_ID
from nmtvariants.inference import cli as inference_cli
from nmtvariants.inference.beam_search import beam_search, greedy_search, max_lengths
from nmtvariants.inference.defaults import MAX_LEN_A, MAX_LEN_B
from nmtvariants.models import build_model, model_config
from nmtvariants.studies.yang2020 import cli as yang2020_cli
from nmtvariants.studies.yang2020.tables import SpeedSettings


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with single_thread():
        yield


VOCAB = 24


def naive_beam_search(model, src_ids, k, length_norm, alpha, max_len, nbest, min_len=0):
    """Obviously-correct reference: one sentence, Python lists, the full prefix recomputed every step."""

    def lp(length):
        if length_norm == "gnmt":
            return ((5.0 + length) / 6.0) ** alpha
        if length_norm == "average":
            return float(length)
        return 1.0

    src = torch.tensor([src_ids])
    live = [([BOS_ID], 0.0)]
    finished = []  # (normalised, logp, tokens)
    with torch.no_grad():
        memory = model.encode(src)
        for t in range(max_len + 1):
            candidates = []
            for beam, (prefix, score) in enumerate(live):
                logits = model.decode(torch.tensor([prefix]), memory)[0, -1].double()
                logp = torch.log_softmax(logits, -1).tolist()
                for token in range(len(logp)):
                    if token in (PAD_ID, BOS_ID):
                        continue
                    if token == EOS_ID and t < min_len and t < max_len:
                        continue
                    if t >= max_len and token != EOS_ID:
                        continue
                    candidates.append((score + logp[token], beam, token))
            candidates.sort(key=lambda c: -c[0])
            candidates = [c for c in candidates[: 2 * k] if c[0] > -math.inf]
            next_live = []
            for position, (score, beam, token) in enumerate(candidates):
                prefix = live[beam][0]
                if token == EOS_ID:
                    if position < k and len(finished) < k:
                        finished.append((score / lp(t + 1), score, prefix[1:]))
                elif len(next_live) < k:
                    next_live.append(([*prefix, token], score))
            live = next_live
            if len(finished) >= k or t >= max_len or not live:
                break
    order = sorted(range(len(finished)), key=lambda i: (-finished[i][0], i))[:nbest]
    return [finished[i] for i in order]


def random_batch(generator, batch, vocab=VOCAB, min_len=2, max_len=9):
    lengths = torch.randint(min_len, max_len + 1, (batch,), generator=generator).tolist()
    sentences = [[*torch.randint(4, vocab, (n,), generator=generator).tolist(), EOS_ID] for n in lengths]
    return sentences, pad(sentences)


def pad(sentences):
    out = torch.full((len(sentences), max(map(len, sentences))), PAD_ID, dtype=torch.long)
    for i, s in enumerate(sentences):
        out[i, : len(s)] = torch.tensor(s)
    return out


def tiny_model(vocab, seed=0):
    torch.manual_seed(seed)
    cfg = model_config("tiny", overrides={"d_model": 32, "n_heads": 4, "d_ff": 64})
    return build_model(cfg, vocab).eval()


@pytest.fixture(scope="module")
def random_model():
    return tiny_model(VOCAB)


@pytest.fixture(scope="module")
def eos_prone_model():
    """A 10-type vocabulary: </s> is likely at every step, so hypotheses finish at many lengths and
    the first step has fewer than 2K finite candidates."""
    return tiny_model(10, seed=1)


@pytest.mark.parametrize(
    ("k", "norm", "alpha", "nbest"),
    [(4, "gnmt", 0.6, 3), (3, "average", 0.0, 1), (5, "none", 0.0, 2), (1, "gnmt", 1.0, 1)],
)
@pytest.mark.parametrize("which", ["random_model", "eos_prone_model"])
def test_batched_equals_naive_reference(request, which, k, norm, alpha, nbest):
    model = request.getfixturevalue(which)
    generator = torch.Generator().manual_seed(k)
    sentences, src = random_batch(generator, 6, vocab=model.vocab_size)
    a, b = 0.5, 3
    batched = beam_search(
        model, src, beam_size=k, length_norm=norm, alpha=alpha, max_len_a=a, max_len_b=b, nbest=nbest
    )
    for sentence, hyps in zip(sentences, batched, strict=True):
        reference = naive_beam_search(
            model, sentence, k, norm, alpha, int(a * (len(sentence) - 1) + b), nbest
        )
        assert [h.tokens for h in hyps] == [r[2] for r in reference]
        for h, r in zip(hyps, reference, strict=True):
            assert h.score == pytest.approx(r[0], abs=1e-4)
            assert h.log_prob == pytest.approx(r[1], abs=1e-4)


def test_batched_equals_per_sentence(random_model):
    generator = torch.Generator().manual_seed(11)
    sentences, src = random_batch(generator, 9, max_len=12)
    batched = beam_search(random_model, src, beam_size=4, nbest=4)
    for sentence, hyps in zip(sentences, batched, strict=True):
        single = beam_search(random_model, torch.tensor([sentence]), beam_size=4, nbest=4)[0]
        assert [h.tokens for h in hyps] == [h.tokens for h in single]
        assert [h.score for h in hyps] == pytest.approx([h.score for h in single], abs=1e-5)


def test_min_and_max_length_fix_the_output_length(random_model):
    generator = torch.Generator().manual_seed(3)
    _, src = random_batch(generator, 5)
    hyps = beam_search(random_model, src, beam_size=3, nbest=3, min_len=7, max_len_a=0, max_len_b=7)
    assert all(len(h.tokens) == 7 for sentence in hyps for h in sentence)
    assert all(len(sentence) == 3 for sentence in hyps)


def test_greedy_is_argmax_chain(random_model):
    generator = torch.Generator().manual_seed(5)
    sentences, src = random_batch(generator, 4)
    outputs = greedy_search(random_model, src, max_len_a=1.0, max_len_b=2)
    for sentence, out in zip(sentences, outputs, strict=True):
        memory = random_model.encode(torch.tensor([sentence]))
        prefix = [BOS_ID]
        with torch.no_grad():
            for _ in range(len(sentence) - 1 + 2):
                logits = random_model.decode(torch.tensor([prefix]), memory)[0, -1]
                logits[[PAD_ID, BOS_ID]] = -math.inf
                token = int(logits.argmax())
                if token == EOS_ID:
                    break
                prefix.append(token)
        assert out == prefix[1:]


def test_max_lengths_formula():
    src = pad([[5, 6, 7, EOS_ID], [5, EOS_ID]])
    assert max_lengths(src, 1.5, 10).tolist() == [int(1.5 * 3 + 10), int(1.5 * 1 + 10)]


def test_trained_model_batched_equals_naive_and_per_sentence():
    model = trained_reverse_model()
    generator = torch.Generator().manual_seed(21)
    *_, sources = reverse_batch(generator, 12)
    src = pad(sources)
    batched = beam_search(model, src, beam_size=3, nbest=3, alpha=0.6)
    exact = 0
    for sentence, hyps in zip(sources, batched, strict=True):
        reference = naive_beam_search(model, sentence, 3, "gnmt", 0.6, int(1.5 * (len(sentence) - 1) + 10), 3)
        assert [h.tokens for h in hyps] == [r[2] for r in reference]
        assert [h.score for h in hyps] == pytest.approx([r[0] for r in reference], abs=1e-4)
        single = beam_search(model, torch.tensor([sentence]), beam_size=3, nbest=3, alpha=0.6)[0]
        assert [h.tokens for h in hyps] == [h.tokens for h in single]
        exact += hyps[0].tokens == sentence[:-1][::-1]
    # the model learned the task, so the finished hypotheses ended by choice, not at the length cap
    assert exact >= 10


def test_every_length_cap_default_is_the_one_in_inference_defaults():
    """The config schema cannot import the constants, and the command-line defaults had drifted once
    (1.2 in the Yang speed command): every place that defaults the cap must agree with them."""
    schema = yaml.safe_load((Path(__file__).resolve().parents[1] / "schemas/config.schema.yaml").read_text())
    evaluate = schema["$defs"]["experiment"]["properties"]["evaluate"]["properties"]
    assert (evaluate["max_len_a"]["default"], evaluate["max_len_b"]["default"]) == (MAX_LEN_A, MAX_LEN_B)
    assert (SpeedSettings().max_len_a, SpeedSettings().max_len_b) == (MAX_LEN_A, MAX_LEN_B)
    for module, command in ((inference_cli, "translate"), (yang2020_cli, "yang2020-decode-speed")):
        subparsers = argparse.ArgumentParser().add_subparsers()
        module.add_parser(subparsers)
        parser = subparsers.choices[command]
        assert (parser.get_default("max_len_a"), parser.get_default("max_len_b")) == (MAX_LEN_A, MAX_LEN_B)
