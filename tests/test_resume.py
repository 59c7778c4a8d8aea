"""A run killed with SIGKILL and re-run ends bit-identical to an uninterrupted run.

Dropout stays on (tiny preset: 0.1 everywhere), so the restored RNG states matter; a second case
also damages the newest checkpoint before resuming, so the run must fall back to the previous one
and still arrive at the same parameters.
"""

from __future__ import annotations

import signal
import subprocess
import time

import pytest
import torch
from training_fixtures import cli_env, make_corpus, run_config, run_train_cli, train_command

from nmtvariants.training.checkpoints import load_checkpoint, sidecar_path

MAX_UPDATES = 40


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def uninterrupted(corpus, tmp_path_factory):
    outdir = tmp_path_factory.mktemp("straight")
    run_train_cli(run_config(corpus, max_updates=MAX_UPDATES), outdir)
    return outdir


def kill_after_checkpoint(config, outdir, update: int) -> None:
    """Start training, SIGKILL it as soon as checkpoint_<update> is complete."""
    sidecar = sidecar_path(outdir / "checkpoints" / f"checkpoint_{update}.pt")
    process = subprocess.Popen(
        train_command(config, outdir), env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 120
    while not sidecar.exists():
        assert process.poll() is None, process.stderr.read().decode()
        assert time.monotonic() < deadline, "no checkpoint appeared"
        time.sleep(0.002)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    assert not (outdir / "final.pt").exists(), "the run finished before it could be killed; raise MAX_UPDATES"


def assert_same_final(a, b):
    first, second = load_checkpoint(a / "final.pt")["model"], load_checkpoint(b / "final.pt")["model"]
    assert first.keys() == second.keys()
    different = [k for k in first if not torch.equal(first[k], second[k])]
    assert not different, different
    last_a = load_checkpoint(a / "checkpoints" / f"checkpoint_{MAX_UPDATES}.pt")
    last_b = load_checkpoint(b / "checkpoints" / f"checkpoint_{MAX_UPDATES}.pt")
    for state_a, state_b in zip(
        last_a["optimizer"]["state"].values(), last_b["optimizer"]["state"].values(), strict=True
    ):
        assert all(torch.equal(state_a[k], state_b[k]) for k in state_a)
    assert last_a["trainer"]["position"] == last_b["trainer"]["position"]


def test_sigkill_and_resume_is_bit_identical(corpus, uninterrupted, tmp_path):
    config = run_config(corpus, max_updates=MAX_UPDATES)
    kill_after_checkpoint(config, tmp_path, 10)
    result = run_train_cli(config, tmp_path)
    assert "resumed from" in result.stderr
    assert_same_final(uninterrupted, tmp_path)


@pytest.mark.slow
def test_resume_falls_back_past_a_corrupt_checkpoint(corpus, uninterrupted, tmp_path):
    config = run_config(corpus, max_updates=MAX_UPDATES)
    kill_after_checkpoint(config, tmp_path, 20)
    newest = max(
        (tmp_path / "checkpoints").glob("checkpoint_[0-9]*.pt"), key=lambda p: int(p.stem.split("_")[1])
    )
    raw = bytearray(newest.read_bytes())
    raw[len(raw) // 3] ^= 0x01
    newest.write_bytes(bytes(raw))
    result = run_train_cli(config, tmp_path)
    assert f"{newest.name}: corrupt or incomplete checkpoint" in result.stderr
    assert "falling back to the previous checkpoint" in result.stderr
    assert_same_final(uninterrupted, tmp_path)
