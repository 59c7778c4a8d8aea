"""Data-parallel training (torchrun, gloo, 2 CPU processes) equals one process with the same batches.

Two ranks with one batch each see exactly the batches that one process with ``update_freq=2``
accumulates, and the gradient is normalised by the tokens of the whole update, so the parameters
must agree to float tolerance (summation order differs, so not bit for bit). Dropout is off:
each rank draws its own dropout masks by design.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
import torch
from training_fixtures import cli_env, make_corpus, run_config, run_train_cli

from nmtvariants.training.checkpoints import load_checkpoint

NO_DROPOUT = {"embedding_dropout": 0, "residual_dropout": 0, "attention_dropout": 0, "relu_dropout": 0}


def torchrun(config, outdir):
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "nmtvariants",
        "train",
        "--config-json",
        json.dumps(config),
        "--outdir",
        str(outdir),
    ]
    env = cli_env()
    env["GLOO_SOCKET_IFNAME"] = "lo"
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.mark.parametrize(
    "batching", [{"update_freq": 2}, pytest.param({"effective_batch_tokens": 600}, marks=pytest.mark.slow)]
)
def test_two_gloo_ranks_match_one_process(tmp_path, batching):
    corpus = make_corpus(tmp_path / "corpus")
    common = dict(max_updates=8, save_every=4, valid_every=4, log_every=4)
    single_batching = batching
    ddp_batching = {"update_freq": 1} if "update_freq" in batching else batching
    run_train_cli(run_config(corpus, NO_DROPOUT, **common, **single_batching), tmp_path / "one")
    torchrun(run_config(corpus, NO_DROPOUT, **common, **ddp_batching), tmp_path / "two")

    one = load_checkpoint(tmp_path / "one" / "final.pt")["model"]
    two = load_checkpoint(tmp_path / "two" / "final.pt")["model"]
    for key in one:
        torch.testing.assert_close(two[key], one[key], rtol=1e-4, atol=2e-5, msg=key)
    moved = load_checkpoint(tmp_path / "one" / "checkpoints" / "checkpoint_4.pt")["model"]
    assert any(not torch.allclose(moved[k], one[k]) for k in one)  # training did change the weights

    log_one = pd.read_csv(tmp_path / "one" / "train_log.csv")
    log_two = pd.read_csv(tmp_path / "two" / "train_log.csv")
    # the same tokens per update, and the same (all-reduced) train and validation losses
    assert log_one["tokens"].dropna().tolist() == log_two["tokens"].dropna().tolist()
    for column in ("loss", "valid_nll"):
        a, b = log_one[column].dropna().tolist(), log_two[column].dropna().tolist()
        assert len(a) == len(b) > 0 and all(abs(x - y) < 1e-4 for x, y in zip(a, b, strict=True))
    # both ranks restore their own RNG streams on resume: the checkpoint holds two of them
    assert len(load_checkpoint(tmp_path / "two" / "checkpoints" / "checkpoint_8.pt")["rng"]) == 2
