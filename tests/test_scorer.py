"""Forced-decoding scorer and the translate/score/count-params commands."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from model_fixtures import REVERSE_VOCAB, reverse_batch, single_thread, trained_reverse_model

from nmtvariants.cli import main
from nmtvariants.data.vocab import BOS_ID, EOS_ID, SPECIALS, Vocabulary
from nmtvariants.inference.beam_search import beam_search
from nmtvariants.inference.scorer import pad_batch, score_pairs


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with single_thread():
        yield


def naive_token_log_probs(model, src_ids, tgt_ids):
    """One pair, one prefix at a time, float64 log-softmax."""
    out = []
    with torch.no_grad():
        memory = model.encode(torch.tensor([src_ids]))
        prefix = [BOS_ID]
        for token in tgt_ids:
            logits = model.decode(torch.tensor([prefix]), memory)[0, -1].double()
            out.append(float(torch.log_softmax(logits, -1)[token]))
            prefix.append(token)
    return out


def test_scores_equal_naive_forced_decoding():
    model = trained_reverse_model()
    generator = torch.Generator().manual_seed(31)
    *_, sources = reverse_batch(generator, 9, min_len=1, max_len=7)
    pairs = [(s, [*s[:-1][::-1], EOS_ID]) for s in sources]
    pairs += [(sources[0], [EOS_ID]), (sources[1], [5, 6, 7, 8, 9, 10, 11, 12, 13, 4, EOS_ID])]
    scores = score_pairs(model, pairs, batch_size=4)
    for (src, tgt), score in zip(pairs, scores, strict=True):
        reference = naive_token_log_probs(model, src, tgt)
        assert score.token_log_probs == pytest.approx(reference, abs=1e-5)
        assert score.sum == pytest.approx(sum(reference), abs=1e-5)
        assert score.mean == pytest.approx(sum(reference) / len(tgt), abs=1e-5)


def test_reference_outscores_contrastive_candidates():
    """ContraWSD-style use: the trained reverser prefers the true reversal to a one-token change."""
    model = trained_reverse_model()
    generator = torch.Generator().manual_seed(32)
    *_, sources = reverse_batch(generator, 20)
    pairs, contrastive = [], []
    for s in sources:
        reference = [*s[:-1][::-1], EOS_ID]
        changed = list(reference)
        changed[0] = 4 + (changed[0] - 4 + 1) % (REVERSE_VOCAB - 4)
        pairs.append((s, reference))
        contrastive.append((s, changed))
    good, bad = score_pairs(model, pairs), score_pairs(model, contrastive)
    wins = sum(g.sum > b.sum for g, b in zip(good, bad, strict=True))
    assert wins >= 18


def test_beam_search_scores_equal_forced_decoding_scores():
    model = trained_reverse_model()
    generator = torch.Generator().manual_seed(33)
    *_, sources = reverse_batch(generator, 6)
    hyps = beam_search(model, pad_batch(sources), beam_size=4, nbest=4, length_norm="none")
    pairs = [(s, [*h.tokens, EOS_ID]) for s, sentence in zip(sources, hyps, strict=True) for h in sentence]
    flat = [h for sentence in hyps for h in sentence]
    for h, score in zip(flat, score_pairs(model, pairs), strict=True):
        assert h.log_prob == pytest.approx(score.sum, abs=1e-4)
        assert h.score == pytest.approx(score.sum, abs=1e-4)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    model = trained_reverse_model()
    folder = tmp_path_factory.mktemp("ckpt")
    vocab = Vocabulary([*SPECIALS, *(f"w{i}" for i in range(REVERSE_VOCAB - 4))])
    vocab.save(folder / "vocab.txt")
    path = folder / "model.pt"
    torch.save(
        {
            "model_config": dataclasses.asdict(model.cfg),
            "vocab_size": REVERSE_VOCAB,
            "model": model.state_dict(),
        },
        path,
    )
    return path, folder / "vocab.txt", vocab


def test_translate_command_keeps_empty_lines(checkpoint, tmp_path):
    path, vocab_path, _ = checkpoint
    lines = ["w1 w2 w3", "", "w4 w5 w6 w7 w8", "w9 w0 w3"]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
    rc = main(
        [
            "translate",
            "--checkpoint",
            str(path),
            "--vocab",
            str(vocab_path),
            "--input",
            str(tmp_path / "in.txt"),
            "--output",
            str(tmp_path / "out.txt"),
            "--beam",
            "3",
            "--batch-size",
            "2",
        ]
    )
    assert rc == 0
    out = (tmp_path / "out.txt").read_text().split("\n")
    assert out[:-1] == [" ".join(line.split()[::-1]) for line in lines] and out[-1] == ""
    rc = main(
        [
            "translate",
            "--checkpoint",
            str(path),
            "--vocab",
            str(vocab_path),
            "--input",
            str(tmp_path / "in.txt"),
            "--output",
            str(tmp_path / "nbest.txt"),
            "--beam",
            "3",
            "--nbest",
            "2",
        ]
    )
    nbest = (tmp_path / "nbest.txt").read_text().splitlines()
    assert [line.split(" ||| ")[0] for line in nbest] == ["0", "0", "1", "2", "2", "3", "3"]
    assert nbest[0].split(" ||| ")[1] == "w3 w2 w1"


def test_score_command(checkpoint, tmp_path, capsys):
    path, vocab_path, vocab = checkpoint
    (tmp_path / "src").write_text("w1 w2 w3\nw4 w5\n")
    (tmp_path / "tgt").write_text("w3 w2 w1\nw4 w5\n")
    base = [
        "score",
        "--checkpoint",
        str(path),
        "--vocab",
        str(vocab_path),
        "--source",
        str(tmp_path / "src"),
        "--target",
        str(tmp_path / "tgt"),
    ]
    expected = score_pairs(
        trained_reverse_model(),
        [
            (vocab.encode("w1 w2 w3"), vocab.encode("w3 w2 w1")),
            (vocab.encode("w4 w5"), vocab.encode("w4 w5")),
        ],
    )
    assert main([*base, "--output", str(tmp_path / "mean")]) == 0
    mean = [float(x) for x in (tmp_path / "mean").read_text().split()]
    assert mean == pytest.approx([-s.mean for s in expected], abs=1e-5)
    assert mean[0] < mean[1]  # the true reversal is the likelier one
    assert main([*base, "--output", str(tmp_path / "sum"), "--sum"]) == 0
    assert [float(x) for x in (tmp_path / "sum").read_text().split()] == pytest.approx(
        [-s.sum for s in expected], abs=1e-5
    )
    assert main([*base, "--output", str(tmp_path / "tok"), "--per-token"]) == 0
    per_token = [[float(x) for x in line.split()] for line in (tmp_path / "tok").read_text().splitlines()]
    assert [len(x) for x in per_token] == [4, 3]
    (tmp_path / "tgt").write_text("w3 w2 w1\n")
    assert main([*base, "--output", str(tmp_path / "bad")]) == 2
    assert "must be line-parallel" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_vocabulary_must_match_checkpoint(checkpoint, tmp_path, capsys):
    path, _, _ = checkpoint
    Vocabulary([*SPECIALS, "a"]).save(tmp_path / "small.txt")
    (tmp_path / "in.txt").write_text("a\n")
    rc = main(
        [
            "translate",
            "--checkpoint",
            str(path),
            "--vocab",
            str(tmp_path / "small.txt"),
            "--input",
            str(tmp_path / "in.txt"),
            "--output",
            str(tmp_path / "out.txt"),
        ]
    )
    assert rc == 2
    assert "5 types, but the checkpoint's model has 14" in capsys.readouterr().err


def test_count_params_command(capsys, tmp_path):
    assert main(["count-params", "--preset", "base"]) == 0
    assert capsys.readouterr().out.strip() == "65166336"
    (tmp_path / "model.yaml").write_text("model:\n  preset: big\n  variant: {decoder_layout: simplified}\n")
    assert main(["count-params", "--config", str(tmp_path / "model.yaml"), "-v"]) == 0
    lines = capsys.readouterr().out.splitlines()
    ffn = 6 * (2 * 1024 * 4096 + 4096 + 1024 + 2 * 1024)
    assert int(lines[0]) == 218_413_056 - ffn
    assert any(line.startswith("decoder_layers.0\t") for line in lines[1:])
    assert main(["count-params", "--variant", "{bad json"]) == 2
    assert "not valid JSON" in capsys.readouterr().err
