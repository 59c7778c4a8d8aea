"""Test plug-ins outside the package (NMTV_PLUGINS), end to end through the command line.

For each: ``nmtvariants train`` with the parent stream, SIGKILL after a checkpoint and a re-run that
ends bit-identical to an uninterrupted run (tests/test_resume.py's harness), then ``translate`` and
``score`` with ``--aux parents=FILE``, compared with a per-sentence beam search and a per-sentence
forced decoding in process.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pandas as pd
import pytest
import torch
from plugin_fixtures import AUX_LOSS, PARENT_BIAS, parents_of, use_plugins, with_parents, write_parents
from test_resume import MAX_UPDATES, assert_same_final, kill_after_checkpoint
from training_fixtures import cli_env, make_corpus, run_config, run_train_cli

from nmtvariants.data.vocab import Vocabulary
from nmtvariants.fileio import read_lines, write_lines
from nmtvariants.inference.beam_search import beam_search
from nmtvariants.inference.scorer import token_log_probs
from nmtvariants.models import load_model
from nmtvariants.models.interfaces import SourceInputs
from nmtvariants.models.variants import PLUGIN_PATH_VARIABLE, add_plugin_files

VARIANTS = {
    "parent_bias": {"test_parent_bias": {}},
    "aux_loss": {"test_aux_loss": {"weight": 0.2}, "test_parent_bias": {}},
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    return with_parents(make_corpus(root, pairs=150), root)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nmtvariants", *args],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def one_sentence(vocab: Vocabulary, line: str) -> SourceInputs:
    ids = vocab.encode(line)
    n = len(ids) - 1
    parents = [*parents_of(n), n]  # </s> points to itself
    return SourceInputs([torch.tensor([ids])], {"parents": torch.tensor([parents])})


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_plugin_trains_resumes_translates_and_scores_through_the_cli(corpus, name, tmp_path, monkeypatch):
    use_plugins(monkeypatch, PARENT_BIAS, AUX_LOSS)
    config = run_config(corpus, max_updates=MAX_UPDATES)
    config["variant"] = VARIANTS[name]
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    run_train_cli(config, straight)
    kill_after_checkpoint(config, resumed, 10)
    assert "resumed from" in run_train_cli(config, resumed).stderr
    assert_same_final(straight, resumed)
    log = pd.read_csv(resumed / "train_log.csv")
    if "test_aux_loss" in VARIANTS[name]:
        assert log[log.split == "train"]["aux_enc_l2"].notna().all()
        assert log[log.split == "valid"]["valid_aux_enc_l2"].notna().all()

    test_src, test_tgt = corpus["valid_src"], corpus["valid_tgt"]
    parents = write_parents(test_src, tmp_path / "test.parents")
    model_args = ["--checkpoint", str(resumed / "final.pt"), "--vocab", corpus["vocab"]]
    out = tmp_path / "hyp"
    result = cli("translate", *model_args, "--input", test_src, "--output", str(out), "--beam", "3",
                 "--batch-size", "5", "--aux", f"parents={parents}")  # fmt: skip
    assert result.returncode == 0, result.stderr
    scores = tmp_path / "scores"
    result = cli("score", *model_args, "--source", test_src, "--target", test_tgt, "--output", str(scores),
                 "--per-token", "--batch-size", "5", "--aux", f"parents={parents}")  # fmt: skip
    assert result.returncode == 0, result.stderr

    model = load_model(resumed / "final.pt").eval()
    vocab = Vocabulary.load(corpus["vocab"])
    hyps = list(read_lines(out))
    per_token = [[float(v) for v in line.split()] for line in read_lines(scores)]
    sources, targets = list(read_lines(test_src)), list(read_lines(test_tgt))
    assert len(hyps) == len(per_token) == len(sources)
    for index, (src, tgt) in enumerate(zip(sources, targets, strict=True)):
        inputs = one_sentence(vocab, src)
        ((best, *_),) = beam_search(model, inputs, beam_size=3)
        assert hyps[index] == vocab.decode(best.tokens), index
        logp = token_log_probs(model, inputs, torch.tensor([vocab.encode(tgt)]))[0]
        torch.testing.assert_close(torch.tensor(per_token[index]), -logp, rtol=1e-4, atol=1e-4)

    # without its stream the model refuses, with a one-line error
    result = cli("score", *model_args, "--source", test_src, "--target", test_tgt, "--output", str(scores))
    assert result.returncode == 2 and "needs the integer stream 'parents'" in result.stderr
    assert "Traceback" not in result.stderr


def test_translate_checks_streams_and_knows_the_trained_label_streams(corpus, tmp_path, monkeypatch):
    use_plugins(monkeypatch, PARENT_BIAS)
    labels = {}
    for split in ("train", "valid"):  # label 7 everywhere: out of range for short sentences as a position
        labels[split] = tmp_path / f"{split}.labels"
        write_lines(
            labels[split], [" ".join(["7"] * len(x.split())) for x in read_lines(corpus[f"{split}_src"])]
        )
    config = run_config(corpus, max_updates=1, save_every=1)
    config["data"]["aux_labels"] = {"labels": 8}
    for split in ("train", "valid"):
        config["data"][f"{split}_aux"] = {**corpus[f"{split}_aux"], "labels": str(labels[split])}
    config["variant"] = VARIANTS["parent_bias"]
    run_train_cli(config, tmp_path / "run")
    checkpoint, output = str(tmp_path / "run" / "final.pt"), str(tmp_path / "h")
    command = [
        "translate",
        "--checkpoint",
        checkpoint,
        "--vocab",
        corpus["vocab"],
        "--input",
        corpus["valid_src"],
    ]
    command += ["--output", output, "--aux", f"labels={labels['valid']}"]
    result = cli(*command, "--aux", f"parents={corpus['valid_aux']['parents']}")
    assert result.returncode == 0, result.stderr  # labels < 8 accepted: the checkpoint names the label stream

    bad = tmp_path / "bad.parents"
    lines = list(read_lines(corpus["valid_aux"]["parents"]))
    lines[2] = lines[2] + " 0"
    write_lines(bad, lines)
    result = cli(*command, "--aux", f"parents={bad}")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    n = len(list(read_lines(corpus["valid_src"]))[2].split())
    assert f"bad.parents:3: stream 'parents' has {n + 1} values but" in result.stderr
    assert f"valid.src:3 has {n} BPE tokens" in result.stderr


def test_the_workflows_extensions_join_the_plugin_path(tmp_path, monkeypatch):
    """The Snakefile's add_plugin_files: absolute paths (a job may start elsewhere), after the
    user's own NMTV_PLUGINS, each once."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(PLUGIN_PATH_VARIABLE, str(PARENT_BIAS))
    add_plugin_files(["study/plugin.py", PARENT_BIAS, "study/plugin.py"])
    expected = [str(PARENT_BIAS), str((tmp_path / "study" / "plugin.py").resolve())]
    assert os.environ[PLUGIN_PATH_VARIABLE].split(os.pathsep) == expected
