"""Checkpoint integrity, fallback to the previous one, pruning, and averaging vs a naive mean."""

from __future__ import annotations

import logging
import subprocess

import pytest
import torch

from nmtvariants.cli import main
from nmtvariants.errors import InputError
from nmtvariants.models import build_model, load_model, model_config
from nmtvariants.training.checkpoints import (
    average_checkpoints,
    average_state_dicts,
    checkpoint_path,
    last_checkpoints,
    latest_valid_checkpoint,
    list_checkpoints,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
    sidecar_path,
    verify_checkpoint,
)


def model_state(seed: int) -> dict:
    torch.manual_seed(seed)
    cfg = model_config("tiny", overrides={"d_model": 16, "n_heads": 2, "d_ff": 32})
    model = build_model(cfg, vocab_size=20)
    return {"model_config": cfg.to_dict(), "vocab_size": 20, "model": model.state_dict(), "update": seed}


def write_series(directory, updates):
    for update in updates:
        save_checkpoint(model_state(update), checkpoint_path(directory, update))


def test_sidecar_is_sha256sum_compatible(tmp_path):
    path = save_checkpoint(model_state(1), tmp_path / "checkpoint_1.pt")
    assert verify_checkpoint(path) is None
    result = subprocess.run(
        ["sha256sum", "-c", sidecar_path(path).name], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 0 and "OK" in result.stdout


def test_round_trip_is_exact(tmp_path):
    state = model_state(3)
    loaded = load_checkpoint(save_checkpoint(state, tmp_path / "c.pt"))
    assert loaded["model"].keys() == state["model"].keys()
    assert all(torch.equal(loaded["model"][k], v) for k, v in state["model"].items())


@pytest.mark.parametrize("damage", ["flip", "truncate", "no_sidecar"])
def test_damaged_latest_falls_back_with_warning(tmp_path, caplog, damage):
    write_series(tmp_path, [10, 20, 30])
    newest = checkpoint_path(tmp_path, 30)
    if damage == "flip":
        raw = bytearray(newest.read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        newest.write_bytes(bytes(raw))
    elif damage == "truncate":
        newest.write_bytes(newest.read_bytes()[:1000])
    else:  # killed between writing the checkpoint and its sidecar
        sidecar_path(newest).unlink()
    assert verify_checkpoint(newest) is not None
    with caplog.at_level(logging.WARNING):
        path, state = latest_valid_checkpoint(tmp_path)
    assert path == checkpoint_path(tmp_path, 20) and state["update"] == 20
    assert "checkpoint_30.pt" in caplog.text and "falling back" in caplog.text
    with pytest.raises(InputError, match=r"checkpoint_30\.pt"):
        load_checkpoint(newest)


def test_no_checkpoint_means_fresh_start(tmp_path):
    assert latest_valid_checkpoint(tmp_path / "absent") is None


def test_prune_keeps_the_newest(tmp_path):
    write_series(tmp_path, [5, 10, 15, 20, 100])
    prune_checkpoints(tmp_path, 2)
    assert [u for u, _ in list_checkpoints(tmp_path)] == [20, 100]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "checkpoint_100.pt",
        "checkpoint_100.pt.sha256",
        "checkpoint_20.pt",
        "checkpoint_20.pt.sha256",
    ]


def test_last_checkpoints_orders_numerically_and_skips_bad(tmp_path):
    write_series(tmp_path, [9, 10, 100, 20])
    sidecar_path(checkpoint_path(tmp_path, 100)).unlink()
    assert [p.name for p in last_checkpoints(tmp_path, 2)] == ["checkpoint_10.pt", "checkpoint_20.pt"]


def test_average_matches_naive_elementwise_mean(tmp_path):
    write_series(tmp_path, [1, 2, 3])
    paths = [checkpoint_path(tmp_path, u) for u in (1, 2, 3)]
    average_checkpoints(paths, tmp_path / "avg.pt")
    averaged = load_checkpoint(tmp_path / "avg.pt")["model"]
    states = [model_state(u)["model"] for u in (1, 2, 3)]
    for key, value in averaged.items():
        naive = [sum(float(s[key].reshape(-1)[i]) for s in states) / 3 for i in range(value.numel())]
        assert torch.allclose(
            value.reshape(-1).double(), torch.tensor(naive, dtype=torch.float64), rtol=1e-6, atol=1e-7
        ), key
    # the result is a model file that load_model reads
    model = load_model(tmp_path / "avg.pt")
    assert torch.equal(model.state_dict()["encoder_norm.weight"], averaged["encoder_norm.weight"])


def test_average_keeps_dtype_and_non_float_from_last():
    states = [{"w": torch.tensor([1.0, 2.0], dtype=torch.float16), "n": torch.tensor([i])} for i in range(4)]
    result = average_state_dicts(states)
    assert result["w"].dtype == torch.float16 and result["w"].tolist() == [1.0, 2.0]
    assert result["n"].tolist() == [3]


def test_average_cli_with_dir_and_last(tmp_path):
    write_series(tmp_path / "ck", [10, 20, 30, 40])
    assert (
        main(["average", "--dir", str(tmp_path / "ck"), "--last", "2", "--output", str(tmp_path / "a.pt")])
        == 0
    )
    result = load_checkpoint(tmp_path / "a.pt")
    assert [p.rsplit("/", 1)[-1] for p in result["averaged_from"]] == ["checkpoint_30.pt", "checkpoint_40.pt"]
    assert "optimizer" not in result


def test_average_cli_reports_missing_dir(tmp_path, capsys):
    assert main(["average", "--dir", str(tmp_path / "nope"), "--output", str(tmp_path / "a.pt")]) == 2
    assert "no such checkpoint directory" in capsys.readouterr().err


def test_inference_rejects_a_model_file_whose_digest_does_not_match(tmp_path, capsys):
    """Decoding goes through the same verified loader as resuming: a flipped bit in final.pt must not
    translate the test set with damaged weights."""
    path = save_checkpoint(model_state(1), tmp_path / "final.pt")
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(InputError, match="sha256 mismatch"):
        load_model(path)
    (tmp_path / "in.txt").write_text("a b\n", encoding="utf-8")
    argv = ["translate", "--checkpoint", str(path), "--vocab", str(tmp_path / "vocab.txt")]
    assert main([*argv, "--input", str(tmp_path / "in.txt"), "--output", str(tmp_path / "out.txt")]) == 2
    assert "sha256 mismatch" in capsys.readouterr().err and not (tmp_path / "out.txt").exists()


def test_inference_reads_a_model_file_without_sidecar(tmp_path):
    """A model file saved by other code (plain ``torch.save``, no sidecar) still decodes: it cannot be
    checked, and ``atomic_write`` already rules out a half-written file of ours."""
    state = model_state(2)
    torch.save(state, tmp_path / "plain.pt")
    model = load_model(tmp_path / "plain.pt")
    assert torch.equal(model.state_dict()["encoder_norm.weight"], state["model"]["encoder_norm.weight"])
