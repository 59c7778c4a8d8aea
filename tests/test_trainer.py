"""The training loop: config validation, learning, delayed updates vs one big batch, AMP, early stop."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch
from training_fixtures import make_corpus, run_config

from nmtvariants.data.batching import BatchStream, UpdateStream, collate
from nmtvariants.errors import ConfigError
from nmtvariants.models import load_model
from nmtvariants.training.build import build_schedule
from nmtvariants.training.checkpoints import load_checkpoint
from nmtvariants.training.loss import label_smoothed_nll
from nmtvariants.training.train_config import parse_run_config
from nmtvariants.training.trainer import Trainer, resolve_threads, train


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(autouse=True)
def keep_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c["train"].update(warmpu=3), r"train\.warmpu: unknown key"),
        (lambda c: c["train"].update(max_updates="10"), r"train\.max_updates: expected int"),
        (lambda c: c["train"].update(amp="fp8"), r"train\.amp: must be one of"),
        (lambda c: c["train"].update(update_freq=2, effective_batch_tokens=100), r"train\.update_freq"),
        (lambda c: c["data"].pop("vocab"), r"data\.vocab: required"),
        (lambda c: c.update(trian={}), r"trian: unknown top-level key"),
        (lambda c: c["train"].update(batch_tokens=0), r"train\.batch_tokens: must be >= 1"),
        (lambda c: c["train"].update(lr_cooldown={"start": 0.9, "end": 0.5}), r"train\.lr_cooldown: needs"),
        (lambda c: c["train"].update(lr_cooldown={"end": 0.5}), r"train\.lr_cooldown: give \{start"),
    ],
)
def test_config_errors_name_the_key(corpus, edit, message):
    config = run_config(corpus)
    edit(config)
    with pytest.raises(ConfigError, match=message):
        parse_run_config(config)


def test_variant_warmup_overrides_train_warmup(corpus):
    config = run_config(corpus, warmup=10)
    config["variant"] = {"warmup": 6000}
    parsed = parse_run_config(config)
    assert parsed.train.warmup == 6000 and "warmup" not in parsed.variant


def test_cooldown_from_the_run_config(corpus):
    config = parse_run_config(run_config(corpus, max_updates=40, warmup=10, lr_cooldown={"start": 0.75}))
    schedule = build_schedule(config.train, 32)
    assert (schedule.cooldown.start, schedule.cooldown.end) == (30, 40)
    assert schedule(35) == pytest.approx(schedule(30) * 0.5 * (30 / 35) ** 0.5, rel=1e-12)
    assert schedule(40) == 0.0


def test_training_learns_and_writes_its_outputs(corpus, tmp_path):
    result = train(parse_run_config(run_config(corpus, max_updates=40, valid_every=20)), tmp_path)
    assert result.update == 40 and result.stop_reason == "max_updates"
    log = pd.read_csv(tmp_path / "train_log.csv")
    losses = log[log.split == "train"].loss.tolist()
    assert losses[-1] < losses[0] - 0.5
    valid = log[log.split == "valid"]
    assert valid["update"].tolist() == [20, 40] and valid.valid_nll.iloc[1] < valid.valid_nll.iloc[0]
    model = load_model(tmp_path / "final.pt")
    state = load_checkpoint(tmp_path / "checkpoints" / "checkpoint_40.pt")
    assert all(torch.equal(model.state_dict()[k], v) for k, v in state["model"].items())
    assert sorted(p.name for p in (tmp_path / "checkpoints").glob("checkpoint_*.pt")) == [
        "checkpoint_30.pt",
        "checkpoint_35.pt",
        "checkpoint_40.pt",
        "checkpoint_best.pt",
    ]


def test_delayed_update_equals_one_big_batch(corpus, tmp_path):
    """update_freq=3: the accumulated, token-normalised gradient that reaches Adam equals the gradient
    of the three batches concatenated into one (computed here independently)."""
    no_dropout = {"embedding_dropout": 0, "residual_dropout": 0, "attention_dropout": 0, "relu_dropout": 0}
    config = parse_run_config(run_config(corpus, no_dropout, update_freq=3, label_smoothing=0.1))
    trainer = Trainer(config, tmp_path)
    reference = copy.deepcopy(trainer.model)
    seen = {}

    def grab(optimizer, args, kwargs):
        seen.update({n: p.grad.clone() for n, p in trainer.model.named_parameters()})

    trainer.optimizer.register_step_pre_hook(grab)
    stream = UpdateStream(BatchStream(trainer.train_data, 200, config.train.seed, 40), update_freq=3)
    group = stream.next_update()
    assert len(group) == 3
    trainer._train_update(group)
    assert trainer.optimizer.param_groups[0]["lr"] == trainer.schedule(1)

    big = collate(trainer.train_data, np.concatenate(group))
    logits = reference(big.src, big.tgt_in)
    loss, _ = label_smoothed_nll(logits, big.tgt_out, 0.1)
    (loss / big.num_tokens).backward()
    for name, param in reference.named_parameters():
        torch.testing.assert_close(seen[name], param.grad, rtol=1e-4, atol=1e-7, msg=name)


@pytest.mark.parametrize("amp", ["bf16", "fp16"])
def test_autocast_on_cpu_trains(corpus, tmp_path, amp):
    result = train(parse_run_config(run_config(corpus, max_updates=30, amp=amp, valid_every=30)), tmp_path)
    log = pd.read_csv(tmp_path / "train_log.csv")
    losses = log[log.split == "train"].loss.tolist()
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
    state = load_checkpoint(tmp_path / "checkpoints" / f"checkpoint_{result.update}.pt")
    assert (state["scaler"] is not None) == (amp == "fp16")  # GradScaler only for fp16
    assert state["model"]["decoder_norm.weight"].dtype == torch.float32  # master weights stay fp32


def test_early_stopping_on_a_bleu_hook(corpus, tmp_path):
    calls = []

    def fake_bleu(model, update):
        assert not model.training
        calls.append(update)
        return {"bleu": 30.0 if update == 5 else 10.0}

    config = parse_run_config(run_config(corpus, max_updates=100, valid_every=5, patience=2))
    config.train.early_stop_metric = "bleu"  # Python API only: configs reject it (no hook is wired)
    result = Trainer(config, tmp_path, validation_hook=fake_bleu).train()
    assert result.stop_reason == "early_stop" and result.update == 15 and calls == [5, 10, 15]
    assert result.best == 30.0
    best = load_checkpoint(tmp_path / "checkpoints" / "checkpoint_best.pt")
    assert best["update"] == 5
    rerun = Trainer(config, tmp_path, validation_hook=fake_bleu).train()  # stays stopped
    assert rerun.update == 15 and calls == [5, 10, 15]


def test_rerun_resumes_and_extends(corpus, tmp_path):
    train(parse_run_config(run_config(corpus, max_updates=10)), tmp_path)
    trainer = Trainer(parse_run_config(run_config(corpus, max_updates=20)), tmp_path)
    assert trainer.resumed_from.name == "checkpoint_10.pt" and trainer.state.update == 10
    trainer.train()
    log = pd.read_csv(tmp_path / "train_log.csv")
    assert log[log.split == "train"]["update"].tolist() == [5, 10, 15, 20]


def test_threads_from_config_or_environment(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert resolve_threads(None) == 1 and torch.get_num_threads() == 1
    assert resolve_threads(2) == 2 and torch.get_num_threads() == 2


def test_changed_settings_train_from_scratch_and_keep_the_old_checkpoints(corpus, tmp_path):
    """Snakemake re-runs a training job when its params change: the old checkpoints must not be
    resumed (that would mix two experiments) but are kept, renamed."""
    train(parse_run_config(run_config(corpus, max_updates=10)), tmp_path)
    trainer = Trainer(parse_run_config(run_config(corpus, max_updates=10, warmup=4)), tmp_path)
    assert trainer.resumed_from is None and trainer.state.update == 0
    stale = list(tmp_path.glob("checkpoints.stale-*"))
    assert len(stale) == 1 and (stale[0] / "checkpoint_10.pt").exists()
    assert not (tmp_path / "checkpoints").exists()


def test_changed_data_contents_train_from_scratch(tmp_path):
    """A re-run triggered by new contents at the same paths (a fixed preprocessing stage) must not
    resume from checkpoints trained on the old text; the same contents resume."""
    data = make_corpus(tmp_path / "data")
    train(parse_run_config(run_config(data, max_updates=10)), tmp_path / "run")
    same = Trainer(parse_run_config(run_config(data, max_updates=20)), tmp_path / "run")
    assert same.resumed_from is not None and same.state.update == 10
    lines = (tmp_path / "data" / "train.tgt").read_text(encoding="utf-8").splitlines()
    (tmp_path / "data" / "train.tgt").write_text("\n".join(lines[::-1]) + "\n", encoding="utf-8")
    changed = Trainer(parse_run_config(run_config(data, max_updates=20)), tmp_path / "run")
    assert changed.resumed_from is None and changed.state.update == 0
    assert len(list((tmp_path / "run").glob("checkpoints.stale-*"))) == 1


def test_checkpoints_without_digests_are_set_aside_when_the_vocabulary_changed(tmp_path):
    """Checkpoints written before data digests existed still carry their vocabulary."""
    data = make_corpus(tmp_path / "data")
    train(parse_run_config(run_config(data, max_updates=10)), tmp_path / "run")
    from nmtvariants.training.checkpoints import save_checkpoint

    for path in (tmp_path / "run" / "checkpoints").glob("checkpoint_*.pt"):
        state = torch.load(path, weights_only=False)
        state.pop("data_digest", None)
        save_checkpoint(state, path)  # with a valid sha256 sidecar
    same = Trainer(parse_run_config(run_config(data, max_updates=20)), tmp_path / "run")
    assert same.resumed_from is not None and same.state.update == 10
    vocab = tmp_path / "data" / "vocab.txt"
    vocab.write_text(vocab.read_text(encoding="utf-8") + "extra 1\n", encoding="utf-8")
    trainer = Trainer(parse_run_config(run_config(data, max_updates=20)), tmp_path / "run")
    assert trainer.resumed_from is None and trainer.state.update == 0


def test_data_digest_names_every_file_and_follows_contents(tmp_path):
    import hashlib

    from nmtvariants.training.data_digest import data_digest, digest_conflicts

    data = make_corpus(tmp_path / "data")
    (tmp_path / "parents").write_text("0 0\n", encoding="utf-8")
    settings = parse_run_config(
        run_config({**data, "train_aux": {"parents": str(tmp_path / "parents")}})
    ).data
    digest = data_digest(settings)
    assert set(digest) == {"train_src", "train_tgt", "valid_src", "valid_tgt", "vocab", "train_aux.parents"}
    assert digest["train_aux.parents"] == hashlib.sha256(b"0 0\n").hexdigest()
    assert digest_conflicts(None, digest) == []  # checkpoints from before digests
    assert digest_conflicts({**digest, "vocab": "0"}, digest) == ["data.vocab: contents changed"]


def test_resumable_changes_keep_resuming(corpus, tmp_path):
    from nmtvariants.training.train_config import resume_conflicts

    base = run_config(corpus, max_updates=10)
    longer = run_config(corpus, max_updates=30, save_every=10, patience=2, max_minutes=5.0)
    assert resume_conflicts(base, longer) == []
    assert resume_conflicts(base, run_config(corpus, lr_peak=1e-3)) == ["train.lr_peak: 0.003 -> 0.001"]
    assert resume_conflicts(base, run_config(corpus, model={"d_ff": 32})) == ["model.d_ff: 64 -> 32"]


def test_max_minutes_stops_training_and_saves(corpus, tmp_path):
    result = train(parse_run_config(run_config(corpus, max_updates=1000, max_minutes=0.0)), tmp_path)
    assert result.stop_reason == "max_minutes"
    assert result.update == 1
    assert (tmp_path / "final.pt").exists()
    assert load_checkpoint(tmp_path / "checkpoints" / "checkpoint_1.pt")["update"] == 1


def test_cli_writes_a_run_summary_with_the_hardware(corpus, tmp_path):
    import json

    from nmtvariants.cli import main

    config = json.dumps(run_config(corpus, max_updates=5))
    assert main(["train", "--config-json", config, "--outdir", str(tmp_path), "--no-progress"]) == 0
    summary = json.loads((tmp_path / "run.json").read_text())
    assert summary["updates"] == 5 and summary["stop_reason"] == "max_updates"
    assert summary["hardware"]["torch"] == torch.__version__
