"""Two sources and a feature grid from files through the trainer, ``translate`` and ``score``.

A model with two text encoders and a feature encoder (``variant.multi_source``) trains for a few
updates on files named in the run config; the commands' batched output is compared with a
per-sentence beam search and forced decoding over hand-built one-sentence inputs.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch
from training_fixtures import cli_env, make_corpus, run_config

from nmtvariants.data.vocab import Vocabulary
from nmtvariants.errors import ConfigError
from nmtvariants.fileio import read_lines, write_lines
from nmtvariants.inference.beam_search import beam_search
from nmtvariants.inference.scorer import token_log_probs
from nmtvariants.models import load_model
from nmtvariants.models.interfaces import SourceInputs
from nmtvariants.training.train_config import parse_run_config
from nmtvariants.training.trainer import Trainer, train

CHANNELS = 6
VARIANT = {"multi_source": {"sources": 2, "encoder_layers": [1, 1], "features": {"channels": CHANNELS}}}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """make_corpus plus a second source (the first reversed) and a feature grid per split."""
    root = tmp_path_factory.mktemp("corpus")
    data: dict[str, object] = dict(make_corpus(root, pairs=80))
    rng = np.random.default_rng(3)
    for split in ("train", "valid"):
        lines = list(read_lines(data[f"{split}_src"]))
        write_lines(root / f"{split}.src2", [" ".join(line.split()[::-1]) for line in lines])
        np.save(root / f"{split}.npy", rng.standard_normal((len(lines), 3, CHANNELS)).astype(np.float16))
        data[f"{split}_sources"] = [str(root / f"{split}.src2")]
        data[f"{split}_features"] = str(root / f"{split}.npy")
    return data


def config_for(corpus, **train_settings):
    config = run_config(corpus, {"encoder_layers": 1, "decoder_layers": 1}, **train_settings)
    config["variant"] = VARIANT
    return config


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nmtvariants", *args],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_two_sources_and_features_train_translate_and_score(corpus, tmp_path):
    train(parse_run_config(config_for(corpus, max_updates=6, save_every=6, valid_every=6)), tmp_path)
    checkpoint = str(tmp_path / "final.pt")
    src, src2, tgt, feats = (
        corpus["valid_src"],
        corpus["valid_sources"][0],
        corpus["valid_tgt"],
        corpus["valid_features"],
    )
    hyp, scores = tmp_path / "hyp", tmp_path / "scores"
    common = [
        "--checkpoint",
        checkpoint,
        "--vocab",
        corpus["vocab"],
        "--batch-size",
        "4",
        "--features",
        feats,
    ]
    result = cli(
        "translate", *common, "--input", src, "--extra-source", src2, "--output", str(hyp), "--beam", "3"
    )
    assert result.returncode == 0, result.stderr
    sources = ["--source", src, "--source", src2]
    result = cli("score", *common, *sources, "--target", tgt, "--output", str(scores), "--per-token")
    assert result.returncode == 0, result.stderr

    model = load_model(checkpoint).eval()
    vocab = Vocabulary.load(corpus["vocab"])
    grid = np.load(feats)
    hyps, per_token = list(read_lines(hyp)), list(read_lines(scores))
    triples = zip(read_lines(src), read_lines(src2), read_lines(tgt), strict=True)
    for index, (first, second, target) in enumerate(triples):
        inputs = SourceInputs(
            [torch.tensor([vocab.encode(first)]), torch.tensor([vocab.encode(second)])],
            features=torch.from_numpy(grid[index : index + 1].astype(np.float32)),
        )
        ((best, *_),) = beam_search(model, inputs, beam_size=3)
        assert hyps[index] == vocab.decode(best.tokens), index
        logp = token_log_probs(model, inputs, torch.tensor([vocab.encode(target)]))[0]
        expected = torch.tensor([float(v) for v in per_token[index].split()])
        torch.testing.assert_close(expected, -logp, rtol=1e-4, atol=1e-4)

    result = cli("score", *common, "--source", src, "--target", tgt, "--output", str(scores))
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_the_run_config_must_feed_every_encoder(corpus, tmp_path):
    missing = config_for(corpus)
    missing["data"] = {k: v for k, v in corpus.items() if k not in ("train_sources", "valid_sources")}
    with pytest.raises(
        ConfigError, match=r"data\.train_sources: the train data has 1 source\(s\), but the model has 2"
    ):
        Trainer(parse_run_config(missing), tmp_path)
    wrong = np.zeros((80, 3, CHANNELS + 1), np.float16)
    np.save(tmp_path / "wrong.npy", wrong)
    config = config_for(corpus)
    config["data"]["train_features"] = str(tmp_path / "wrong.npy")
    with pytest.raises(
        Exception, match=r"wrong\.npy: 7 channels per region, but the model's feature encoder reads 6"
    ):
        Trainer(parse_run_config(config), tmp_path / "b")


def test_translate_with_a_feature_index_reads_each_sentence_its_indexed_row(corpus, tmp_path):
    """The image path of the adversarial decodes and of cleaned corpora: ``--feature-index`` (1-based
    rows, the .kept format) over a grid in another order. Batched ``translate`` must give every sentence
    the translation of a per-sentence beam search over the row its index names, and differ from the
    translation with the rows in corpus order (the features matter)."""
    train(parse_run_config(config_for(corpus, max_updates=6, save_every=6, valid_every=6)), tmp_path)
    checkpoint = str(tmp_path / "final.pt")
    src, src2 = corpus["valid_src"], corpus["valid_sources"][0]
    lines = len(list(read_lines(src)))
    rng = np.random.default_rng(11)
    grid = (rng.standard_normal((lines + 3, 3, CHANNELS)) * 20 + 10).astype(np.float16)  # spare rows
    np.save(tmp_path / "grid.npy", grid)
    rows = rng.permutation(lines + 3)[:lines]
    write_lines(tmp_path / "index", [str(row + 1) for row in rows])
    hyp = tmp_path / "hyp"
    result = cli(
        "translate", "--checkpoint", checkpoint, "--vocab", corpus["vocab"], "--batch-size", "3",
        "--beam", "2", "--input", src, "--extra-source", src2, "--output", str(hyp),
        "--features", str(tmp_path / "grid.npy"), "--feature-index", str(tmp_path / "index"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    model = load_model(checkpoint).eval()
    vocab = Vocabulary.load(corpus["vocab"])
    hyps = list(read_lines(hyp))
    in_order = []
    for index, (first, second) in enumerate(zip(read_lines(src), read_lines(src2), strict=True)):
        text = [torch.tensor([vocab.encode(first)]), torch.tensor([vocab.encode(second)])]
        for row, out in ((rows[index], None), (index, in_order)):
            inputs = SourceInputs(text, features=torch.from_numpy(grid[row : row + 1].astype(np.float32)))
            ((best, *_),) = beam_search(model, inputs, beam_size=2)
            if out is None:
                assert hyps[index] == vocab.decode(best.tokens), index
            else:
                out.append(vocab.decode(best.tokens))
    assert in_order != hyps
